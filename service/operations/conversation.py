"""Chat requests between a parsed body and a response: /render_chat and chat /count.

For each request, in order:

1. the per-text limit on every caller string (413 naming ``messages[i].field``);
2. how the chat becomes tokens: the artifact's chat template (``template`` or its
   default), or, for OpenAI's encodings (o200k_base, cl100k_base: OpenAI publishes no
   template), a chat /count by OpenAI's documented accounting (``chat/openai_format.py``;
   /render_chat still needs a template there);
3. the result cache: same bounded cache as /encode and /count, keyed on the tokenizer
   hash, the template hash (or the accounting), every option that changes the answer,
   and the request's messages/tools/template_kwargs exactly as sent (their order
   matters to templates, so they are not normalized). A template that calls
   ``strftime_now`` adds today's date to the key; a render that read the time of day is
   never stored;
4. ``max_tokens``: with ``fit: "drop_oldest"`` whole oldest turns are dropped until the
   chat fits (``chat/fitting.py``), else a longer chat is 400 ``context_overflow``;
5. the response body (``return_message_counts``: ``chat/attribution.py``).

Blocking: handlers run these in a worker thread (templates are caller-controlled work).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

from ..errors import ContextOverflow, PayloadTooLarge, TemplateNotFound, dumps, shorten
from ..runtime.cache import CacheKey
from ..runtime.registry import Entry
from ..runtime.settings import Settings
from ..runtime.state import ServiceState
from .chat import ChatInput, literals, openai_format, render
from .chat.fitting import drop_oldest
from .heads import head_dict
from .schemas import CountRequest, RenderChatRequest

ChatRequest = RenderChatRequest | CountRequest


def render_chat_body(state: ServiceState, entry: Entry, req: RenderChatRequest,
                     model: str | None = None) -> bytes:
    """The /render_chat response body."""
    body, count = _answer(state, entry, req, model, for_count=False)
    state.metrics.count_tokens(entry.ref, "/render_chat", count)
    return dumps(head_dict(entry, model))[:-1] + b"," + body[1:]


def chat_count_body(state: ServiceState, entry: Entry, req: CountRequest,
                    model: str | None = None) -> bytes:
    """The chat /count response body: always ``len(ids)`` of the same /render_chat
    request where the tokenizer has a template."""
    body, count = _answer(state, entry, req, model, for_count=True)
    state.metrics.count_tokens(entry.ref, "/count", count)
    return dumps(head_dict(entry, model))[:-1] + b"," + body[1:]


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
        what = f"no chat template named {shorten(chosen)!r}" if name is not None else \
            "no default chat template"
        raise TemplateNotFound(
            f"tokenizer {entry.ref} has {what}; available: {available} "
            f"(pass \"template\": one of them)",
            tokenizer=entry.ref, template=name, available=available,
        )
    return chosen, entry.chat_templates[chosen], entry.chat_template_hashes[chosen]


def uses_openai_format(entry: Entry, req: ChatRequest, for_count: bool) -> bool:
    """Whether a chat /count on ``entry`` follows OpenAI's documented accounting."""
    return (for_count and req.template is None and not entry.chat_templates
            and entry.manifest.get("preset") in openai_format.ENCODINGS)


# ==== the answer, cached ===============================================================


def _answer(state: ServiceState, entry: Entry, req: ChatRequest, model: str | None,
            for_count: bool) -> tuple[bytes, int]:
    """The body without its head, serialized (what the cache holds), and its count."""
    _check_chat_texts(state.settings, req)
    if uses_openai_format(entry, req, for_count):
        accounting = openai_format.accounting_for(entry.manifest["preset"], model)
        how: tuple[Any, ...] = (openai_format.METHOD, accounting)
        source = template_hash = None
    else:
        _, source, template_hash = select_template(entry, req.template)
        how = ("template", template_hash)
    key = _cache_key(state, entry, how, req, for_count, source)
    store = False
    if key is not None:
        hit, store = state.cache.lookup(key, kind="chat")
        if hit is not None:
            return hit
    if source is None:
        body, clock = _openai_count(entry, req, accounting), None
    else:
        body, clock = _rendered(entry, req, source, template_hash, for_count)
    answer = (dumps(body), body["count"])
    if store and clock != "time":
        state.cache.store(key, answer)
    return answer


def _cache_key(state: ServiceState, entry: Entry, how: tuple[Any, ...], req: ChatRequest,
               for_count: bool, source: str | None) -> CacheKey | None:
    """The chat's key (None: too long to cache): its options are every request field
    that changes the answer besides the chat itself, and today's date when the template
    can read it."""
    chat = dumps([req.messages, req.tools, req.template_kwargs]).decode("utf-8")
    if not state.cache.cacheable(chat):
        return None
    today = date.today().isoformat() if source and "strftime_now" in source else None
    options = ("chat", today, for_count, req.add_generation_prompt,
               req.continue_final_message, req.return_message_counts, req.max_tokens, req.fit,
               *((False, False, False) if for_count else
                 (req.return_ids, req.return_offsets, req.return_assistant_mask)))
    return (entry.hash, how, req.reserved_literals, False, options, chat)


# ==== template path ====================================================================


def _rendered(entry: Entry, req: ChatRequest, source: str, template_hash: str,
              for_count: bool) -> tuple[dict[str, Any], str | None]:
    """Render (fitting first when asked); returns the body without its head, and what
    the template read of the clock."""
    messages = list(req.messages or ())
    want_offsets = not for_count and req.return_offsets
    want_mask = not for_count and req.return_assistant_mask
    chat = ChatInput(source, messages, template_hash=template_hash, tools=req.tools,
                     template_kwargs=req.template_kwargs,
                     add_generation_prompt=req.add_generation_prompt,
                     continue_final_message=req.continue_final_message,
                     reserved_literals=req.reserved_literals, return_offsets=want_offsets,
                     return_assistant_mask=want_mask,
                     return_message_counts=req.return_message_counts)
    tok = entry.tokenizer

    def tokens(indices: list[int]) -> int:
        """The ids of the chat made of these messages (for fitting: ids only)."""
        subset = replace(chat, messages=[messages[i] for i in indices], return_offsets=False,
                         return_assistant_mask=False, return_message_counts=False)
        return len(render(tok, subset).ids or ())

    kept, dropped = _fit(req, messages, tokens)
    result = render(tok, replace(chat, messages=[messages[i] for i in kept]))
    ids = list(result.ids or [])
    body: dict[str, Any] = {"template_hash": template_hash}
    if for_count:
        body.update(count=len(ids), method="chat_template", exact=True)
    else:
        body["text"] = result.text
        if req.return_ids:
            body["ids"] = ids
        body["count"] = len(ids)
        if want_offsets:
            body["offsets"] = result.offsets
        if want_mask:
            body["assistant_spans"] = result.assistant_spans
            body["labels"] = result.labels
            if result.mask_rule is not None:
                body["mask_rule"] = result.mask_rule
    if req.return_message_counts:
        _add_breakdown(body, messages, kept, result.message_tokens or [],
                       result.tools_tokens or 0, result.template_tokens or 0)
    if dropped is not None:
        body["dropped_messages"] = dropped
    return body, result.clock


# ==== OpenAI accounting path ===========================================================


def _openai_count(entry: Entry, req: ChatRequest,
                  accounting: openai_format.Accounting) -> dict[str, Any]:
    messages = list(req.messages or ())
    tok = entry.tokenizer
    if req.reserved_literals == "reject":
        literals.check_reject(tok, messages, req.tools, req.template_kwargs)
    special = "allow" if req.reserved_literals == "allow" else "text"

    def count(indices: list[int]) -> openai_format.ChatCount:
        return openai_format.count_chat(tok, [messages[i] for i in indices], req.tools,
                                        accounting, special)

    kept, dropped = _fit(req, messages, lambda idx: count(idx).count)
    result = count(kept)
    body: dict[str, Any] = {"count": result.count, "method": openai_format.METHOD,
                            "exact": result.exact}
    if req.return_message_counts:
        _add_breakdown(body, messages, kept, result.message_tokens, result.tools_tokens,
                       result.template_tokens)
    if dropped is not None:
        body["dropped_messages"] = dropped
    return body


# ==== shared ===========================================================================


def _fit(req: ChatRequest, messages: list[Any],
         count: Any) -> tuple[list[int], list[int] | None]:
    """``(kept message indices, dropped indices or None without fit)``; raises
    ContextOverflow when the chat does not fit ``max_tokens``."""
    everything = list(range(len(messages)))
    if req.max_tokens is None:
        return everything, None
    if req.fit == "drop_oldest":
        dropped, n = drop_oldest(messages, req.max_tokens, count)
    else:
        dropped, n = [], count(everything)
    if n > req.max_tokens:
        raise ContextOverflow(
            f"the chat needs {n} tokens"
            + (" with every droppable turn dropped" if req.fit else "")
            + f"; max_tokens is {req.max_tokens}"
            + ("" if req.fit else " (pass \"fit\": \"drop_oldest\" to drop old turns)"),
            max_tokens=req.max_tokens, count=n)
    gone = set(dropped)
    kept = [i for i in everything if i not in gone]
    return kept, (dropped if req.fit else None)


def _add_breakdown(body: dict[str, Any], messages: list[Any], kept: list[int],
                   per_message: list[int], tools_tokens: int, template_tokens: int) -> None:
    body["message_counts"] = [
        {"index": original, "role": _role(messages[original]), "tokens": tokens}
        for original, tokens in zip(kept, per_message)]
    body["tools_tokens"] = tools_tokens
    body["template_tokens"] = template_tokens


def _role(message: Any) -> str | None:
    role = message.get("role") if isinstance(message, dict) else None
    return role if isinstance(role, str) else None


def _check_chat_texts(settings: Settings, req: ChatRequest) -> None:
    check_chat_strings(settings, req.messages or (), req.tools, req.template_kwargs)


def check_chat_strings(settings: Settings, messages: Any, tools: Any,
                       template_kwargs: Any) -> None:
    """The per-text limit applies to chat input too: each caller string (content,
    tool arguments, tools, template_kwargs), as /encode applies it to each text."""
    limit = settings.max_text_chars
    for index, fld, s in literals.caller_strings(list(messages), tools, template_kwargs):
        if len(s) > limit:
            where = f"messages[{index}].{fld}" if index is not None else fld
            raise PayloadTooLarge(
                f"`{where}` has a string of {len(s)} characters; the limit is {limit} "
                f"(TOKSERVE_MAX_TEXT_CHARS)",
                field=where, limit=limit, size=len(s),
            )
