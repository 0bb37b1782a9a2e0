"""The POST operations, each ``async (state, raw body) -> JSON bytes``.

One implementation serves both ways a request can arrive: the FastAPI routes built from
the operation table (``operations.py``, which also lists these paths) and the
middleware's direct dispatch of these paths (``middleware._direct``), which skips the
framework's routing and middleware layers on the hot path. Both raise the same typed
exceptions and map them through ``errors.response_for``, so a request gets the same
answer whichever way it takes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .errors import dumps
from .schemas import CountRequest, DecodeRequest, EncodeRequest, RenderChatRequest
from .serving import (
    ServiceState,
    check_decode_limits,
    check_encode_limits,
    count_texts,
    decode_body,
    encode_body,
    head_dict,
    render_chat as render,
)

Handler = Callable[[ServiceState, bytes], Awaitable[bytes]]

# Templates are user-controlled Python work: always off the event loop.
_ALWAYS_OFFLOAD = 1 << 62


async def encode(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, EncodeRequest)
    entry = state.registry.resolve(req.tokenizer)
    size = check_encode_limits(state, req)
    return await state.run(lambda: encode_body(state, entry, req), size)


async def decode(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, DecodeRequest)
    entry = state.registry.resolve(req.tokenizer)
    size = check_decode_limits(state, req)
    return await state.run(lambda: decode_body(state, entry, req), size)


async def count(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, CountRequest)
    entry = state.registry.resolve(req.tokenizer)
    if req.messages is not None:
        return dumps(await state.run(lambda: render(state, entry, req, for_count=True),
                                     _ALWAYS_OFFLOAD))
    size = check_encode_limits(state, req)
    counts = await state.run(lambda: count_texts(state, entry, req), size)
    body = head_dict(entry)
    if req.text is not None:
        body["count"] = counts[0]
    else:
        body["counts"] = counts
        body["total"] = sum(counts)
    return dumps(body)


async def render_chat(state: ServiceState, raw: bytes) -> bytes:
    req = await state.parse(raw, RenderChatRequest)
    entry = state.registry.resolve(req.tokenizer)
    return dumps(await state.run(lambda: render(state, entry, req), _ALWAYS_OFFLOAD))
