"""The body limit (``max_body_bytes``), enforced before anything is parsed.

A ``Content-Length`` over the limit is answered 413 without reading a byte (and with
``Connection: close``: the body is left unread). A declared length at or under it bounds
the body, since the server frames the body by it. A body without one (chunked) is
counted as it streams, and the read that crosses the limit raises ``PayloadTooLarge``
(413, in the route's error shape) before the rest arrives. The fast lane reads its
bodies with ``read_rest`` and ``too_large`` from here, so the limit lives in one module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import PayloadTooLarge, error_response
from ...runtime.telemetry import RequestRecord
from .answers import RECORD, REQUEST_ID, answer


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"request body exceeds the limit of {limit} bytes (TOKSERVE_MAX_BODY_BYTES); "
        f"split the batch or the text",
        limit=limit,
    )


async def read_rest(first: bytes, receive: Receive, limit: int,
                    record: RequestRecord) -> bytes:
    """The whole body of a request whose first chunk is ``first``, refused with
    ``PayloadTooLarge`` as soon as it passes ``limit``."""
    chunks = [first]
    seen = len(first)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > limit:
            record.bytes_in = seen
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class BodyLimit:
    """``renderers``: path -> its error shape, where it is not the contract's."""

    def __init__(self, app: ASGIApp, *, limit: int,
                 renderers: Mapping[str, Callable[..., object]]) -> None:
        self.app = app
        self.limit = limit
        # A Content-Length with fewer digits than the limit is under it (no int() needed).
        self._digits = len(str(limit))
        self._renderers = renderers

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        length = None
        for key, value in scope["headers"]:  # answers.header, inline (the hot path)
            if key == b"content-length":
                length = value
        if length is None:
            return self.app(scope, self._counted(receive, scope[RECORD]), send)
        if len(length) >= self._digits:
            try:
                n = int(length)
            except ValueError:
                n = -1
            if n > self.limit:
                path = scope["path"]
                refusal = self._renderers.get(path, error_response)(
                    413, PayloadTooLarge.code,
                    f"request body is {n} bytes; the limit is {self.limit} "
                    f"(TOKSERVE_MAX_BODY_BYTES); split the batch or the text",
                    {"Connection": "close"}, request_id=scope[REQUEST_ID],
                    limit=self.limit, size=n)
                return answer(refusal, scope, receive, send)
        return self.app(scope, receive, send)

    def _counted(self, receive: Receive, record: RequestRecord) -> Receive:
        """``receive`` that stops a body at the limit, before it is all read."""
        limit = self.limit
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    record.bytes_in = seen
                    raise too_large(limit)
            return message

        return counted
