"""Streaming detokenization over HTTP: ``/decode/stream`` as a WebSocket and as NDJSON.

A gateway turns a model's token stream into text deltas. Both transports speak the same
messages (JSON objects), one ``StreamSession`` behind them (``tokserve.DecodeStream``
in the engine does the decoding: it never sends part of a character, and the deltas
joined are exactly ``/decode`` of all the ids):

client -> server
    ``{"tokenizer" | "model", "skip_special_tokens", "errors"}``: options, in the first
    message only (all optional; they may come with the first ``ids``);
    ``{"ids": [int, ...]}``: the next ids, as many per message as the caller has;
    ``{"flush": true}`` (WebSocket): the stream is over (NDJSON: the end of the body).
server -> client
    ``{"text": "..."}``: each non-empty delta, as soon as the ids complete it;
    ``{"done": true, "text": "...", "ids": N, "tokenizer", "tokenizer_hash"[, "model"]}``:
    after the flush, with what was left;
    ``{"error": {"code", "message", ...}}``: the contract's envelope; the stream ends
    (an unknown id, invalid UTF-8 under ``strict``, a malformed message).

The WebSocket is closed with 1000 after ``done`` and 1008 after an error frame. The
NDJSON answer is a 200 ``application/x-ndjson`` stream (lines as the body's lines
arrive; HTTP/1.1 allows the answer to start while the request is still uploading) whose
errors are lines too, since its status is sent before the first id is read.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field, StrictBool, StrictInt
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from ... import errors as engine_errors
from ...decode_stream import DecodeStream
from ..errors import (InvalidRequest, PayloadTooLarge, ServiceError, dumps, error_body,
                     response_for)
from ..runtime.state import ServiceState, state_of
from .heads import head_dict
from .parsing import parse_json
from .schemas import _Targeted

log = logging.getLogger("tokserve.stream")

#: Media types the NDJSON route reads (one JSON object per line).
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json")


class StreamMessage(_Targeted):
    """One client message of ``/decode/stream`` (options only in the first)."""

    ids: list[StrictInt] | None = Field(default=None, description="The next ids.")
    skip_special_tokens: StrictBool | None = None
    errors: str | None = Field(default=None, pattern="^(replace|strict)$",
                               description='"replace" (default) or "strict"')
    flush: StrictBool = Field(default=False, description="The stream is over.")


class StreamSession:
    """One stream: options, then ids; yields server messages (dicts)."""

    def __init__(self, state: ServiceState) -> None:
        self.state = state
        self.stream: DecodeStream | None = None
        self.head: dict[str, Any] = {}
        self.done = False

    def receive(self, raw: bytes) -> list[dict[str, Any]]:
        """Handle one client message (raw JSON); returns the messages to send.

        Raises:
            ServiceError / EngineError: the stream's error (sent as a frame, then ended).
        """
        if len(raw) > self.state.settings.max_body_bytes:
            raise PayloadTooLarge(f"a stream message is {len(raw)} bytes; the limit is "
                                  f"{self.state.settings.max_body_bytes}",
                                  limit=self.state.settings.max_body_bytes, size=len(raw))
        message = parse_json(raw, StreamMessage)
        if self.done:
            raise InvalidRequest("the stream was flushed; open a new one")
        options = {k for k in ("tokenizer", "model", "skip_special_tokens", "errors")
                   if getattr(message, k) is not None}
        if self.stream is None:
            entry, model = self.state.registry.lookup(message.tokenizer, message.model)
            self.stream = DecodeStream(entry.tokenizer,
                                       skip_special_tokens=bool(message.skip_special_tokens),
                                       errors=message.errors or "replace")  # type: ignore
            self.head = head_dict(entry, model)
        elif options:
            raise InvalidRequest(f"options ({', '.join(sorted(options))}) go in the first "
                                 f"message of a stream only")
        out: list[dict[str, Any]] = []
        if message.ids:
            limit = self.state.settings.max_decode_ids
            if len(message.ids) > limit:
                raise PayloadTooLarge(f"a stream message has {len(message.ids)} ids; the "
                                      f"limit is {limit} (TOKSERVE_MAX_DECODE_IDS)",
                                      field="ids", limit=limit, size=len(message.ids))
            text = self.stream.step_many(message.ids)
            if text:
                out.append({"text": text})
        if message.flush:
            out.append(self.finish())
        return out

    def finish(self) -> dict[str, Any]:
        """The closing message (flush)."""
        if self.stream is None:  # nothing was sent: a stream on the default tokenizer
            self.receive(b"{}")
        assert self.stream is not None
        self.done = True
        return {"done": True, "text": self.stream.flush(), "ids": self.stream.ids,
                **self.head}


def _error_frame(exc: BaseException, rid: str | None) -> dict[str, Any]:
    if isinstance(exc, (ServiceError, engine_errors.EngineError)):
        return error_body(exc.code, exc.message, request_id=rid, **exc.details)
    log.exception("unhandled error in a decode stream (request_id=%s)", rid, exc_info=exc)
    return error_body("internal_error", "internal server error; quote the request_id when "
                      "reporting it", request_id=rid)


# ==== WebSocket =========================================================================


async def websocket_endpoint(websocket: WebSocket) -> None:
    """``ws://.../decode/stream``: text frames in and out (see the module docstring)."""
    state = state_of(websocket.app)
    rid = websocket.scope.get("tokserve.request_id")
    await websocket.accept()
    session = StreamSession(state)
    try:
        while True:
            raw = await _receive(websocket)
            try:
                frames = session.receive(raw)
            except Exception as exc:  # noqa: BLE001 - every error ends the stream as a frame
                await websocket.send_text(dumps(_error_frame(exc, rid)).decode())
                await websocket.close(code=1008)
                return
            for frame in frames:
                await websocket.send_text(dumps(frame).decode())
            if session.done:
                await websocket.close(code=1000)
                return
    except WebSocketDisconnect:
        return


async def _receive(websocket: WebSocket) -> bytes:
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    data = message.get("bytes")
    if data is None:
        data = (message.get("text") or "").encode("utf-8", "surrogatepass")
    return data


# ==== NDJSON ============================================================================


class NdjsonEndpoint:
    """``POST /decode/stream`` as a raw ASGI app: it reads the body line by line while
    it answers, which a buffered request/response endpoint cannot do. A body sent as
    ``application/json`` is one message, checked before the answer starts (so a bad one
    is a 4xx like any JSON route's); NDJSON lines are checked as they arrive."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = state_of(scope["app"])
        rid = scope.get("tokserve.request_id")
        session = StreamSession(state)
        kind = dict(scope["headers"]).get(b"content-type", b"").decode("latin-1")
        kind = kind.split(";")[0].strip().lower()
        if kind == "application/json" or kind.endswith("+json"):
            await self._one_message(session, scope, receive, send, rid)
            return
        await _start(send)

        async def emit(frames: list[dict[str, Any]]) -> None:
            if frames:
                await send({"type": "http.response.body", "more_body": True,
                            "body": b"".join(dumps(f) + b"\n" for f in frames)})

        pending = b""
        more = True
        try:
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                more = message.get("more_body", False)
                pending += message.get("body", b"")
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        await emit(session.receive(line))
                    if session.done:
                        break
                if session.done:
                    break
            if pending.strip() and not session.done:
                await emit(session.receive(pending))
            if not session.done:
                await emit([session.finish()])
        except Exception as exc:  # noqa: BLE001 - after the status, errors are lines
            await emit([_error_frame(exc, rid)])
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def _one_message(session: StreamSession, scope: Scope, receive: Receive,
                           send: Send, rid: str | None) -> None:
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        try:
            frames = session.receive(b"".join(chunks))
            if not session.done:
                frames.append(session.finish())
        except Exception as exc:  # noqa: BLE001 - mapped like every JSON route's errors
            await response_for(exc, scope["path"], rid or "")(scope, receive, send)
            return
        await _start(send)
        await send({"type": "http.response.body",
                    "body": b"".join(dumps(f) + b"\n" for f in frames)})


async def _start(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/x-ndjson"), (b"cache-control", b"no-store")]})
