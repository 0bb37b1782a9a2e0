"""WebSocket handshakes: the checks HTTP requests get from several layers, at once.

A WebSocket gets the same bearer check as HTTP and a cross-site check browsers do not do
for WebSockets: a handshake with an ``Origin`` is accepted only from an origin listed in
``cors_origins``, or from a page whose host is one of ``allowed_hosts`` (the service's own
names; loopback by default), so no other web page can drive a local instance's sockets.
The request's ``Host`` is never compared: a DNS-rebinding page (its name resolved to
127.0.0.1) sends its own name there and as its origin, and was taken for same-site; while artifacts load, the routes that
need them are refused too. A refused handshake is closed with 1008 and its reason. Each
gets a request id and a record (method ``WEBSOCKET``, status 101 or 403) like an HTTP
request.

The service sends WebSocket scopes here and on to the framework, HTTP scopes through
the HTTP layers (``http/app.py``, ``Service``), so each layer sees one kind only.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import shorten
from ...runtime.lifecycle import Lifecycle
from ...runtime.telemetry import RequestRecord, Telemetry
from ..bearer import token_matches
from .answers import REQUEST_ID
from .request_id import RequestIds, request_id


class WebSocketChecks:
    """``token``: the API bearer token (None: no auth); ``open_paths``: paths served
    without it; ``gated``: (exact paths, prefixes) refused while loading; ``routes``: the
    WebSocket paths (their metrics label; any other is ``unmatched``)."""

    def __init__(self, app: ASGIApp, *, ids: RequestIds,
                 token: bytes | None, origins: Sequence[str], hosts: Sequence[str],
                 lifecycle: Lifecycle,
                 telemetry: Telemetry, open_paths: Collection[str],
                 gated: tuple[frozenset[str], tuple[str, ...]],
                 routes: Collection[str]) -> None:
        self.app = app
        self._ids = ids
        self._token = token
        self._origins = frozenset(origins)
        self._hosts = frozenset(h.lower() for h in hosts)
        self._lifecycle = lifecycle
        self._telemetry = telemetry
        self._open = open_paths
        self._gated, self._gated_prefixes = gated
        self._routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        rid = scope[REQUEST_ID] = request_id(headers.get(b"x-request-id"), self._ids)
        path = scope["path"]
        record = RequestRecord(rid, "WEBSOCKET", time.perf_counter())
        record.route = path if path in self._routes else "unmatched"  # bounded label set
        refused = None
        if self._token is not None and path not in self._open and \
                not token_matches(headers.get(b"authorization"), self._token):
            refused = "missing or invalid bearer token"
        origin = headers.get(b"origin")
        if origin is not None and not self._allowed(origin):
            refused = f"origin {shorten(origin.decode('latin-1'), 80)} is not allowed"
        if refused is None and not self._lifecycle.loaded and (
                path in self._gated or path.startswith(self._gated_prefixes)):
            refused = "not ready: loading artifacts"
        try:
            if refused is not None:
                message = await receive()  # websocket.connect
                if message["type"] == "websocket.connect":
                    await send({"type": "websocket.close", "code": 1008, "reason": refused})
                record.status = 403
                return
            record.status = 101
            await self.app(scope, receive, send)
        finally:
            record.duration = time.perf_counter() - record.started
            self._telemetry.finish(record)

    def _allowed(self, origin: bytes) -> bool:
        text = origin.decode("latin-1")
        if text in self._origins or "*" in self._origins:
            return True
        scheme, sep, rest = text.partition("://")
        if not sep or scheme.lower() not in ("http", "https"):
            return False  # "null" (a file or sandboxed page), or not a web origin
        host = rest.lower()
        if host.startswith("["):  # [v6]:port
            host = host[:host.find("]") + 1]
        else:
            host = host.rsplit(":", 1)[0]
        return host in self._hosts
