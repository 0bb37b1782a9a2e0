"""What the layers share: the scope keys they pass things in, one header read, and how
a layer sends an answer it wrote itself (a refusal, the last-resort 500)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..one_write import EXTENSION

#: Scope key of the request's id (a ``str``; errors and endpoints read it too).
REQUEST_ID = "tokserve.request_id"
#: Scope key of the request's ``telemetry.RequestRecord``.
RECORD = "tokserve.record"


def header(scope: Scope, name: bytes) -> bytes | None:
    """The value of the request header ``name`` (lower-case; the last one when it is
    sent more than once), or None."""
    found = None
    for key, value in scope["headers"]:
        if key == name:
            found = value
    return found


def hold_head(scope: Scope) -> None:
    """Ask the server to send the response head with the body that follows it at once,
    in one write (``one_write``; a no-op under a server that does not offer it)."""
    extensions = scope.get("extensions")
    if extensions is not None:
        hold = extensions.get(EXTENSION)
        if hold is not None:
            hold()


async def answer(response: Response, scope: Scope, receive: Receive, send: Send) -> None:
    """Send ``response`` with the request id header, its status and size in the record,
    head and body in one write."""
    record = scope[RECORD]
    response.headers["x-request-id"] = record.request_id
    record.status, record.bytes_out = response.status_code, len(response.body)
    hold_head(scope)  # a HEAD answer's head goes alone when the response completes
    await response(scope, receive, send)
