"""What the fast lane does for its own answers, done for the framework's: each carries
the request id (unless the endpoint set one), and the record gets the status, the bytes
received and sent, and the route template the framework matched (``unmatched`` for a
404, so metric labels stay bounded whatever paths clients send)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .answers import RECORD


class FrameworkAnswers:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        record = scope[RECORD]
        rid_header = (b"x-request-id", record.request_id.encode())

        async def received() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                record.bytes_in += len(message.get("body", b""))
            return message

        async def answered(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                headers = list(message.get("headers", ()))
                if not any(key.lower() == b"x-request-id" for key, _ in headers):
                    headers.append(rid_header)
                message["headers"] = headers
            elif message["type"] == "http.response.body":
                record.bytes_out += len(message.get("body", b""))
            await send(message)

        await self.app(scope, received, answered)
        route = scope.get("route")
        record.route = getattr(route, "path", None) or "unmatched"
