"""The fast lane: the hot POST operations of the table (``operations.table.
direct_handlers``: /encode, /count, /decode, /render_chat and the compat routes) are
served here, skipping the framework's routing and middleware layers, and so are the
compat routes' GETs and their per-model base URLs (``operations.table.compat_routes``:
``/compat/<stack>/models/{name}/...``, whose name may hold an encoded ``/`` the
framework's router would split at); every other request goes on to FastAPI.

The operation and the error mapping are the very ones the FastAPI routes use
(``operations.handlers``, ``errors.response_for``), so a request gets the same answer
whichever way it takes. The body is read whole (``body_limit.read_rest`` when it comes
in several chunks), the handler turns it into JSON bytes, and head and body leave in one
write (``one_write``). This is the path benchmarks/service_bench.py measures against a
bare ASGI app: it builds the answer's headers itself and sends them without wrappers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import response_for
from ...operations.handlers import Handler, Reply
from ...runtime.state import ServiceState
from .answers import RECORD, answer, hold_head
from .body_limit import read_rest, too_large


class FastLane:
    """``handlers``: path -> the POST operation served here; ``routes``: (method, path)
    -> (handler, route template) or None, for the compat routes beyond those;
    ``renderers``: path -> its error shape, where it is not the contract's; ``limit``:
    the body limit."""

    def __init__(self, app: ASGIApp, *, handlers: Mapping[str, Handler],
                 state: ServiceState, limit: int,
                 renderers: Mapping[str, Callable[..., object]],
                 routes: Callable[[str, str], tuple[Any, str] | None] | None = None) -> None:
        self.app = app
        self._handlers = handlers
        self._state = state
        self._limit = limit
        self._renderers = renderers
        self._routes = routes or (lambda method, path: None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        handler = self._handlers.get(scope["path"]) if method == "POST" else None
        record = scope[RECORD]
        if handler is None:
            found = self._routes(method, scope["path"])
            if found is None:
                await self.app(scope, receive, send)
                return
            handler, record.route = found
        try:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            raw = message.get("body", b"")
            if message.get("more_body", False):  # a body in several chunks
                raw = await read_rest(raw, receive, self._limit, record)
            elif len(raw) > self._limit:
                record.bytes_in = len(raw)
                raise too_large(self._limit)
            record.bytes_in = len(raw)
            body = await handler(self._state, raw)
        except ClientDisconnect:
            raise
        except Exception as exc:
            path = scope["path"]
            response = response_for(exc, path, record.request_id, self._renderers.get(path))
            await answer(response, scope, receive, send)
            return
        status = 200
        headers = [(b"content-type", b"application/json"),
                   (b"x-request-id", record.request_id.encode())]
        if type(body) is Reply:  # a compat route's answer: its status and headers
            headers.extend(body.headers)
            body, status = body.body, body.status
            if not body:  # no body (the stacks' health): no media type either
                del headers[0]
        headers.append((b"content-length", b"%d" % len(body)))
        record.status, record.bytes_out = status, len(body)
        hold_head(scope)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
