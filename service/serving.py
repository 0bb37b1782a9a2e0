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
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from anyio import to_thread

from .. import errors as engine_errors

from .cache import ResultCache
from .errors import ChatUnavailable, PayloadTooLarge, TemplateNotFound, dumps
from .metrics import Metrics
from .registry import Entry, Registry
from .schemas import CountRequest, DecodeRequest, EncodeRequest, RenderChatRequest
from .settings import Settings

T = TypeVar("T")


@dataclass
class ServiceState:
    """Everything a request needs; built once in the app's lifespan."""

    settings: Settings
    registry: Registry
    cache: ResultCache
    metrics: Metrics

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


def _with_index(exc: engine_errors.EngineError, index: int) -> engine_errors.EngineError:
    exc.details["index"] = index
    exc.message = f"texts[{index}]: {exc.message}"
    return exc


# ==== encode / count ==================================================================


def _encode_fragment(entry: Entry, req: EncodeRequest, text: str) -> bytes:
    tok = entry.tokenizer
    result: dict[str, Any]
    if req.return_offsets:
        ids, offsets = tok.encode_with_offsets(
            text, units=req.offset_units, special_tokens=req.special_tokens,
            add_special_tokens=req.add_special_tokens,
        )
        result = {"ids": ids, "count": len(ids), "offsets": offsets}
    else:
        ids = tok.encode(text, special_tokens=req.special_tokens,
                         add_special_tokens=req.add_special_tokens)
        result = {"ids": ids, "count": len(ids)}
    if req.return_tokens:
        tb = tok.token_bytes
        result["tokens"] = [tb(i).decode("utf-8", "replace") for i in ids]
    return orjson.dumps(result)


def _fragment_count(fragment: bytes) -> int:
    # Fragments end with `"count":N` or `"count":N,"offsets"...`; parse only that number.
    i = fragment.index(b'"count":') + 8
    j = i
    while 47 < fragment[j] < 58:
        j += 1
    return int(fragment[i:j])


def encode_body(state: ServiceState, entry: Entry, req: EncodeRequest) -> bytes:
    """Blocking: the full /encode response body for ``req`` on ``entry``."""
    cache = state.cache
    options = ("encode", req.return_offsets, req.offset_units if req.return_offsets else None,
               req.return_tokens)
    head = b'{"tokenizer":' + orjson.dumps(entry.ref) + b',"tokenizer_hash":' + \
        orjson.dumps(entry.hash)

    def one(text: str) -> bytes:
        key = (entry.hash, None, req.special_tokens, req.add_special_tokens, options, text)
        use_cache = cache.cacheable(text)
        if use_cache:
            hit = cache.get(key)
            if hit is not None:
                return hit
        fragment = _encode_fragment(entry, req, text)
        if use_cache:
            cache.put(key, fragment)
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


def count_texts(state: ServiceState, entry: Entry, req: CountRequest) -> list[int]:
    """Blocking: token counts for ``text``/``texts``; equal to len(ids) of /encode.

    Cache misses of a batch are counted in one ``count_batch`` call, which merges on
    native threads without the GIL (a billing batch uses every core). If that call
    raises, the misses are counted one by one to name the offending index.
    """
    tok, cache = entry.tokenizer, state.cache
    texts = [req.text] if req.text is not None else list(req.texts or ())
    counts: list[int | None] = []
    misses: list[int] = []
    for i, text in enumerate(texts):
        key = (entry.hash, None, req.special_tokens, req.add_special_tokens, ("count",), text)
        counts.append(cache.get(key) if cache.cacheable(text) else None)
        if counts[-1] is None:
            misses.append(i)
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
            if cache.cacheable(texts[i]):
                key = (entry.hash, None, req.special_tokens, req.add_special_tokens,
                       ("count",), texts[i])
                cache.put(key, n)
    total = sum(counts)  # type: ignore[arg-type] - every slot is filled above
    state.metrics.count_tokens(entry.ref, "/count", total)
    return counts  # type: ignore[return-value]


def _check_chat_texts(settings: Settings, req: RenderChatRequest | CountRequest) -> None:
    """The per-text limit applies to chat input too: each caller string (content,
    tool arguments, tools, template_kwargs), as /encode applies it to each text."""
    from .chat.literals import caller_strings

    limit = settings.max_text_chars
    for index, fld, s in caller_strings(list(req.messages or ()), req.tools,
                                        req.template_kwargs):
        if len(s) > limit:
            where = f"messages[{index}].{fld}" if index is not None else fld
            raise PayloadTooLarge(
                f"`{where}` has a string of {len(s)} characters; the limit is {limit} "
                f"(TOKSERVE_MAX_TEXT_CHARS)",
                field=where, limit=limit, size=len(s),
            )


def check_encode_limits(state: ServiceState, req: EncodeRequest) -> int:
    """Raise 413s for over-limit inputs; returns the total chars (for thread offload)."""
    if req.text is not None:
        return _check_texts(state.settings, [req.text], "text")
    return _check_texts(state.settings, list(req.texts or ()), "texts")


def head_dict(entry: Entry) -> dict[str, Any]:
    return {"tokenizer": entry.ref, "tokenizer_hash": entry.hash}


# ==== decode ==========================================================================


def decode_body(state: ServiceState, entry: Entry, req: DecodeRequest) -> bytes:
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
            raise (_with_index(exc, i) if req.batch_ids is not None else exc) from None
    body = head_dict(entry)
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


# ==== chat ============================================================================


def select_template(entry: Entry, name: str | None) -> tuple[str, str, str]:
    """``(name, source, "sha256:...")`` of the requested (or default) chat template.

    Raises:
        TemplateNotFound: the tokenizer has no chat template, or none by that name.
    """
    available = sorted(entry.chat_templates)
    if not available:
        raise TemplateNotFound(
            f"tokenizer {entry.ref} has no chat template; pick a tokenizer that has one "
            f"(see GET /tokenizers)",
            tokenizer=entry.ref, available=[],
        )
    chosen = name if name is not None else entry.default_chat_template
    if chosen is None or chosen not in entry.chat_templates:
        what = f"no chat template named {chosen!r}" if name is not None else \
            "no default chat template"
        raise TemplateNotFound(
            f"tokenizer {entry.ref} has {what}; available: {available} "
            f"(pass \"template\": one of them)",
            tokenizer=entry.ref, template=name, available=available,
        )
    return chosen, entry.chat_templates[chosen], entry.chat_template_hashes[chosen]


def render_chat(state: ServiceState, entry: Entry, req: RenderChatRequest | CountRequest,
                *, for_count: bool = False) -> dict[str, Any]:
    """Blocking: render ``req.messages`` with the selected template (tokserve.service.chat)."""
    _, source, thash = select_template(entry, req.template)
    try:
        from .chat import render_chat as _render  # the chat helper's module
    except ImportError as exc:
        raise ChatUnavailable(f"chat rendering is not available in this build ({exc})") from None
    _check_chat_texts(state.settings, req)
    want_offsets = bool(getattr(req, "return_offsets", False)) and not for_count
    want_mask = bool(getattr(req, "return_assistant_mask", False)) and not for_count
    result = _render(
        entry.tokenizer, source, template_hash=thash, messages=req.messages,
        add_generation_prompt=req.add_generation_prompt,
        continue_final_message=req.continue_final_message, tools=req.tools,
        template_kwargs=req.template_kwargs, reserved_literals=req.reserved_literals,
        return_ids=True, return_offsets=want_offsets, return_assistant_mask=want_mask,
    )
    ids = list(result.ids or [])
    state.metrics.count_tokens(entry.ref, "/count" if for_count else "/render_chat", len(ids))
    if for_count:
        return {**head_dict(entry), "template_hash": thash, "count": len(ids)}
    body: dict[str, Any] = {**head_dict(entry), "template_hash": thash, "text": result.text}
    if getattr(req, "return_ids", True):
        body["ids"] = ids
    body["count"] = len(ids)
    if want_offsets:
        body["offsets"] = result.offsets
    if want_mask:
        body["assistant_spans"] = result.assistant_spans
        body["labels"] = result.labels
        if getattr(result, "mask_rule", None) is not None:
            body["mask_rule"] = result.mask_rule
    return body
