"""What one request leaves behind for operators, and when it is handed over.

The ``Recording`` layer (``http/layers/recording.py``) makes a ``RequestRecord`` for
every HTTP request (request id, method,
route template, status, duration, bytes in and out) and the operation fills in the
tokenizer and the tokens it counted (``Metrics.count_tokens`` writes into the record of
the request being served, found through ``current``; a worker thread sees it too,
because anyio copies the context into the threads it runs work on).

Finished records are not written to the metrics files and the log one by one: they are
queued and handed to the sinks (metrics, access log) once per event-loop turn, by one
``loop.call_soon`` callback. Under load one turn finishes several requests, so a
multiprocess counter (an mmap'd file value: about 1 µs per update against 0.3 µs for an
in-memory one) and the log's ``write`` are paid once per turn, not once per request.
The callback runs right after the turn that sent the responses, before the loop reads
any new request, so a scrape of any worker sees every request whose answer its worker
has written and moved past (microseconds later).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextvars import ContextVar

log = logging.getLogger("tokserve.telemetry")


class RequestRecord:
    """One request, as the metrics and the access log see it. Never request content:
    the route is the template (``/tokenizers/{name}``), not the path the caller sent."""

    __slots__ = ("request_id", "method", "route", "status", "started", "duration",
                 "bytes_in", "bytes_out", "tokenizer", "tokens", "tokens_endpoint")

    def __init__(self, request_id: str, method: str, started: float) -> None:
        self.request_id = request_id
        self.method = method
        self.started = started  # time.perf_counter() at arrival
        self.route = "unmatched"
        self.status = 500
        self.duration = 0.0  # seconds, until the response was sent
        self.bytes_in = 0
        self.bytes_out = 0
        self.tokenizer: str | None = None  # name@version that served it
        self.tokens: int | None = None  # tokens counted (billing), when the operation counts
        self.tokens_endpoint: str | None = None  # the billing counter's endpoint label


#: The record of the request this task (or the worker thread running its work) serves.
current: ContextVar[RequestRecord | None] = ContextVar("tokserve_request", default=None)

Sink = Callable[[list[RequestRecord]], None]


class Telemetry:
    """Queues finished records and hands each batch to every sink once per loop turn."""

    def __init__(self, sinks: list[Sink]) -> None:
        self.sinks = sinks
        self._pending: list[RequestRecord] = []
        self._scheduled = False

    def finish(self, record: RequestRecord) -> None:
        """Queue ``record`` (on the event loop's thread); the batch goes out at the end
        of this loop turn."""
        self._pending.append(record)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Hand the queued records to the sinks now (also called before a scrape)."""
        self._scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        for sink in self.sinks:
            try:
                sink(batch)
            except Exception:  # a sink's bug must not take requests down with it
                log.exception("telemetry sink %r failed on %d record(s)", sink, len(batch))
