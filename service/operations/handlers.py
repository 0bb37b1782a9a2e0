"""The POST operations, each ``async (state, raw body) -> JSON bytes``.

One implementation serves both ways a request can arrive: the FastAPI routes built from
the operation table (``table.py``, which also lists these paths) and the fast lane's
dispatch of these paths (``http/layers/fast_lane.py``), which skips the framework's
routing and middleware layers on the hot path. Both raise the same typed
exceptions and map them through ``errors.response_for``, so a request gets the same
answer whichever way it takes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..errors import dumps
from ..runtime.state import ServiceState
from .conversation import chat_count_body, render_chat_body
from .decode import check_decode_limits, decode_body
from .encode import check_encode_limits, count_texts, encode_body
from .heads import head_dict, head_json
from .schemas import CountRequest, DecodeRequest, EncodeRequest, RenderChatRequest


@dataclass(frozen=True)
class Reply:
    """A handler's answer when it is not a plain 200 JSON body (the compat routes answer
    errors in their project's shape, and add headers)."""

    body: bytes
    status: int = 200
    headers: tuple[tuple[bytes, bytes], ...] = ()


Handler = Callable[[ServiceState, bytes], Awaitable["bytes | Reply"]]

# Templates are user-controlled Python work: always off the event loop.
_ALWAYS_OFFLOAD = 1 << 62


async def encode(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, EncodeRequest)
    entry, model = state.registry.lookup(req.tokenizer, req.model)
    size = check_encode_limits(state, req)
    return await state.run(lambda: encode_body(state, entry, req, model), size)


async def decode(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, DecodeRequest)
    entry, model = state.registry.lookup(req.tokenizer, req.model)
    size = check_decode_limits(state, req)
    return await state.run(lambda: decode_body(state, entry, req, model), size)


async def count(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, CountRequest)
    entry, model = state.registry.lookup(req.tokenizer, req.model)
    if req.messages is not None:
        return await state.run(lambda: chat_count_body(state, entry, req, model),
                               _ALWAYS_OFFLOAD)
    size = check_encode_limits(state, req)
    counts = await state.run(lambda: count_texts(state, entry, req), size)
    limit = req.max_tokens
    if req.text is not None and limit is None:  # the common answer, assembled as bytes
        return head_json(entry, model) + b',"count":%d}' % counts[0]
    body = head_dict(entry, model)
    kept = counts if limit is None else [min(n, limit) for n in counts]
    if req.text is not None:
        body["count"] = kept[0]
        if limit is not None:
            body["truncated"], body["original_count"] = counts[0] > limit, counts[0]
    else:
        body["counts"] = kept
        body["total"] = sum(kept)
        if limit is not None:
            body["truncated"] = [n > limit for n in counts]
            body["original_counts"] = counts
    return dumps(body)


async def render_chat(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, RenderChatRequest)
    entry, model = state.registry.lookup(req.tokenizer, req.model)
    return await state.run(lambda: render_chat_body(state, entry, req, model), _ALWAYS_OFFLOAD)
