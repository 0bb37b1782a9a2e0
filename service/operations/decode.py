"""/decode: ids back to text, with the limits a decode request is held to.

Blocking code between a parsed request and a response body (the handler decides
whether it runs in a worker thread); errors are raised typed, never answered here.
"""

from __future__ import annotations

from ... import errors as engine_errors
from ..errors import PayloadTooLarge, at_index, dumps
from ..runtime.registry import Entry
from ..runtime.state import ServiceState
from .heads import head_dict
from .schemas import DecodeRequest


def check_decode_limits(state: ServiceState, req: DecodeRequest) -> int:
    """Raise 413s for too many rows or ids; returns ~chars of output (thread offload)."""
    settings = state.settings
    if req.batch_ids is not None and len(req.batch_ids) > settings.max_batch:
        raise PayloadTooLarge(
            f"`batch_ids` has {len(req.batch_ids)} rows; the limit is {settings.max_batch} "
            f"(TOKSERVE_MAX_BATCH)",
            field="batch_ids", limit=settings.max_batch, size=len(req.batch_ids),
        )
    n = len(req.ids) if req.ids is not None else sum(map(len, req.batch_ids or ()))
    if n > settings.max_decode_ids:
        raise PayloadTooLarge(
            f"decode request has {n} ids; the limit is {settings.max_decode_ids} "
            f"(TOKSERVE_MAX_DECODE_IDS)",
            field="ids", limit=settings.max_decode_ids, size=n,
        )
    return n * 4  # ~chars of output, for the thread-offload decision


def decode_body(state: ServiceState, entry: Entry, req: DecodeRequest,
                model: str | None = None) -> bytes:
    """Blocking: the /decode response body."""
    tok = entry.tokenizer
    rows = [req.ids] if req.ids is not None else list(req.batch_ids or ())
    texts = []
    for i, ids in enumerate(rows):
        # The engine validates ids (any integer, however large, that is not an id is a
        # typed UnknownTokenId listing them all), so there is no second check here.
        try:
            texts.append(tok.decode(ids, errors=req.errors,
                                    skip_special_tokens=req.skip_special_tokens))
        except engine_errors.EngineError as exc:
            raise (at_index(exc, i, "batch_ids") if req.batch_ids is not None
                   else exc) from None
    body = head_dict(entry, model)
    if req.ids is not None:
        body["text"] = texts[0]
    else:
        body["texts"] = texts
    return dumps(body)
