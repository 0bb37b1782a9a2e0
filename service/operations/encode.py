"""/encode and /count: texts to ids (or counts), with the limits they are held to.

Routes parse and validate; these functions enforce the limits, consult the cache, call
the engine and return the serialized JSON body (the handlers decide whether that runs in
a worker thread: the engine releases the GIL). They never build error responses: they
raise typed errors that ``tokserve.service.errors`` maps to statuses.

Bodies are assembled from cached per-text JSON fragments, so a cache hit neither calls
the engine nor re-serializes ids.
"""

from __future__ import annotations

from typing import Any

import orjson

from ... import errors as engine_errors
from ..errors import PayloadTooLarge, at_index
from ..runtime.cache import CacheKey
from ..runtime.registry import Entry
from ..runtime.settings import Settings
from ..runtime.state import ServiceState
from .heads import head_json
from .schemas import CountRequest, EncodeRequest


# ==== limits ==========================================================================


def _check_texts(settings: Settings, texts: list[str], field: str) -> int:
    if field == "texts" and len(texts) > settings.max_batch:
        raise PayloadTooLarge(
            f"`texts` has {len(texts)} items; the limit is {settings.max_batch} "
            f"(TOKSERVE_MAX_BATCH); split the batch",
            field="texts", limit=settings.max_batch, size=len(texts),
        )
    total = 0
    for i, text in enumerate(texts):
        n = len(text)
        if n > settings.max_text_chars:
            where = f"texts[{i}]" if field == "texts" else "text"
            raise PayloadTooLarge(
                f"`{where}` has {n} characters; the limit is {settings.max_text_chars} "
                f"(TOKSERVE_MAX_TEXT_CHARS)",
                field=where, limit=settings.max_text_chars, size=n,
            )
        total += n
    return total


def check_encode_limits(state: ServiceState, req: EncodeRequest) -> int:
    """Raise 413s for over-limit inputs; returns the total chars (for thread offload)."""
    if req.text is not None:
        n = len(req.text)
        if n > state.settings.max_text_chars:
            _check_texts(state.settings, [req.text], "text")  # raises, with the details
        return n
    return _check_texts(state.settings, list(req.texts or ()), "texts")


# ==== encode / count ==================================================================


def _encode_fragment(entry: Entry, req: EncodeRequest, text: str) -> bytes:
    tok = entry.tokenizer
    offsets = None
    if req.return_offsets:
        ids, offsets = tok.encode_with_offsets(
            text, units=req.offset_units, special_tokens=req.special_tokens,
            add_special_tokens=req.add_special_tokens,
        )
    else:
        ids = tok.encode(text, special_tokens=req.special_tokens,
                         add_special_tokens=req.add_special_tokens)
    original = len(ids)
    if req.max_tokens is not None and original > req.max_tokens:
        ids = tok.truncate(ids, req.max_tokens, side=req.truncation,
                           add_special_tokens=req.add_special_tokens)
        if offsets is not None:
            offsets = tok.truncate(offsets, req.max_tokens, side=req.truncation,
                                   add_special_tokens=req.add_special_tokens)
    result: dict[str, Any] = {"ids": ids, "count": len(ids)}
    if offsets is not None:
        result["offsets"] = offsets
    if req.return_tokens:
        tb = tok.token_bytes
        result["tokens"] = [tb(i).decode("utf-8", "replace") for i in ids]
    if req.max_tokens is not None:
        result["truncated"] = original > len(ids)
        result["original_count"] = original
    return orjson.dumps(result)


def _fragment_count(fragment: bytes) -> int:
    # Fragments end with `"count":N` or `"count":N,"offsets"...`; parse only that number.
    i = fragment.index(b'"count":') + 8
    j = i
    while 47 < fragment[j] < 58:
        j += 1
    return int(fragment[i:j])


def encode_body(state: ServiceState, entry: Entry, req: EncodeRequest,
                model: str | None = None) -> bytes:
    """Blocking: the full /encode response body for ``req`` on ``entry``."""
    cache = state.cache
    options = ("encode", req.return_offsets, req.offset_units if req.return_offsets else None,
               req.return_tokens, req.max_tokens, req.truncation if req.max_tokens else None)
    head = head_json(entry, model)  # '{"tokenizer":...,"tokenizer_hash":...'

    def one(text: str) -> bytes:
        key: CacheKey = (entry.hash, None, req.special_tokens, req.add_special_tokens,
                         options, text)
        store = False
        if cache.cacheable(text):
            hit, store = cache.lookup(key)
            if hit is not None:
                return hit
        fragment = _encode_fragment(entry, req, text)
        if store:
            cache.store(key, fragment)
        return fragment

    if req.text is not None:
        frag = one(req.text)
        state.metrics.count_tokens(entry.ref, "/encode", _fragment_count(frag))
        return head + b"," + frag[1:]
    fragments = []
    for i, text in enumerate(req.texts or ()):
        try:
            fragments.append(one(text))
        except engine_errors.EngineError as exc:
            raise at_index(exc, i) from None
    state.metrics.count_tokens(entry.ref, "/encode", sum(map(_fragment_count, fragments)))
    return head + b',"results":[' + b",".join(fragments) + b"]}"


_COUNT = ("count",)  # the options part of a count's cache key


def count_texts(state: ServiceState, entry: Entry, req: CountRequest) -> list[int]:
    """Blocking: token counts for ``text``/``texts``; equal to len(ids) of /encode.

    Cache misses of a batch are counted in one ``count_batch`` call, which merges on
    native threads without the GIL (a billing batch uses every core). If that call
    raises, the misses are counted one by one to name the offending index.
    """
    tok, cache = entry.tokenizer, state.cache
    if req.text is not None:  # the common call, kept short: it is a cold 1 KB /count's path
        text, policy, add = req.text, req.special_tokens, req.add_special_tokens
        key: CacheKey = (entry.hash, None, policy, add, _COUNT, text)
        n, store = cache.lookup(key) if cache.cacheable(text) else (None, False)
        if n is None:
            n = tok.count(text, policy, add)
            if store:
                cache.store(key, n)
        state.metrics.count_tokens(entry.ref, "/count", n)
        return [n]
    texts = list(req.texts or ())
    prefix = (entry.hash, None, req.special_tokens, req.add_special_tokens, _COUNT)
    keys: list[CacheKey | None] = [prefix + (text,) if cache.cacheable(text) else None
                                   for text in texts]
    found = [cache.lookup(key) if key is not None else (None, False) for key in keys]
    counts: list[int | None] = [n for n, _ in found]
    misses = [i for i, n in enumerate(counts) if n is None]
    if misses:
        options = {"special_tokens": req.special_tokens,
                   "add_special_tokens": req.add_special_tokens}
        try:
            if len(misses) == 1:
                fresh = [tok.count(texts[misses[0]], **options)]
            else:
                fresh = tok.count_batch([texts[i] for i in misses], **options)
        except engine_errors.EngineError:
            if req.texts is None:
                raise
            for i in misses:
                try:
                    tok.count(texts[i], **options)
                except engine_errors.EngineError as exc:
                    raise at_index(exc, i) from None
            raise
        for i, n in zip(misses, fresh):
            counts[i] = n
            if found[i][1]:
                cache.store(keys[i], n)  # type: ignore[arg-type] - stored ones have keys
    total = sum(counts)  # type: ignore[arg-type] - every slot is filled above
    state.metrics.count_tokens(entry.ref, "/count", total)
    return counts  # type: ignore[return-value]
