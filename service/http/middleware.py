"""One pure-ASGI middleware for what must happen before routing and parsing.

In order, for every HTTP request:

1. a request id (the client's ``X-Request-ID`` when it is a short token, else a fresh
   one), echoed in the response;
2. bearer auth when ``auth_token`` is set (every operation the table does not mark open)
   → 401;
3. the body limit: a ``Content-Length`` over ``max_body_bytes`` is answered 413 without
   reading a byte; a chunked body is counted as it streams and the read that crosses the
   limit raises ``PayloadTooLarge`` (→ 413) before anything is parsed;
4. readiness: while artifacts load, the operations that need them (``operations.
   needs_artifacts``) are answered 503 ``not_ready`` with ``Retry-After``; while the
   server drains (SIGTERM), every answer carries ``Connection: close`` (lifecycle.py);
5. the media type: a POST body must be one the operation takes (``operations.
   body_media_types``: JSON in UTF-8, NDJSON for the stream), else 415;
6. the fast lane: the hot POST operations of the table (``operations.direct_handlers``)
   are served here, skipping the framework's routing and middleware layers; every other
   request goes through FastAPI;
7. telemetry: a ``RequestRecord`` per request (route template, status, duration, bytes,
   tokenizer and tokens), handed to the metrics and the access log (telemetry.py), and
   an OpenTelemetry span around it when tracing is on (tracing.py);
8. a last-resort guard: an exception escaping the app becomes a 500 with the request id
   (logged with its traceback server-side, never sent to the client).

Every error body carries the request id (``"request_id"`` in the error object), as every
response carries it in ``X-Request-ID``; the compat routes write their errors in their
projects' shapes (``operations.error_renderers``), these refusals included. WebSockets get
the bearer check and a cross-site check at the handshake (``_websocket``).

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

from .bearer import token_matches
from ..errors import (
    HEADERS_BY_STATUS,
    PayloadTooLarge,
    UnsupportedMediaType,
    error_response,
    internal_error_response,
    response_for,
    shorten,
)
from ..operations.handlers import Handler, Reply
from ..runtime.lifecycle import Lifecycle
from ..runtime.state import ServiceState
from .one_write import EXTENSION
from ..operations.table import (body_media_types, direct_handlers, error_renderers, gated_paths,
                         open_paths, websocket_paths)
from ..runtime.settings import Settings
from ..runtime.telemetry import RequestRecord, Telemetry, current

log = logging.getLogger("tokserve.http")

# The operations marked open in the table (health, the playground page and its assets,
# /admin/* which checks its own admin token) and the API docs carry no data; the page
# asks for the bearer token itself and sends it on every API call.
_OPEN_PATHS, _OPEN_PREFIXES = open_paths()
_GATED_PATHS, _GATED_PREFIXES = gated_paths()
_DIRECT = direct_handlers()
_CONSUMES = body_media_types()
_WEBSOCKETS = websocket_paths()
_RENDERERS = error_renderers()  # path -> its error shape, where it is not the contract's
_CLOSE = (b"connection", b"close")

#: A caller's X-Request-ID is kept when it is a short token of these characters (so it
#: can go into logs and headers as it is); anything else is replaced by a fresh id.
_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")


def _hold_head(scope: Scope) -> None:
    """Ask the server to send the response head with the body that follows it at once,
    in one write (``one_write``; a no-op under a server that does not offer it)."""
    extensions = scope.get("extensions")
    if extensions is not None:
        hold = extensions.get(EXTENSION)
        if hold is not None:
            hold()


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

    def __init__(self, app: FastAPI, state: ServiceState, settings: Settings,
                 lifecycle: Lifecycle, telemetry: Telemetry, tracing: Any = None) -> None:
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
        # A Content-Length with fewer digits than the limit is under it (no int() needed).
        self._length_digits = len(str(self.max_body))
        token = settings.auth_token.get_secret_value() if settings.auth_token else None
        self.expected_auth = token.encode() if token else None
        self.lifecycle = lifecycle
        self.telemetry = telemetry
        self.tracing = tracing  # tracing.Tracing when OpenTelemetry is on, else None
        self.service = state
        self.new_request_id = RequestIds()
        # (Content-Type value, accepted types) -> accepted (memo)
        self._json_types: dict[tuple[bytes, tuple[str, ...]], bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._entry(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "websocket":
                await self._websocket(scope, receive, send)
            else:
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
        record = RequestRecord(rid, scope["method"], start)
        current.set(record)  # this task's context: the operation fills in its tokens
        path = scope["path"]
        handler = _DIRECT.get(path) if scope["method"] == "POST" else None
        if handler is not None:
            record.route = path
        try:
            if self.tracing is None:
                await self._respond(scope, receive, send, record, handler, content_type,
                                    authorization, length)
            else:
                with self.tracing.request(record):
                    await self._respond(scope, receive, send, record, handler,
                                        content_type, authorization, length)
        except ClientDisconnect:
            record.status = 499  # the client went away mid-body: nobody to answer
        finally:
            record.duration = time.perf_counter() - start
            self.telemetry.finish(record)

    async def _respond(self, scope: Scope, receive: Receive, send: Send,
                       record: RequestRecord, handler: Handler | None,
                       content_type: bytes | None, authorization: bytes | None,
                       length: bytes | None) -> None:
        """Refuse (auth, size, media type, still loading) or serve the request."""
        path, rid = scope["path"], record.request_id
        refusal = None
        # Each check is one comparison when it cannot refuse (the hot path's usual case):
        # no token configured, a Content-Length with fewer digits than the limit.
        if self.expected_auth is not None or (
                length is not None and len(length) >= self._length_digits):
            refusal = self._refuse(path, authorization, length, rid,
                                   _RENDERERS.get(path, error_response))
        consumes = _CONSUMES.get(path) if scope["method"] == "POST" else None
        if refusal is None and not self._accepts(content_type, consumes):
            refusal = _RENDERERS.get(path, error_response)(
                415, UnsupportedMediaType.code,
                f"send the body with 'Content-Type: {consumes[0]}' (UTF-8)"
                + (f"; accepted: {', '.join(consumes)}" if len(consumes) > 1 else ""),
                request_id=rid)
        if refusal is None and not self.lifecycle.loaded and (
                path in _GATED_PATHS or path.startswith(_GATED_PREFIXES)):
            refusal = response_for(self.lifecycle.not_ready(1), path, rid,
                                   _RENDERERS.get(path))
        if refusal is not None:
            await self._send_response(refusal, scope, receive, send, record)
        elif handler is not None:
            await self._direct(handler, scope, receive, send, record)
        else:
            await self._framework(scope, receive, send, record)

    def _accepts(self, content_type: bytes | None, consumes: tuple[str, ...] | None) -> bool:
        """Whether ``content_type`` is one of ``consumes`` (any, when that is None)."""
        if not consumes:
            return True
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
        rid = rid.decode() if _REQUEST_ID.fullmatch(rid) else self.new_request_id()
        scope["tokserve.request_id"] = rid
        path = scope["path"]
        record = RequestRecord(rid, "WEBSOCKET", time.perf_counter())
        record.route = path if path in _WEBSOCKETS else "unmatched"  # bounded label set
        refused = None
        if self.expected_auth is not None and path not in _OPEN_PATHS and \
                not token_matches(headers.get(b"authorization"), self.expected_auth):
            refused = "missing or invalid bearer token"
        origin = headers.get(b"origin")
        if origin is not None and not self._same_site(origin, headers.get(b"host")):
            refused = f"origin {shorten(origin.decode('latin-1'), 80)} is not allowed"
        if refused is None and not self.lifecycle.loaded and (
                path in _GATED_PATHS or path.startswith(_GATED_PREFIXES)):
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
            self.telemetry.finish(record)

    def _same_site(self, origin: bytes, host: bytes | None) -> bool:
        text = origin.decode("latin-1")
        if text in self.cors_origins or "*" in self.cors_origins:
            return True
        return host is not None and text.split("://", 1)[-1] == host.decode("latin-1")

    async def _direct(self, handler: Handler, scope: Scope, receive: Receive, send: Send,
                      record: RequestRecord) -> None:
        """Serve a hot POST operation without the framework's routing and middleware
        layers; the operation and the error mapping are the very ones the FastAPI routes
        use (``handlers``, ``errors.response_for``)."""
        try:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            raw = message.get("body", b"")
            if message.get("more_body", False):  # a body in several chunks
                raw = await self._rest_of_body(raw, receive, record)
            elif len(raw) > self.max_body:
                record.bytes_in = len(raw)
                raise self._too_large()
            record.bytes_in = len(raw)
            body = await handler(self.service, raw)
        except ClientDisconnect:
            raise
        except Exception as exc:
            response = response_for(exc, scope["path"], record.request_id,
                                    _RENDERERS.get(scope["path"]))
            await self._send_response(response, scope, receive, send, record)
            return
        status = 200
        headers = [(b"content-type", b"application/json"),
                   (b"x-request-id", record.request_id.encode())]
        if type(body) is Reply:  # a compat route's answer: its status and headers
            headers.extend(body.headers)
            body, status = body.body, body.status
        headers.append((b"content-length", b"%d" % len(body)))
        if self.lifecycle.draining:
            headers.append(_CLOSE)
        record.status, record.bytes_out = status, len(body)
        _hold_head(scope)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _rest_of_body(self, first: bytes, receive: Receive,
                            record: RequestRecord) -> bytes:
        """The whole body of a request whose first chunk is ``first``, refused with
        ``PayloadTooLarge`` as soon as it passes the limit."""
        chunks = [first]
        seen = len(first)
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                record.bytes_in = seen
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _framework(self, scope: Scope, receive: Receive, send: Send,
                         record: RequestRecord) -> None:
        """Hand the request to FastAPI; the record gets the status, route template and
        bytes it sent."""
        started = False
        rid_header = (b"x-request-id", record.request_id.encode())

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                record.status, started = message["status"], True
                headers = list(message.get("headers", ()))
                if not any(key.lower() == b"x-request-id" for key, _ in headers):
                    headers.append(rid_header)
                if self.lifecycle.draining:
                    headers.append(_CLOSE)
                message["headers"] = headers
            elif message["type"] == "http.response.body":
                record.bytes_out += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, self._limited(receive, record), send_with_id)
        except ClientDisconnect:
            raise
        except Exception:
            if not started:
                log.exception("unhandled error on %s (request_id=%s)", scope["path"],
                              record.request_id)
                await self._send_response(internal_error_response(record.request_id), scope,
                                          receive, send, record)
            # else already answered and logged: FastAPI's ServerErrorMiddleware sends our
            # 500 (errors.response_for) and then re-raises.
        route = scope.get("route")
        record.route = getattr(route, "path", None) or "unmatched"

    def _refuse(self, path: str, authorization: bytes | None, length: bytes | None,
                rid: str, error_response=error_response):
        """The auth and Content-Length refusals (a ``Response`` written by
        ``error_response``: the route's error shape), or None."""
        if (self.expected_auth is not None and path not in _OPEN_PATHS
                and not path.startswith(_OPEN_PREFIXES)):
            if not token_matches(authorization, self.expected_auth):
                why = "missing" if not authorization else "invalid"
                return error_response(
                    401, "unauthorized",
                    f"{why} bearer token; send 'Authorization: Bearer <token>'",
                    HEADERS_BY_STATUS[401], request_id=rid,
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
                    {"Connection": "close"}, request_id=rid,
                    limit=self.max_body, size=n,
                )
        return None

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"request body exceeds the limit of {self.max_body} bytes "
            f"(TOKSERVE_MAX_BODY_BYTES); split the batch or the text",
            limit=self.max_body,
        )

    def _limited(self, receive: Receive, record: RequestRecord) -> Receive:
        """Wrap ``receive`` to stop a chunked body at the limit, before it is all read,
        and count the bytes received."""

        async def guarded() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                record.bytes_in += len(message.get("body", b""))
                if record.bytes_in > self.max_body:
                    raise self._too_large()
            return message

        return guarded

    async def _send_response(self, response, scope: Scope, receive: Receive, send: Send,
                             record: RequestRecord) -> None:
        """Send a Starlette ``Response`` with the request id header (and
        ``Connection: close`` while draining); the record gets its status and size."""
        response.headers["x-request-id"] = record.request_id
        if self.lifecycle.draining:
            response.headers["connection"] = "close"
        record.status, record.bytes_out = response.status_code, len(response.body)
        _hold_head(scope)  # a HEAD answer's head goes alone when the response completes
        await response(scope, receive, send)
