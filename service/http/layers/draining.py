"""While the server drains (SIGTERM, ``runtime/lifecycle.py``), every answer carries
``Connection: close``, so clients and proxies open their next connection elsewhere.
Requests are still served. Until then this layer is one attribute test."""

from __future__ import annotations

from collections.abc import Awaitable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...runtime.lifecycle import Lifecycle

_CLOSE = (b"connection", b"close")


class Draining:
    def __init__(self, app: ASGIApp, *, lifecycle: Lifecycle) -> None:
        self.app = app
        self._lifecycle = lifecycle

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if not self._lifecycle.draining:
            return self.app(scope, receive, send)
        return self.app(scope, receive, _closing(send))


def _closing(send: Send) -> Send:
    async def closing(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(key.lower() == b"connection" for key, _ in headers):
                headers.append(_CLOSE)
            message["headers"] = headers
        await send(message)

    return closing
