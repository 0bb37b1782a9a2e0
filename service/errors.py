"""The service's one error table.

Service-level exceptions live here next to the mapping from every exception type
(engine's and ours) to an HTTP status and a stable code. Routes raise; they never build
error responses themselves.
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """Base class: ``code`` is stable, ``details`` is merged into the error JSON body."""

    code = "service_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class TokenizerNotFound(ServiceError):
    code = "tokenizer_not_found"


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


class Unauthorized(ServiceError):
    code = "unauthorized"
