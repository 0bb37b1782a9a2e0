"""Deadlines for a request's head and body, so a client that trickles cannot hold a
connection (and a file descriptor) open forever.

uvicorn times out idle keep-alive connections, but nothing bounds a request in flight:
1,500 connections trickling a header byte every few seconds, or a body that never ends,
all stayed open, and the file-descriptor limit was the only bound (issue 33). Here each
connection gets two deadlines, counted from when the request's first byte arrives (or
the connection opens):

* ``header_timeout``: the request line and headers must be complete by then;
* ``body_timeout``: the body must be complete that long after the headers. A streamed
  body (``POST /decode/stream``, NDJSON: a model's tokens as it generates them) may take
  as long as it needs, but no more than that between two of its chunks.

A request that misses one is answered ``408 Request Timeout`` (when no response has
started) and the connection is closed. A WebSocket upgrade leaves both behind (the
stream's own protocol takes the connection over). Both are settings
(``TOKSERVE_HEADER_TIMEOUT``, ``TOKSERVE_BODY_TIMEOUT``; docs/SERVICE.md).

The protocol is uvicorn's httptools protocol through ``OneWriteProtocol``; the hooks used
here (``connection_made``, ``on_message_begin``, ``on_headers_complete``, ``on_body``,
``on_message_complete``, ``connection_lost``, ``handle_websocket_upgrade``) are checked
against the installed uvicorn in ``tests/service/test_uvicorn_internals.py``.
"""

from __future__ import annotations

import asyncio
import logging

from .one_write import OneWriteProtocol

_LOG = logging.getLogger("tokserve")

#: Paths whose request body is a stream (NDJSON in, NDJSON out).
STREAMED_BODIES = frozenset({"/decode/stream"})

_TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                     b"connection: close\r\ncontent-length: %d\r\n\r\n%s")


_IDLE, _HEAD, _BODY = None, "headers", "body"


class DeadlineProtocol(OneWriteProtocol):
    """``OneWriteProtocol`` whose requests must arrive within the deadlines above
    (class attributes: ``protocol_with_deadlines`` makes the subclass a server runs).

    One timer per connection, not per request: a request only notes which part it is
    in and since when (two attribute writes and a clock read on the hot path; creating
    and cancelling two timers per request cost measurably more). When the timer fires it
    closes a connection whose part is overdue, else sets itself for when the part in
    progress would be, or, between requests, for a header timeout from now.
    """

    header_timeout: float = 10.0
    body_timeout: float = 30.0

    _timer: asyncio.TimerHandle | None = None
    _part: str | None = _IDLE  # what is arriving: the head, the body, or nothing
    _since = 0.0  # loop time the part began (for a streamed body: its last chunk)
    _streamed = False  # the body is a stream: its deadline restarts with each chunk

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._part, self._since = _HEAD, self.loop.time()  # a silent client counts too
        self._wake_in(self.header_timeout or self.body_timeout)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._part, self._since = _HEAD, self.loop.time()

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if self.parser.should_upgrade():
            self._stop()
            return
        self._streamed = self.scope.get("path") in STREAMED_BODIES
        self._part, self._since = _BODY, self.loop.time()

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if self._streamed:
            self._since = self.loop.time()

    def on_message_complete(self) -> None:
        self._part = _IDLE
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._stop()
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _limit(self, part: str | None) -> float:
        return self.header_timeout if part is _HEAD else self.body_timeout

    def _wake_in(self, seconds: float) -> None:
        if seconds > 0:
            self._timer = self.loop.call_later(seconds, self._check)

    def _stop(self) -> None:
        self._part = _IDLE
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        part = self._part
        if part is _IDLE:  # between requests (keep-alive's business): look again later
            self._wake_in(self.header_timeout or self.body_timeout)
            return
        limit = self._limit(part)
        if limit <= 0:  # this part has no deadline: look again when the other might
            self._wake_in(self.header_timeout or self.body_timeout)
            return
        left = self._since + limit - self.loop.time()
        if left > 0:
            self._wake_in(left)
            return
        self._expired(part, limit)

    def _expired(self, part: str, seconds: float) -> None:
        cycle = self.cycle
        if cycle is None or not cycle.response_started:
            body = (b'{"error":{"code":"request_timeout","message":"the request\'s %s did '
                    b'not arrive within %gs"}}' % (part.encode(), seconds))
            self.transport.write(_TIMEOUT_RESPONSE % (len(body), body))
        client = "%s:%d" % self.client if self.client else "?"
        _LOG.warning("closed a connection from %s: its request %s took over %gs",
                     client, part, seconds)
        self.transport.close()


def protocol_with_deadlines(header_timeout: float, body_timeout: float
                            ) -> type[DeadlineProtocol]:
    """The protocol class a server runs, with these deadlines (seconds; 0: none)."""
    return type("ServerProtocol", (DeadlineProtocol,),
                {"header_timeout": header_timeout, "body_timeout": body_timeout})
