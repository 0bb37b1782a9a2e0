"""The client's one error hierarchy: every contract error as a typed exception.

The server answers errors as ``{"error": {"code", "message", ...details}}`` (docs/API.md);
each ``code`` has its own subclass of ``TokserveError`` here, so callers catch what they
mean (``except UnknownTokenizer``) instead of comparing strings. An unknown code (a
newer server) still raises the base class with everything the server said.
Errors that are bad input (a special-token literal under ``reject``, an unknown id,
invalid UTF-8, a template error) are also ``ValueError``s, as tiktoken raises for the
first, so code written for tiktoken keeps catching them.
"""

from __future__ import annotations

from typing import Any


class TokserveError(Exception):
    """An error answer from the service (or no answer: see ``TokserveConnectionError``).

    Attributes: ``status`` (HTTP status, 0 when no response arrived), ``code`` (the
    contract's machine-readable code), ``message``, ``details`` (every other field of
    the error object), ``request_id`` (from the body or ``X-Request-ID``, if any).
    """

    code: str = "error"

    def __init__(self, status: int, code: str, message: str,
                 details: dict[str, Any] | None = None, request_id: str | None = None) -> None:
        super().__init__(f"{status} {code}: {message}" if status else message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.request_id = request_id


class TokserveConnectionError(TokserveError):
    """No HTTP response: refused, reset or timed out (after the configured retries)."""

    code = "connection_error"


class InvalidRequest(TokserveError, ValueError):
    code = "invalid_request"


class InvalidJson(InvalidRequest):
    code = "invalid_json"


class SpecialTokenInText(TokserveError, ValueError):
    """``details["literals"]`` lists the literals found (policy ``reject``)."""

    code = "special_token_in_text"


class DisallowedSpecialToken(SpecialTokenInText):
    """Raised before sending: the text holds a literal ``disallowed_special`` names
    (a remote encoding checks tiktoken's rule itself when it knows the literals)."""

    def __init__(self, token: str) -> None:
        super().__init__(0, self.code, f"Encountered text corresponding to disallowed "
                         f"special token {token!r}; pass it in allowed_special, or "
                         f"disallowed_special=() to encode it as ordinary text",
                         {"literals": [token]})
        self.token = token


class UnknownTokenId(TokserveError, ValueError):
    code = "unknown_token_id"


class InvalidUtf8(TokserveError, ValueError):
    code = "invalid_utf8"


class ReservedLiteralInContent(TokserveError, ValueError):
    code = "reserved_literal_in_content"


class TemplateError(TokserveError, ValueError):
    code = "template_error"


class UnknownTokenizer(TokserveError):
    code = "tokenizer_not_found"


class UnknownModel(TokserveError):
    """404: no model of that name in the server's table (``details["suggestions"]``)."""

    code = "unknown_model"


class ContextOverflow(TokserveError, ValueError):
    """400: the chat does not fit ``max_tokens`` (even after ``fit``)."""

    code = "context_overflow"


class TemplateNotFound(TokserveError):
    code = "template_not_found"


class PayloadTooLarge(TokserveError):
    code = "payload_too_large"


class UnsupportedMediaType(TokserveError, ValueError):
    """415: the body was not sent as ``application/json`` (this client always does)."""

    code = "unsupported_media_type"


class Unauthorized(TokserveError):
    code = "unauthorized"


class Forbidden(TokserveError):
    code = "forbidden"


class NotFound(TokserveError):
    """No such route (or /admin/* disabled)."""

    code = "not_found"


class MethodNotAllowed(TokserveError):
    code = "method_not_allowed"


class Unavailable(TokserveError):
    """503: the server is up but cannot serve yet (loading, draining, nothing loaded)."""

    code = "unavailable"


class UpgradeRequired(TokserveError):
    """426: a WebSocket route was called as plain HTTP."""

    code = "upgrade_required"


class ServerError(TokserveError):
    """5xx other than 503: a bug on the server side; quote ``request_id``."""

    code = "internal_error"


#: contract code -> exception class (codes not listed fall back by status below)
BY_CODE: dict[str, type[TokserveError]] = {
    cls.code: cls for cls in (
        InvalidRequest, InvalidJson, SpecialTokenInText, UnknownTokenId, InvalidUtf8,
        ReservedLiteralInContent, TemplateError, UnknownTokenizer, UnknownModel,
        ContextOverflow, TemplateNotFound,
        PayloadTooLarge, UnsupportedMediaType, Unauthorized, Forbidden, NotFound,
        MethodNotAllowed, UpgradeRequired, ServerError,
    )
}
BY_CODE.update({"admin_disabled": NotFound, "no_artifacts": Unavailable,
                "not_ready": Unavailable, "no_tokenizers": Unavailable,
                "input_too_large": PayloadTooLarge})


def error_from_response(status: int, body: Any, request_id: str | None = None) -> TokserveError:
    """The typed exception for an error response (``body`` already parsed, or None)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        code = {503: "unavailable"}.get(status, "http_error")
        return BY_CODE.get(code, _by_status(status))(
            status, code, f"HTTP {status} with no error body", {}, request_id)
    details = {k: v for k, v in error.items() if k not in ("code", "message")}
    code = str(error.get("code", "http_error"))
    request_id = details.get("request_id", request_id)
    cls = BY_CODE.get(code) or _by_status(status)
    return cls(status, code, str(error.get("message", "")), details, request_id)


def _by_status(status: int) -> type[TokserveError]:
    if status == 503:
        return Unavailable
    if status >= 500:
        return ServerError
    return TokserveError
