"""One pure-ASGI middleware for what must happen before routing and parsing.

In order, for every HTTP request:

1. a request id (client's ``X-Request-ID`` or a fresh one), echoed in the response;
2. bearer auth when ``auth_token`` is set (every path but ``/healthz``, the playground
   page and ``/admin/*``, which has its own token) → 401;
3. the body limit: a ``Content-Length`` over ``max_body_bytes`` is answered 413 without
   reading a byte; a chunked body is counted as it streams and the read that crosses the
   limit raises ``PayloadTooLarge`` (→ 413) before anything is parsed;
4. metrics: one request/latency observation per response, labelled by route template;
5. a last-resort guard: an exception escaping the app becomes a 500 with the request id
   (logged with its traceback server-side, never sent to the client);
6. direct dispatch of the hot POST routes (/encode, /decode, /count, /render_chat) to
   ``tokserve.service.handlers``, skipping the framework's routing and middleware layers; every
   other request (and OpenAPI) goes through FastAPI.

Pure ASGI rather than ``BaseHTTPMiddleware``: no extra task per request, no body
buffering, and it can refuse a body before it is received.
"""

from __future__ import annotations

import hmac
import logging
import time
import uuid
from typing import Any

from starlette.requests import ClientDisconnect
from fastapi import FastAPI
from starlette.types import Message, Receive, Scope, Send

from .errors import PayloadTooLarge, error_response, internal_error_response, response_for
from .handlers import BY_PATH, Handler
from .serving import ServiceState
from .metrics import Metrics
from .settings import Settings

log = logging.getLogger("tokserve.http")

# The playground page and its assets carry no data; the page asks for the bearer token
# itself and sends it on every API call. /admin/* checks its own, separate admin token
# (routes/admin.py).
_OPEN_PATHS = frozenset({
    "/healthz", "/", "/playground", "/playground/playground.js", "/playground/playground.css",
})


_JSON_HEADERS = [(b"content-type", b"application/json")]


async def _direct(handler: Handler, state: ServiceState, scope: Scope, receive: Receive,
                  send: Send, request_id: str) -> None:
    """Serve a hot POST route without the framework's routing and middleware layers.

    Measured with benchmarks/service_bench.py: those layers cost more per request than
    counting a 1 KB text. The operation and the error mapping are the very ones the
    FastAPI routes use (``handlers``, ``errors.response_for``).
    """
    chunks: list[bytes] = []
    try:
        while True:
            message = await receive()  # the limit guard raises PayloadTooLarge here
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = await handler(state, b"".join(chunks))
    except ClientDisconnect:
        raise
    except Exception as exc:  # noqa: BLE001 - mapped exactly as the routes' handlers do
        await response_for(exc, scope["path"], request_id)(scope, receive, send)
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": _JSON_HEADERS + [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


class ServiceMiddleware:
    """The service's outermost ASGI app; ``app`` is the FastAPI app it wraps."""

    def __init__(self, app: FastAPI, settings: Settings, metrics: Metrics) -> None:
        self.app = app
        self.max_body = settings.max_body_bytes
        token = settings.auth_token.get_secret_value() if settings.auth_token else None
        self.expected_auth = f"Bearer {token}".encode() if token else None
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        rid_raw = _header(scope, b"x-request-id")
        rid = rid_raw.decode("latin-1")[:128] if rid_raw else uuid.uuid4().hex
        scope["tokserve.request_id"] = rid
        rid_header = (b"x-request-id", rid.encode("latin-1"))
        state: dict[str, Any] = {"status": 500, "started": False}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                state["started"] = True
                headers = list(message.get("headers", ()))
                if not any(k == b"x-request-id" for k, _ in headers):
                    headers.append(rid_header)
                message["headers"] = headers
            await send(message)

        try:
            refusal = self._refuse(scope)
            handler = BY_PATH.get(scope["path"]) if scope["method"] == "POST" else None
            if refusal is not None:
                await refusal(scope, receive, send_wrapper)
            elif handler is not None:
                scope["tokserve.endpoint"] = scope["path"]
                await _direct(handler, self.app.state.service, scope, self._limited(receive),
                              send_wrapper, rid)
            else:
                await self.app(scope, self._limited(receive), send_wrapper)
        except ClientDisconnect:
            state["status"] = 499  # client went away mid-body: nobody to answer
        except Exception:
            if state["started"]:
                # Already answered and logged: FastAPI's ServerErrorMiddleware sends our
                # 500 (errors.response_for) and then re-raises.
                return
            log.exception("unhandled error on %s (request_id=%s)", scope.get("path"), rid)
            await internal_error_response(rid)(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            endpoint = (scope.get("tokserve.endpoint") or getattr(route, "path", None)
                        or "unmatched")
            self.metrics.observe_request(
                endpoint, scope["method"], state["status"], time.perf_counter() - start
            )

    def _refuse(self, scope: Scope):  # -> Response | None
        if (self.expected_auth is not None and scope["path"] not in _OPEN_PATHS
                and not scope["path"].startswith("/admin/")):
            got = _header(scope, b"authorization") or b""
            if not hmac.compare_digest(got, self.expected_auth):
                why = "missing" if not got else "invalid"
                return error_response(
                    401, "unauthorized",
                    f"{why} bearer token; send 'Authorization: Bearer <token>'",
                    {"WWW-Authenticate": "Bearer"},
                )
        length = _header(scope, b"content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                n = -1
            if n > self.max_body:
                return error_response(
                    413, PayloadTooLarge.code,
                    f"request body is {n} bytes; the limit is {self.max_body} "
                    f"(TOKSERVE_MAX_BODY_BYTES); split the batch or the text",
                    {"Connection": "close"},
                    limit=self.max_body, size=n,
                )
        return None

    def _limited(self, receive: Receive) -> Receive:
        """Wrap ``receive`` to stop a chunked body at the limit, before it is all read."""
        limit = self.max_body
        seen = 0

        async def guarded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise PayloadTooLarge(
                        f"request body exceeds the limit of {limit} bytes "
                        f"(TOKSERVE_MAX_BODY_BYTES); split the batch or the text",
                        limit=limit,
                    )
            return message

        return guarded
