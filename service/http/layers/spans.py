"""An OpenTelemetry server span around each request, when tracing is on
(``runtime/tracing.py``); the operations' stages nest under it. Off, this layer is not
in the stack at all."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ...runtime.tracing import Tracing
from .answers import RECORD


class Spans:
    def __init__(self, app: ASGIApp, *, tracing: Tracing) -> None:
        self.app = app
        self._tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with self._tracing.request(scope[RECORD]):
            await self.app(scope, receive, send)
