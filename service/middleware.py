"""One pure-ASGI middleware for what must happen before routing and parsing.

In order, for every HTTP request:

1. a request id (the client's ``X-Request-ID`` when it is a short token, else a fresh
   one), echoed in the response;
2. bearer auth when ``auth_token`` is set (every operation the table does not mark open)
   → 401;
3. the body limit: a ``Content-Length`` over ``max_body_bytes`` is answered 413 without
   reading a byte; a chunked body is counted as it streams and the read that crosses the
   limit raises ``PayloadTooLarge`` (→ 413) before anything is parsed;
4. the fast lane: the hot POST operations of the table (``operations.direct_handlers``)
   are served here, skipping the framework's routing and middleware layers, after their
   ``Content-Type`` is checked (JSON in UTF-8, else 415); every other request goes
   through FastAPI;
5. metrics: one request/latency observation per response, labelled by route template;
6. a last-resort guard: an exception escaping the app becomes a 500 with the request id
   (logged with its traceback server-side, never sent to the client).

Pure ASGI rather than ``BaseHTTPMiddleware``: no extra task per request, no body
buffering, and it can refuse a body before it is received. The fast lane is measured
against a bare ASGI app that answers a constant (benchmarks/service_bench.py), so it
reads the headers in one pass and sends its answer without wrappers.
"""

from __future__ import annotations

import logging
import os
import re
import time
from itertools import count
from typing import Any

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Scope, Send

from .auth import token_matches
from .errors import (PayloadTooLarge, UnsupportedMediaType, error_response,
                     internal_error_response, response_for, shorten)
from .handlers import Handler, Reply
from .metrics import Metrics
from .operations import body_media_types, direct_handlers, error_renderers, open_paths
from .settings import Settings

log = logging.getLogger("tokserve.http")

# The operations marked open in the table (health, the playground page and its assets,
# /admin/* which checks its own admin token) and the API docs carry no data; the page
# asks for the bearer token itself and sends it on every API call.
_OPEN_PATHS, _OPEN_PREFIXES = open_paths()
_DIRECT = direct_handlers()
_CONSUMES = body_media_types()
_RENDERERS = error_renderers()  # path -> its error shape, where it is not the contract's
_envelope = error_response

#: A caller's X-Request-ID is kept when it is a short token of these characters (so it
#: can go into logs and headers as it is); anything else is replaced by a fresh id.
_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")


class RequestIds:
    """Fresh request ids: a random per-process prefix and a counter (unique across
    workers and restarts; no system call per request, as ``uuid4`` makes)."""

    def __init__(self) -> None:
        self._prefix = os.urandom(6).hex()
        self._next = count(1).__next__

    def __call__(self) -> str:
        return f"{self._prefix}-{self._next():x}"


def json_media_type(value: bytes | None,
                    accepted: tuple[str, ...] = ("application/json",)) -> bool:
    """One of ``accepted`` (``application/json`` also admits ``application/<x>+json``),
    with a charset (if any) of UTF-8: what the JSON routes accept (RFC 8259 §8.1: JSON
    exchanged between systems is UTF-8)."""
    if not value:
        return False
    kind, *params = value.decode("latin-1").lower().split(";")
    kind = kind.strip()
    plus_json = kind.startswith("application/") and kind.endswith("+json")
    if kind not in accepted and not (plus_json and "application/json" in accepted):
        return False
    for param in params:
        name, _, val = param.strip().partition("=")
        if name.strip() == "charset" and val.strip().strip('"') not in ("utf-8", "utf8"):
            return False
    return True


class ServiceMiddleware:
    """The service's outermost ASGI app; ``app`` is the FastAPI app it wraps."""

    def __init__(self, app: FastAPI, settings: Settings, metrics: Metrics) -> None:
        self.app = app
        # CORS only when origins are configured: Starlette's middleware, outermost, so it
        # answers preflights itself and adds its headers to every response of ours.
        self._entry = self._serve if not settings.cors_origins else CORSMiddleware(
            self._serve, allow_origins=settings.cors_origins,
            allow_methods=["GET", "HEAD", "POST"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            expose_headers=["X-Request-ID"], max_age=600)
        self.cors_origins = tuple(settings.cors_origins)
        self.max_body = settings.max_body_bytes
        token = settings.auth_token.get_secret_value() if settings.auth_token else None
        self.expected_auth = token.encode() if token else None
        self.metrics = metrics
        self.new_request_id = RequestIds()
        self._json_types: dict[bytes, bool] = {}  # Content-Type value -> accepted (memo)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._entry(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        rid = content_type = authorization = length = None
        for key, value in scope["headers"]:  # one pass over the headers we read
            if key == b"content-type":
                content_type = value
            elif key == b"content-length":
                length = value
            elif key == b"x-request-id":
                rid = value
            elif key == b"authorization":
                authorization = value
        rid = rid.decode() if rid is not None and _REQUEST_ID.fullmatch(rid) else \
            self.new_request_id()
        scope["tokserve.request_id"] = rid
        path = scope["path"]
        post = scope["method"] == "POST"
        handler = _DIRECT.get(path) if post else None
        endpoint = path if handler is not None else "unmatched"
        status = 500
        try:
            refusal = self._refuse(path, authorization, length)
            consumes = _CONSUMES.get(path) if post else None
            if refusal is None and consumes and not self._accepts(content_type, consumes):
                refusal = _RENDERERS.get(path, error_response)(
                    415, UnsupportedMediaType.code,
                    f"send the body with 'Content-Type: {consumes[0]}' (UTF-8)"
                    + (f"; accepted: {', '.join(consumes)}" if len(consumes) > 1 else ""))
            if refusal is not None:
                status = await _send_response(refusal, scope, receive, send, rid)
            elif handler is not None:
                status = await self._direct(handler, scope, receive, send, rid)
            else:
                status, endpoint = await self._framework(scope, receive, send, rid)
        except ClientDisconnect:
            status = 499  # the client went away mid-body: nobody to answer
        finally:
            self.metrics.observe_request(endpoint, scope["method"], status,
                                         time.perf_counter() - start)

    def _accepts(self, content_type: bytes | None, consumes: tuple[str, ...]) -> bool:
        if content_type is None:
            return False
        key = (content_type, consumes)
        accepted = self._json_types.get(key)
        if accepted is None:
            accepted = json_media_type(content_type, consumes)
            if len(self._json_types) < 64:  # callers send a handful of distinct values
                self._json_types[key] = accepted
        return accepted

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """WebSockets get the same bearer check, and a cross-site check browsers do not
        do for them: a page of another origin (not listed in ``cors_origins``) is refused,
        so no web page can drive a local instance's sockets."""
        headers = dict(scope["headers"])
        rid = headers.get(b"x-request-id", b"")
        scope["tokserve.request_id"] = rid.decode() if _REQUEST_ID.fullmatch(rid) else \
            self.new_request_id()
        path = scope["path"]
        refused = None
        if self.expected_auth is not None and path not in _OPEN_PATHS and \
                not token_matches(headers.get(b"authorization"), self.expected_auth):
            refused = "missing or invalid bearer token"
        origin = headers.get(b"origin")
        if origin is not None and not self._same_site(origin, headers.get(b"host")):
            refused = f"origin {shorten(origin.decode('latin-1'), 100)} is not allowed"
        start = time.perf_counter()
        if refused is not None:
            message = await receive()  # websocket.connect
            if message["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": 1008, "reason": refused})
            self.metrics.observe_request(path, "WEBSOCKET", 403, time.perf_counter() - start)
            return
        await self.app(scope, receive, send)
        self.metrics.observe_request(path, "WEBSOCKET", 101, time.perf_counter() - start)

    def _same_site(self, origin: bytes, host: bytes | None) -> bool:
        text = origin.decode("latin-1")
        if text in self.cors_origins or "*" in self.cors_origins:
            return True
        return host is not None and text.split("://", 1)[-1] == host.decode("latin-1")

    async def _direct(self, handler: Handler, scope: Scope, receive: Receive, send: Send,
                      rid: str) -> int:
        """Serve a hot POST operation without the framework's routing and middleware
        layers; the operation and the error mapping are the very ones the FastAPI routes
        use (``handlers``, ``errors.response_for``). Returns the status sent."""
        chunks: list[bytes] = []
        seen = 0
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientDisconnect()
                chunk = message.get("body", b"")
                seen += len(chunk)
                if seen > self.max_body:
                    raise self._too_large()
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            body = await handler(self.app.state.service, b"".join(chunks))
        except ClientDisconnect:
            raise
        except Exception as exc:  # noqa: BLE001 - mapped exactly as the routes' handlers do
            render = _RENDERERS.get(scope["path"], error_response)
            return await _send_response(response_for(exc, scope["path"], rid, render),
                                        scope, receive, send, rid)
        status, extra = 200, ()
        if type(body) is Reply:
            body, status, extra = body.body, body.status, body.headers
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"x-request-id", rid.encode()), *extra]})
        await send({"type": "http.response.body", "body": body})
        return status

    async def _framework(self, scope: Scope, receive: Receive, send: Send,
                         rid: str) -> tuple[int, str]:
        """Hand the request to FastAPI; returns (status sent, route template)."""
        sent: dict[str, Any] = {"status": 500, "started": False}
        rid_header = (b"x-request-id", rid.encode())

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                sent["status"], sent["started"] = message["status"], True
                headers = list(message.get("headers", ()))
                if not any(key.lower() == b"x-request-id" for key, _ in headers):
                    headers.append(rid_header)
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, self._limited(receive), send_with_id)
        except ClientDisconnect:
            raise
        except Exception:
            if not sent["started"]:
                log.exception("unhandled error on %s (request_id=%s)", scope["path"], rid)
                sent["status"] = await _send_response(internal_error_response(rid), scope,
                                                      receive, send, rid)
            # else already answered and logged: FastAPI's ServerErrorMiddleware sends our
            # 500 (errors.response_for) and then re-raises.
        route = scope.get("route")
        return sent["status"], getattr(route, "path", None) or "unmatched"

    def _refuse(self, path: str, authorization: bytes | None, length: bytes | None):
        """The auth and Content-Length refusals (a ``Response``, in the route's error
        shape), or None."""
        error_response = _RENDERERS.get(path, _envelope)
        if (self.expected_auth is not None and path not in _OPEN_PATHS
                and not path.startswith(_OPEN_PREFIXES)):
            if not token_matches(authorization, self.expected_auth):
                why = "missing" if not authorization else "invalid"
                return error_response(
                    401, "unauthorized",
                    f"{why} bearer token; send 'Authorization: Bearer <token>'",
                    {"WWW-Authenticate": "Bearer"},
                )
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

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"request body exceeds the limit of {self.max_body} bytes "
            f"(TOKSERVE_MAX_BODY_BYTES); split the batch or the text",
            limit=self.max_body,
        )

    def _limited(self, receive: Receive) -> Receive:
        """Wrap ``receive`` to stop a chunked body at the limit, before it is all read."""
        seen = 0

        async def guarded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise self._too_large()
            return message

        return guarded


async def _send_response(response, scope: Scope, receive: Receive, send: Send,
                         rid: str) -> int:
    """Send a Starlette ``Response`` with the request id header; returns its status."""
    response.headers["x-request-id"] = rid
    await response(scope, receive, send)
    return response.status_code
