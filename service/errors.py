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


class ChatUnavailable(ServiceError):
    """The chat renderer (tokserve.service.chat) is not installed in this build."""

    code = "chat_unavailable"


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
    ChatUnavailable: 501,
    ServiceError: 500,
    # framework
    ValidationError: 422,
    RequestValidationError: 422,
}

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
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **details: object
) -> Response:
    """The contract's envelope, bounded (see ``MAX_ECHO``): an error never echoes an
    unbounded amount of what the caller sent."""
    return Response(dumps(error_body(code, message, **details)), status_code=status,
                    media_type="application/json", headers=headers)


_envelope = error_response


def error_body(code: str, message: str, **details: object) -> dict[str, object]:
    """``{"error": {"code", "message", ...details}}``, bounded as ``error_response``'s
    (also the error frame of a stream)."""
    return {"error": {"code": code, "message": shorten(message, MAX_MESSAGE),
                      **_bounded(details)}}


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
    middleware's direct dispatch of the hot POST routes (``middleware._direct``).
    ``render`` writes the body in another shape than the contract's envelope (the compat
    routes speak their projects' error formats); it takes ``error_response``'s arguments.
    """
    error_response = render or _envelope
    if isinstance(exc, (ServiceError, engine_errors.EngineError)):
        status = status_for(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if status >= 500:
            log.error("%s on %s: %s", exc.code, path, exc.message)
        return error_response(status, exc.code, exc.message, headers, **exc.details)
    if isinstance(exc, (ValidationError, RequestValidationError)):
        # Request bodies are validated in parsing.py, which bounds this itself; listing a
        # pydantic error set costs per error, so a huge one is only counted here.
        total = exc.error_count() if isinstance(exc, ValidationError) else len(exc.errors())
        details = _validation_details(list(exc.errors()) if total <= 500 else [])
        return error_response(422, "invalid_request", _validation_message(details, total),
                              errors=details, errors_total=total)
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
            return error_response(405, code, message, headers)
    return error_response(exc.status_code, code, message, dict(exc.headers or {}) or None)


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
