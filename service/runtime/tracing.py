"""OpenTelemetry spans for each request and its stages (optional).

    pip install "tokserve[otel]"          # opentelemetry-api and -sdk
    TOKSERVE_OTEL=1 tokserve serve        # or --otel

Off by default, and then tokserve imports nothing of OpenTelemetry and the app's layer
stack has no span layer (``http/layers/spans.py``), so requests pay nothing for it
(tests/service/test_tracing.py watches every import statement in a fresh interpreter).
FastAPI 0.165 and newer import the OpenTelemetry API themselves (a dependency of
theirs), but the hot routes never reach FastAPI, so its own instrumentation does not
cover them. On, every request gets a server span named ``"<METHOD> <route template>"``
with the request id, status, tokenizer and tokens counted as attributes, and the
operations' stages nest under it: ``parse`` (the body into its request model) and
``encode`` / ``decode`` / ``render`` (the work on the engine or the chat template, in a
worker thread or inline). The spans go to whatever tracer provider the process has:
configure one with the OpenTelemetry SDK's environment variables under
``opentelemetry-instrument``, or in code before the app starts; with none, the API's
default makes them no-ops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .state import ServiceState
from .telemetry import RequestRecord, current

log = logging.getLogger("tokserve.tracing")
T = TypeVar("T")

#: The work each operation runs through ``ServiceState.run``, as a stage name. Chat
#: renders are always sent to a thread with this size (handlers._ALWAYS_OFFLOAD).
_STAGES = {"/encode": "encode", "/count": "encode", "/decode": "decode",
           "/render_chat": "render"}
_RENDER_SIZE = 1 << 62


def load(enabled: bool) -> Tracing | None:
    """The tracing of an app, or None when off or when OpenTelemetry is not installed."""
    if not enabled:
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        log.warning("TOKSERVE_OTEL is set but OpenTelemetry is not installed; "
                    "pip install 'tokserve[otel]'. Serving without spans")
        return None
    from ... import __version__

    return Tracing(trace, trace.get_tracer("tokserve", __version__))


class Tracing:
    def __init__(self, trace: Any, tracer: Any) -> None:
        self.trace = trace
        self.tracer = tracer

    @contextmanager
    def request(self, record: RequestRecord) -> Iterator[None]:
        """The request's server span, current for the stages; named and annotated from
        ``record`` once the request is done."""
        with self.tracer.start_as_current_span(
                record.method, kind=self.trace.SpanKind.SERVER) as span:
            try:
                yield
            finally:
                span.update_name(f"{record.method} {record.route}")
                span.set_attribute("http.request.method", record.method)
                span.set_attribute("http.route", record.route)
                span.set_attribute("http.response.status_code", record.status)
                span.set_attribute("tokserve.request_id", record.request_id)
                if record.tokenizer is not None:
                    span.set_attribute("tokserve.tokenizer", record.tokenizer)
                if record.tokens is not None:
                    span.set_attribute("tokserve.tokens", record.tokens)
                if record.status >= 500:
                    span.set_status(self.trace.Status(self.trace.StatusCode.ERROR))

    def stage(self, name: str) -> Any:
        return self.tracer.start_as_current_span(name)

    def state_class(self) -> type[ServiceState]:
        """``ServiceState`` whose ``parse`` and ``run`` are spans of their own."""
        tracing = self

        class TracedServiceState(ServiceState):
            async def parse(self, raw: bytes, model: Any, unknown: str = "refuse") -> Any:
                with tracing.stage("parse") as span:
                    span.set_attribute("tokserve.body_bytes", len(raw))
                    return await super().parse(raw, model, unknown)

            async def run(self, work: Callable[[], T], size: int) -> T:
                record = current.get()
                route = record.route if record is not None else ""
                name = "render" if size >= _RENDER_SIZE else _STAGES.get(route, "run")
                with tracing.stage(name) as span:
                    span.set_attribute("tokserve.offloaded",
                                       size >= self.settings.thread_offload_chars)
                    return await super().run(work, size)

        return TracedServiceState
