"""The service's one error table.

Service-level exceptions live here next to the mapping from every exception type
(engine's and ours) to an HTTP status and a stable code. Routes raise; they never build
error responses themselves.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from .. import errors as engine_errors


class ServiceError(Exception):
    """Base class: ``code`` is stable, ``details`` is merged into the error JSON body."""

    code = "service_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class TokenizerNotFound(ServiceError):
    code = "tokenizer_not_found"


class UnknownModel(ServiceError):
    """``model`` names no model the table (GET /models) knows; ``suggestions`` has close
    matches."""

    code = "unknown_model"


class ContextOverflow(ServiceError):
    """The chat does not fit ``max_tokens`` (even after ``fit`` dropped what it may)."""

    code = "context_overflow"


class TemplateNotFound(ServiceError):
    """Unknown template name, or the tokenizer has no chat template at all."""

    code = "template_not_found"


class TemplateError(ServiceError):
    """The template raised, tried to escape the sandbox, ran too long or rendered too much."""

    code = "template_error"


class ReservedLiteralInContent(ServiceError):
    """Under reserved_literals="reject" message content holds a special-token literal."""

    code = "reserved_literal_in_content"


class PayloadTooLarge(ServiceError):
    code = "payload_too_large"


class InvalidRequest(ServiceError):
    code = "invalid_request"


class UnsupportedMediaType(ServiceError):
    """A JSON route got a body that is not declared ``application/json`` (or ``+json``)
    in UTF-8. Refusing it closes the browser's "simple request" route: a web page cannot
    POST JSON cross-origin without a CORS preflight, which the server can refuse."""

    code = "unsupported_media_type"


class InvalidJson(InvalidRequest):
    """The body is not JSON at all (or not a JSON object)."""

    code = "invalid_json"


class Unauthorized(ServiceError):
    code = "unauthorized"


class Forbidden(ServiceError):
    """A token was sent but it is not the one this route needs."""

    code = "forbidden"


class AdminDisabled(ServiceError):
    """/admin/* is off because TOKSERVE_ADMIN_TOKEN is not set."""

    code = "admin_disabled"


class NoTokenizers(ServiceError):
    """Start-up found nothing to serve (and ``allow_empty`` is off): the server exits."""

    code = "no_tokenizers"


class NotFound(ServiceError):
    """A path under a known route names nothing that exists (a playground asset)."""

    code = "not_found"


class NotReady(ServiceError):
    """The server cannot take this request yet, or no longer wants new ones: ``reason``
    is ``loading`` (artifacts still loading after start), ``draining`` (shutting down:
    /readyz only; requests are still served) or ``no_tokenizers`` (nothing loaded).
    Answered 503 with ``Retry-After``, so clients and load balancers try again or
    elsewhere."""

    code = "not_ready"

    def __init__(self, message: str, reason: str, **details: Any) -> None:
        super().__init__(message, reason=reason, **details)


class NoArtifacts(ServiceError):
    """/healthz: loading finished and no tokenizer artifact is loaded."""

    code = "no_artifacts"


# =====================================================================================
# The one table: exception type → HTTP status. Lookup walks the MRO, so a subclass
# inherits its base's status unless it has its own row. Codes come from the exception.
# =====================================================================================

log = logging.getLogger("tokserve.errors")

STATUS_BY_TYPE: dict[type[BaseException], int] = {
    # engine
    engine_errors.SpecialTokenInText: 400,
    engine_errors.UnknownTokenId: 400,
    engine_errors.InvalidUtf8: 400,
    engine_errors.InputTooLarge: 413,
    engine_errors.ArtifactError: 500,  # a served artifact failing at request time is ours
    engine_errors.EngineError: 400,
    # service
    TokenizerNotFound: 404,
    UnknownModel: 404,
    ContextOverflow: 400,
    TemplateNotFound: 404,
    TemplateError: 400,
    ReservedLiteralInContent: 400,
    PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    InvalidRequest: 422,
    Unauthorized: 401,
    Forbidden: 403,
    AdminDisabled: 404,
    NotFound: 404,
    NotReady: 503,
    NoArtifacts: 503,
    ServiceError: 500,
    # framework
    ValidationError: 422,
    RequestValidationError: 422,
}

#: Extra headers by status: 401 names the scheme (RFC 9110 §11.6.1), 503 says when to
#: come back (the client retries a 503 after Retry-After).
HEADERS_BY_STATUS = {401: {"WWW-Authenticate": "Bearer"}, 503: {"Retry-After": "1"}}

#: Codes for the framework's own HTTP errors (routing 404/405 etc.).
HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}


def status_for(exc: BaseException) -> int:
    """HTTP status for ``exc`` from the table (500 for anything not in it)."""
    for cls in type(exc).__mro__:
        status = STATUS_BY_TYPE.get(cls)
        if status is not None:
            return status
    return 500


def dumps(obj: object) -> bytes:
    """orjson, falling back to the stdlib for strings orjson refuses (lone surrogates)."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()


def at_index(exc: engine_errors.EngineError, index: int,
             field: str = "texts") -> engine_errors.EngineError:
    """``exc`` naming the batch item that failed, by the field the caller sent
    (``texts[3]: ...``, with ``index`` and ``field`` in its details)."""
    exc.details["index"] = index
    exc.details["field"] = f"{field}[{index}]"
    exc.message = f"{field}[{index}]: {exc.message}"
    return exc


#: Bounds on what an error body echoes: each string (a caller's tokenizer name, a
#: literal, a JSON key) at most MAX_ECHO characters, each list at most MAX_LIST items
#: (with ``<name>_total`` giving the full count), the message at most MAX_MESSAGE.
MAX_ECHO = 256
MAX_LIST = 50
MAX_MESSAGE = 1024


def shorten(value: object, limit: int = MAX_ECHO) -> str:
    """``repr``-like text of a caller value for a message, at most ``limit`` chars."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bounded(value: object) -> object:
    if isinstance(value, str):
        return shorten(value)
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():
            out[shorten(str(key))] = _bounded(item)
            if isinstance(item, (list, tuple)) and len(item) > MAX_LIST:
                out[f"{shorten(str(key))}_total"] = len(item)
        return out
    if isinstance(value, (list, tuple)):
        return [_bounded(item) for item in value[:MAX_LIST]]
    return value


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, *,
    request_id: str | None = None, **details: object
) -> Response:
    """The contract's envelope, bounded (see ``MAX_ECHO``): an error never echoes an
    unbounded amount of what the caller sent. ``request_id`` (the one the layers
    gave the request, also in the ``X-Request-ID`` header) goes into the body, so a
    failed call can be followed into the server's logs from the body alone."""
    return Response(dumps(error_body(code, message, request_id=request_id, **details)),
                    status_code=status, media_type="application/json", headers=headers)


_envelope = error_response


def error_body(code: str, message: str, *, request_id: str | None = None,
               **details: object) -> dict[str, object]:
    """``{"error": {"code", "message", "request_id"?, ...details}}``, bounded as
    ``error_response``'s (also the error frame of a stream)."""
    error: dict[str, object] = {"code": code, "message": shorten(message, MAX_MESSAGE)}
    if request_id is not None:
        error["request_id"] = request_id
    return {"error": {**error, **_bounded(details)}}


def _validation_details(errors: list[dict]) -> list[dict]:
    # Drop `input`/`ctx`/`url`: they can echo megabytes of the request or be unserializable.
    return [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in errors[:50]
    ]


def _validation_message(details: list[dict], total: int) -> str:
    if not details:
        return "request does not match the schema"
    first = details[0]
    where = ".".join(shorten(str(p), 64) for p in first["loc"] if p != "body") or "body"
    more = f" (and {total - 1} more)" if total > 1 else ""
    return f"invalid request at {where}: {first['msg']}{more}"


def response_for(exc: BaseException, path: str, request_id: str,
                 render: Callable[..., Response] | None = None) -> Response:
    """The error response for ``exc`` raised while serving ``path``.

    The one mapping both request paths use: FastAPI's exception handlers (below) and the
    fast lane's dispatch of the hot POST routes (``http/layers/fast_lane.py``).
    ``render`` writes the body in another shape than the contract's envelope (the compat
    routes speak their projects' error formats); it takes ``error_response``'s arguments.
    """
    error_response = render or _envelope
    if isinstance(exc, (ServiceError, engine_errors.EngineError)):
        status = status_for(exc)
        if status >= 500 and status != 503:
            log.error("%s on %s: %s (request_id=%s)", exc.code, path, exc.message, request_id)
        return error_response(status, exc.code, exc.message, HEADERS_BY_STATUS.get(status),
                              request_id=request_id, **exc.details)
    if isinstance(exc, (ValidationError, RequestValidationError)):
        # Request bodies are validated in parsing.py, which bounds this itself; listing a
        # pydantic error set costs per error, so a huge one is only counted here.
        total = exc.error_count() if isinstance(exc, ValidationError) else len(exc.errors())
        details = _validation_details(list(exc.errors()) if total <= 500 else [])
        return error_response(422, "invalid_request", _validation_message(details, total),
                              request_id=request_id, errors=details, errors_total=total)
    log.exception("unhandled error on %s (request_id=%s)", path, request_id, exc_info=exc)
    if render is not None:
        return render(500, "internal_error", "internal server error; quote the request_id "
                      "when reporting it", {"X-Request-ID": request_id}, request_id=request_id)
    return internal_error_response(request_id)


def _request_id(request: Request) -> str:
    return request.scope.get("tokserve.request_id") or uuid.uuid4().hex


async def _mapped(request: Request, exc: Exception) -> Response:
    return response_for(exc, request.url.path, _request_id(request))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    code = HTTP_CODES.get(exc.status_code, "http_error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    if exc.status_code == 404:
        message = f"no route {request.method} {request.url.path}; see /docs for the endpoints"
    elif exc.status_code == 405:
        message = f"method {request.method} is not allowed on {request.url.path}"
        # Starlette names the methods of the first route that matched the path; a path
        # can have several (GET /decode/stream is the WebSocket, POST the NDJSON stream)
        allowed = _allowed_methods(request)
        if allowed:
            headers = {**dict(exc.headers or {}), "Allow": ", ".join(allowed)}
            return error_response(405, code, message, headers,
                                  request_id=_request_id(request))
    return error_response(exc.status_code, code, message, dict(exc.headers or {}) or None,
                          request_id=_request_id(request))


def _allowed_methods(request: Request) -> list[str]:
    from starlette.routing import Match

    methods: set[str] = set()
    for route in request.app.routes:
        if route.matches(request.scope)[0] != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def internal_error_response(request_id: str) -> Response:
    return error_response(
        500,
        "internal_error",
        "internal server error; quote the request_id when reporting it",
        {"X-Request-ID": request_id},
        request_id=request_id,
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register every handler; routes raise typed exceptions and never build errors."""
    for exc_type in (ServiceError, engine_errors.EngineError, ValidationError,
                     RequestValidationError, Exception):
        app.add_exception_handler(exc_type, _mapped)
    app.add_exception_handler(StarletteHTTPException, _http_error)
