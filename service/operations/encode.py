"""The service's logic between a parsed request and a response body.

Routes parse and validate; these functions enforce the limits, consult the cache, call
the engine (in a worker thread when the input is large — the engine releases the GIL)
and return the serialized JSON body. They never build error responses: they raise typed
errors that ``tokserve.service.errors`` maps to statuses.

Bodies are assembled from cached per-text JSON fragments, so a cache hit neither calls
the engine nor re-serializes ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import orjson
from anyio import to_thread
from pydantic import BaseModel

from ... import errors as engine_errors

from ..runtime.cache import ResultCache
from ..errors import PayloadTooLarge, dumps
from ..runtime.metrics import Metrics
from .parsing import parse_json
from ..runtime.registry import Entry, Registry
from .schemas import CountRequest, DecodeRequest, EncodeRequest
from ..runtime.settings import Settings

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

#: Bodies at least this large are parsed in a worker thread, one at a time. A parse holds
#: the GIL (orjson: about 0.3 s for 12 MB of small keys), so two at once gain nothing
#: while the loop waits for both; one at a time, the loop runs between them and a
#: concurrent /healthz waits for one parse at most. Below this a parse costs well under
#: a millisecond even for the worst shapes, less than the thread hop.
PARSE_OFFLOAD_BYTES = 256 * 1024


@dataclass
class ServiceState:
    """Everything a request needs; built once in the app's lifespan."""

    settings: Settings
    registry: Registry
    cache: ResultCache
    metrics: Metrics
    _parse_lane: anyio.Lock | None = field(default=None, init=False, repr=False)

    async def parse(self, raw: bytes, model: type[M], unknown: str = "refuse") -> M:
        """``parsing.parse_json`` on the loop for small bodies; large ones in a worker
        thread through a one-at-a-time lane (see ``PARSE_OFFLOAD_BYTES``)."""
        if len(raw) < PARSE_OFFLOAD_BYTES:
            return parse_json(raw, model, unknown=unknown)
        if self._parse_lane is None:  # made on first use: it belongs to the running loop
            self._parse_lane = anyio.Lock()
        async with self._parse_lane:
            return await to_thread.run_sync(lambda: parse_json(raw, model, unknown=unknown))

    async def run(self, work: Callable[[], T], size: int) -> T:
        """Run ``work`` inline when small, in a worker thread when ``size`` chars is large."""
        if size >= self.settings.thread_offload_chars:
            return await to_thread.run_sync(work)
        return work()


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


def _with_index(exc: engine_errors.EngineError, index: int,
                field: str = "texts") -> engine_errors.EngineError:
    """Name the batch item that failed, by the field the caller sent."""
    exc.details["index"] = index
    exc.details["field"] = f"{field}[{index}]"
    exc.message = f"{field}[{index}]: {exc.message}"
    return exc


# ==== encode / count ==================================================================


_ADDED: dict[str, tuple[int, int]] = {}  # tokenizer hash -> (BOS-side, EOS-side) ids added


def _added_around(tok: Any) -> tuple[int, int]:
    """How many ids ``add_special_tokens`` puts before and after a text's tokens: their
    spans are empty, at the start and at the end of the text (the post-processor's rule),
    so one encode of a one-character text tells them apart."""
    sides = _ADDED.get(tok.hash)
    if sides is None:
        _, spans = tok.encode_with_offsets("x", units="char", special_tokens="text",
                                           add_special_tokens=True)
        before = next((i for i, sp in enumerate(spans) if tuple(sp) != (0, 0)), len(spans))
        after = sum(1 for sp in spans[before:] if tuple(sp) == (1, 1))
        sides = _ADDED[tok.hash] = (before, after)
    return sides


def _cut(seq: list, max_tokens: int, side: str, around: tuple[int, int]) -> list:
    """``seq`` (ids, offsets or tokens of one text) cut to ``max_tokens``: the text's own
    tokens go, from the end (``right``) or the start (``left``); those ``around`` them
    (BOS/EOS from ``add_special_tokens``) stay while there is room for them."""
    before, after = around
    if max_tokens < before + after:
        return seq[:max_tokens] if side == "right" else seq[len(seq) - max_tokens:]
    keep = max_tokens - before - after
    body = seq[before:len(seq) - after]
    body = body[:keep] if side == "right" else body[len(body) - keep:]
    return seq[:before] + body + seq[len(seq) - after:]


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
        around = _added_around(tok) if req.add_special_tokens else (0, 0)
        ids = _cut(ids, req.max_tokens, req.truncation, around)
        if offsets is not None:
            offsets = _cut(offsets, req.max_tokens, req.truncation, around)
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
        key = (entry.hash, None, req.special_tokens, req.add_special_tokens, options, text)
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
            raise _with_index(exc, i) from None
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
        key = (entry.hash, None, policy, add, _COUNT, text)
        n, store = cache.lookup(key) if cache.cacheable(text) else (None, False)
        if n is None:
            n = tok.count(text, policy, add)
            if store:
                cache.store(key, n)
        state.metrics.count_tokens(entry.ref, "/count", n)
        return [n]
    texts = list(req.texts or ())
    prefix = (entry.hash, None, req.special_tokens, req.add_special_tokens, _COUNT)
    keys = [prefix + (text,) if cache.cacheable(text) else None for text in texts]
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
                    raise _with_index(exc, i) from None
            raise
        for i, n in zip(misses, fresh):
            counts[i] = n
            if found[i][1]:
                cache.store(keys[i], n)  # type: ignore[arg-type] - stored ones have keys
    total = sum(counts)  # type: ignore[arg-type] - every slot is filled above
    state.metrics.count_tokens(entry.ref, "/count", total)
    return counts  # type: ignore[return-value]


def check_encode_limits(state: ServiceState, req: EncodeRequest) -> int:
    """Raise 413s for over-limit inputs; returns the total chars (for thread offload)."""
    if req.text is not None:
        n = len(req.text)
        if n > state.settings.max_text_chars:
            _check_texts(state.settings, [req.text], "text")  # raises, with the details
        return n
    return _check_texts(state.settings, list(req.texts or ()), "texts")


def head_dict(entry: Entry, model: str | None = None) -> dict[str, Any]:
    """What every response starts with: the tokenizer that answered, and the model the
    request named it by (only when it named one)."""
    head = {"tokenizer": entry.ref, "tokenizer_hash": entry.hash}
    if model is not None:
        head["model"] = model
    return head


_HEADS: dict[tuple[str, str], bytes] = {}  # (ref, hash) -> head_json(entry); one per version


def head_json(entry: Entry, model: str | None = None) -> bytes:
    """``head_dict`` serialized without its closing brace, for bodies assembled as bytes
    (``head + b',"count":5}'``); made once per version when no model is echoed."""
    if model is not None:
        return dumps(head_dict(entry, model))[:-1]
    key = (entry.ref, entry.hash)
    head = _HEADS.get(key)
    if head is None:
        head = _HEADS[key] = dumps(head_dict(entry))[:-1]
    return head


# ==== decode ==========================================================================


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
            raise (_with_index(exc, i, "batch_ids") if req.batch_ids is not None
                   else exc) from None
    body = head_dict(entry, model)
    if req.ids is not None:
        body["text"] = texts[0]
    else:
        body["texts"] = texts
    return dumps(body)


def check_decode_limits(state: ServiceState, req: DecodeRequest) -> int:
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
