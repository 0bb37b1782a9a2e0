"""``ChatInput``: everything one chat render reads, as one value.

A render needs the template, the chat (messages, tools, template_kwargs), how the chat
is rendered (generation prompt, continuation), the policy for special-token literals in
caller strings, what to return, and optionally the special-token variables and the
render budget. It is built once (from a request by ``operations/conversation.py`` or a
compat route, or from ``render_chat``'s keywords) and passed down whole; every variant a
render needs (fewer messages while fitting to ``max_tokens``, the chat with its caller
literals marked or neutralized for the ``escape`` checks) is a ``dataclasses.replace``
of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .environment import RenderLimits


@dataclass(frozen=True)
class ChatInput:
    #: the chat template's source (Jinja)
    template: str
    #: ``[{"role", "content", ...}, ...]`` as the caller sent them
    messages: Sequence[Any]
    #: ``"sha256:..."`` of ``template`` (the compiled-template cache key; computed when None)
    template_hash: str | None = None
    tools: Sequence[Any] | None = None
    template_kwargs: Mapping[str, Any] | None = None
    add_generation_prompt: bool = False
    continue_final_message: bool = False
    #: special-token literals in caller strings: "reject", "escape" or "allow" (literals.py)
    reserved_literals: str = "reject"
    return_ids: bool = True
    return_offsets: bool = False
    return_assistant_mask: bool = False
    return_message_counts: bool = False
    #: the special-token variables the template sees (None: read from the tokenizer)
    special_tokens: Mapping[str, str] | None = None
    #: the render's budget (None: ``RenderLimits()``)
    limits: RenderLimits | None = None
