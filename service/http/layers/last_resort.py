"""The last resort: an exception that escapes the framework before anything was answered
becomes a 500 with the request id (logged with its traceback server-side, never sent to
the client). After the answer started there is nothing left to send: FastAPI's
``ServerErrorMiddleware`` has already sent our 500 (``errors.response_for``) and logged
it before re-raising."""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import internal_error_response
from .answers import REQUEST_ID, hold_head

log = logging.getLogger("tokserve.http")


class LastResort:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except ClientDisconnect:
            raise
        except Exception:
            if started:
                return
            rid = scope[REQUEST_ID]
            log.exception("unhandled error on %s (request_id=%s)", scope["path"], rid)
            hold_head(scope)
            await internal_error_response(rid)(scope, receive, send)
