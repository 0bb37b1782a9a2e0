"""render: a chat rendered exactly as transformers renders it, then encoded safely.

Steps, each mirroring ``PreTrainedTokenizerBase.apply_chat_template`` /
``render_jinja_template`` where transformers defines the behaviour:
1. messages: top-level keys whose value is None are dropped; values are converted to plain
   JSON types and every caller string becomes a ``Traced`` tagged with its origin;
   reasoning aliases are filled (``thinking`` and ``reasoning_content`` from the first of
   reasoning_content/thinking/reasoning); for continue_final_message the final message's
   content (or its last text part) gets transformers' continuation tag.
2. variables: the tokenizer's named special tokens, then template_kwargs over them, then
   ``messages``, ``tools``, ``documents`` (None) and ``add_generation_prompt``.
3. render in the sandbox (environment.py) under a budget, collecting the top-level chunks
   so provenance and generation spans are known by character offset.
4. continue_final_message: the text is cut at the tag, as transformers cuts it.
5. encode with template literals as special ids and caller text per reserved_literals.
"""

from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import jinja2

from ...errors import ReservedLiteralInContent, TemplateError
from . import literals as lit
from . import masks
from .attribution import attribute
from .compiled import compile_template
from .environment import BudgetExceeded, RenderLimits, begin_render, end_render
from .inputs import ChatInput
from .provenance import Origin, Run, Traced, concat, spans_in, wrap

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token")
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "
_RESERVED_VARS = ("messages", "tools", "documents", "add_generation_prompt")


@dataclass
class ChatResult:
    """What render_chat returns. Offsets and spans are ``[start, end)`` in characters of
    ``text``; ``mask_rule`` says how assistant_spans were found (see masks.py)."""

    text: str
    ids: list[int] | None = None
    offsets: list[list[int]] | None = None
    assistant_spans: list[list[int]] | None = None
    labels: list[int] | None = None
    mask_rule: str | None = None
    #: with return_message_counts (attribution.py): tokens per message, in tools, and
    #: the rest the template wrote; they sum to len(ids)
    message_tokens: list[int] | None = None
    tools_tokens: int | None = None
    template_tokens: int | None = None
    #: what the template read of the clock (strftime_now): None, "date" or "time"
    clock: str | None = None


@dataclass
class _Prepared:
    variables: dict[str, Any]
    origins: list[Origin]
    final_message: Any = None


def special_token_variables(tok: Any) -> dict[str, str]:
    """The named special tokens a template sees as variables (bos_token, eos_token...),
    read from the tokenizer, falling back to its manifest, None ones left out."""
    manifest = getattr(tok, "manifest", None) or {}
    out: dict[str, str] = {}
    for name in SPECIAL_TOKEN_NAMES:
        value = getattr(tok, name, None)
        if value is None:
            value = manifest.get(name)
        if isinstance(value, str):
            out[name] = value
    return out


def _template_failure(exc: BaseException) -> TemplateError:
    if isinstance(exc, BudgetExceeded):
        return TemplateError(f"template stopped: {exc}", reason="budget")
    if isinstance(exc, jinja2.exceptions.SecurityError):
        return TemplateError(f"template blocked by the sandbox: {exc}", reason="sandbox")
    if isinstance(exc, jinja2.exceptions.TemplateSyntaxError):
        return TemplateError(f"template does not compile: {exc}", reason="syntax")
    if isinstance(exc, RecursionError):
        return TemplateError("template recursed too deeply", reason="budget")
    if isinstance(exc, MemoryError):
        return TemplateError("template ran out of memory", reason="budget")
    if isinstance(exc, jinja2.exceptions.TemplateError):
        return TemplateError(f"template raised: {exc}", reason="raised")
    return TemplateError(f"template failed: {type(exc).__name__}: {exc}", reason="error")


def _prepare(chat: ChatInput) -> _Prepared:
    """The template's variables for ``chat`` (its special tokens resolved), with the
    origin of every caller string."""
    messages, tools, template_kwargs = chat.messages, chat.tools, chat.template_kwargs
    if not isinstance(messages, (list, tuple)) or not messages:
        raise TemplateError("messages must be a non-empty list of message objects",
                            reason="input")
    origins: list[Origin] = []

    def oid(index: int | None, fld: str, role: str | None = None) -> int:
        origins.append(Origin(index, fld, role))
        return len(origins) - 1

    turns: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TemplateError(f"message {i} is not an object", reason="input", message_index=i)
        role = message.get("role")
        role = role if isinstance(role, str) else None
        wrapped = {str(k): wrap(v, oid(i, str(k), role))
                   for k, v in message.items() if v is not None}
        reasoning = next((wrapped[k] for k in REASONING_FIELDS if wrapped.get(k) is not None),
                         None)
        if reasoning is not None:
            wrapped = {"thinking": reasoning, **wrapped, "reasoning_content": reasoning}
        turns.append(wrapped)

    final_message = None
    if chat.continue_final_message:
        if chat.add_generation_prompt:
            raise TemplateError("continue_final_message and add_generation_prompt are not "
                                "compatible", reason="input")
        final_message = turns[-1].get("content")
        if final_message is None:
            raise TemplateError('continue_final_message is set but the final message has no '
                                '"content" to continue', reason="input")
        if "content" not in chat.template:
            raise TemplateError('continue_final_message is set but this template does not '
                                'read "content"', reason="input")
        try:
            if isinstance(final_message, (list, tuple)):
                for block in reversed(final_message):
                    if "text" in block:
                        final_message = block["text"]
                        block["text"] = block["text"] + CONTINUE_TAG
                        break
                else:
                    raise TemplateError("continue_final_message is set but the final message "
                                        "has no text part to continue", reason="input")
            else:
                turns[-1]["content"] = turns[-1]["content"] + CONTINUE_TAG
        except TemplateError:
            raise
        except Exception as exc:  # e.g. a number as content: transformers fails here too
            raise TemplateError(f"continue_final_message: cannot extend the final message "
                                f"({type(exc).__name__}: {exc})", reason="input") from None

    kwargs = dict(template_kwargs or {})
    clash = [k for k in _RESERVED_VARS if k in kwargs]
    if clash:
        raise TemplateError(f"template_kwargs cannot set {clash}", reason="input")
    variables: dict[str, Any] = dict(chat.special_tokens or {})
    for key, value in kwargs.items():
        variables[str(key)] = wrap(value, oid(None, f"template_kwargs.{key}"))
    variables["messages"] = turns
    variables["tools"] = None if tools is None else wrap(list(tools), oid(None, "tools"))
    variables["documents"] = None
    variables["add_generation_prompt"] = chat.add_generation_prompt
    return _Prepared(variables, origins, final_message)


def _render(compiled: Any, variables: dict[str, Any], limits: RenderLimits,
            track_generation: bool
            ) -> tuple[str, list[Run], list[tuple[int, int]], str | None]:
    state, token = begin_render(limits, track_generation)
    chunks: list[str] = []
    try:
        for chunk in compiled.template.generate(**variables):
            chunks.append(chunk)
            state.emitted += len(chunk)
            state.check_size(state.emitted, "an output")
            state.tick()
        text, runs = spans_in(chunks)
        return text, runs, list(state.generation or []), state.clock
    except TemplateError:
        raise
    except Exception as exc:  # anything the template's code raised
        raise _template_failure(exc) from None
    finally:
        end_render(token)


def _on_time(limits: RenderLimits | None, what: str) -> None:
    """TemplateError (``budget``) once the request's deadline has passed."""
    if limits is None:
        return
    try:
        limits.check_deadline(what)
    except BudgetExceeded as exc:
        raise _template_failure(exc) from None


def _cut_continuation(text: str, final_message: Any) -> int:
    """Where transformers cuts the text for continue_final_message (or TemplateError)."""
    final = str.strip(str(final_message))
    tag = CONTINUE_TAG.strip()
    if final not in text or tag not in text:
        raise TemplateError("continue_final_message is set but the final message does not "
                            "appear in the rendered chat (the template deletes parts of it)",
                            reason="input")
    at = text.rindex(tag)
    if text[at:at + len(CONTINUE_TAG)] == CONTINUE_TAG:
        return at
    return len(text[:at].rstrip())


def _clip(runs: list[Run], end: int) -> list[Run]:
    return [(s, min(e, end), o) for s, e, o in runs if s < end]


def render_chat(tok: Any, template_source: str, **fields: Any) -> ChatResult:
    """``render(tok, ChatInput(template_source, **fields))``: the keywords are
    ``ChatInput``'s fields (``messages`` is required), for callers that have them as
    keywords, as transformers' ``apply_chat_template`` takes them."""
    return render(tok, ChatInput(template_source, **fields))


#: From this many messages on, a render ends with a full collection: a long chat leaves
#: reference cycles (the template's frames and contexts) that survive into the oldest
#: generation, where they wait for a full collection with tens of MiB behind them (a
#: 16,000-message request left a worker 72 MiB larger; issue 33). The collection costs
#: tens of milliseconds, against the seconds such a render takes.
COLLECT_AFTER_MESSAGES = 2000


def render(tok: Any, chat: ChatInput) -> ChatResult:
    """Render ``chat`` exactly as transformers' ``apply_chat_template(...,
    tokenize=False)`` does, then encode it.

    Raises:
        TemplateError: the template raised, does not compile, tried to leave the sandbox,
            or went over the time/operation/size budget; or the inputs cannot be rendered.
        ReservedLiteralInContent: reserved_literals="reject" and a caller string holds a
            special-token literal.
    """
    try:
        return _render_chat(tok, chat)
    finally:
        if len(chat.messages) >= COLLECT_AFTER_MESSAGES:
            gc.collect()


def _render_chat(tok: Any, chat: ChatInput) -> ChatResult:
    if chat.reserved_literals not in lit.POLICIES:
        raise ValueError(f"reserved_literals must be one of {lit.POLICIES}")
    # Defaults resolved once: every step below (and every variant of the chat) sees them.
    # One deadline for the whole request: the renders (three under ``escape``) and the
    # literal work between them share ``max_seconds``, so however many messages a body
    # carries, the work it can cause is bounded (a client gone meanwhile cannot keep a
    # core busy for longer either: issue 33).
    limits = chat.limits or RenderLimits()
    deadline = time.monotonic() + limits.max_seconds
    if limits.deadline is not None:
        deadline = min(deadline, limits.deadline)
    chat = replace(
        chat, limits=replace(limits, deadline=deadline),
        template_hash=chat.template_hash or "sha256:" + hashlib.sha256(
            chat.template.encode("utf-8", "surrogatepass")).hexdigest(),
        special_tokens=dict(chat.special_tokens) if chat.special_tokens is not None
        else special_token_variables(tok))
    limits = chat.limits
    assert limits is not None and chat.template_hash is not None
    if chat.reserved_literals == "reject":
        lit.check_reject(tok, list(chat.messages), chat.tools, chat.template_kwargs)

    prepared = _prepare(chat)
    _on_time(limits, "preparing the messages")
    try:
        compiled = compile_template(chat.template, chat.template_hash)
    except Exception as exc:
        raise _template_failure(exc) from None
    track = chat.return_assistant_mask and compiled.has_generation
    full, runs, generation, clock = _render(compiled, prepared.variables, limits, track)

    end = _cut_continuation(full, prepared.final_message) if chat.continue_final_message \
        else len(full)
    text = full[:end]
    runs = _clip(runs, end)
    result = ChatResult(text=text, clock=clock)

    if not (chat.return_ids or chat.return_offsets or chat.return_assistant_mask
            or chat.return_message_counts):
        return result
    plain = None
    if chat.reserved_literals == "escape":
        ranges = [(s, e) for s, e, _ in runs]
        ranges += _marker_ranges(tok, compiled, chat, full)
        _on_time(limits, "escaping caller literals")
        plain = [r for r in lit.merge_ranges([(s, min(e, end)) for s, e in ranges if s < end])]
    want_offsets = chat.return_offsets or chat.return_assistant_mask or \
        chat.return_message_counts
    if want_offsets:
        ids, offs = tok.encode_with_offsets(text, units="char", special_tokens="allow",
                                            plain_ranges=plain or None)
        offsets = [[a, b] for a, b in offs]
    else:
        ids = tok.encode(text, special_tokens="allow", plain_ranges=plain or None)
        offsets = None
    result.ids = list(ids)
    _on_time(limits, "encoding")
    if chat.reserved_literals == "escape":
        _check_escaped(tok, compiled, result.ids, chat)
        _on_time(limits, "checking the escaped ids")
    if chat.return_offsets:
        result.offsets = offsets
    if chat.return_message_counts:
        per_message, result.tools_tokens, result.template_tokens = attribute(
            offsets or [], runs, prepared.origins, len(chat.messages))
        result.message_tokens = per_message
    if chat.return_assistant_mask:
        if compiled.has_generation:
            result.mask_rule = "generation"
            result.assistant_spans = masks.generation_spans(generation, len(text))
        else:
            result.mask_rule = "content"
            result.assistant_spans = masks.content_spans(runs, prepared.origins)
        result.labels = masks.labels_for(result.ids, offsets or [], result.assistant_spans)
    return result


def _check_escaped(tok: Any, compiled: Any, ids: list[int], chat: ChatInput) -> None:
    """Fail closed under ``escape``: the encoded chat may hold no more special-token ids
    than the template writes when every caller literal is replaced by ``_``.

    Provenance and the marker render find the caller's characters for the templates we
    know; a template that writes content in a form neither can follow would otherwise let
    a caller literal through as a real turn boundary. That is refused, never returned."""
    found = lit.literals_in_inputs(tok, list(chat.messages), chat.tools, chat.template_kwargs)
    if not found:
        return
    reserved = set(tok.special_tokens.values())
    produced = sum(1 for i in ids if i in reserved)
    neutral = _prepare(replace(
        chat, messages=lit.neutralize_value(list(chat.messages), tok),
        tools=lit.neutralize_value(chat.tools, tok),
        template_kwargs=lit.neutralize_value(dict(chat.template_kwargs or {}), tok)))
    _on_time(chat.limits, "checking the escaped ids")
    try:
        text, _, _, _ = _render(compiled, neutral.variables, chat.limits, False)
        if chat.continue_final_message:
            text = text[:_cut_continuation(text, neutral.final_message)]
        own = len(tok.find_literals(text))
    except TemplateError as exc:
        if exc.details.get("reason") == "budget":
            raise
        own = -1
    if produced > own:
        raise ReservedLiteralInContent(
            "reserved_literals=\"escape\" cannot keep this input's special-token literals "
            "out of the token ids: the template writes the content in a form whose "
            "characters cannot be traced back to it; remove the literals, or send them "
            "as plain string content",
            literal=sorted(found)[0],
        )


def _marker_ranges(tok: Any, compiled: Any, chat: ChatInput,
                   full: str) -> list[tuple[int, int]]:
    """Second opinion for ``escape`` (see literals.py): content literal ranges found by a
    render whose content literals carry markers. Empty when no caller string holds one."""
    messages, tools, template_kwargs = list(chat.messages), chat.tools, chat.template_kwargs
    found = lit.literals_in_inputs(tok, messages, tools, template_kwargs)
    if not found:
        return []
    texts = [chat.template, full,
             *(s for _, _, s in lit.caller_strings(messages, tools, template_kwargs))]
    markers = lit.pick_markers(texts)
    if markers is None:
        return []
    start, end = markers
    marked = _prepare(replace(
        chat, messages=lit.mark_value(messages, tok, start, end),
        tools=lit.mark_value(tools, tok, start, end),
        template_kwargs=lit.mark_value(dict(template_kwargs or {}), tok, start, end)))
    _on_time(chat.limits, "escaping caller literals")
    try:
        marked_text, _, _, _ = _render(compiled, marked.variables, chat.limits, False)
    except TemplateError as exc:
        if exc.details.get("reason") == "budget":
            raise
        return []
    ranges = lit.marked_literal_ranges(marked_text, full, found, start, end)
    return ranges or []


__all__ = ["ChatInput", "ChatResult", "RenderLimits", "render", "render_chat",
           "special_token_variables", "Traced", "concat"]
