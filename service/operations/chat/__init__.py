"""Chat rendering for /render_chat and /count: Hugging Face–exact text, injection-safe ids.

``render(tok, ChatInput(...))`` (or ``render_chat(tok, template_source, **fields)``)
renders a chat template exactly as transformers' ``apply_chat_template(...,
tokenize=False)`` does (environment.py), knows which characters came from the caller
(provenance.py), applies the reserved-literal policy when encoding (literals.py) and
computes assistant spans and labels (masks.py).
"""

from .environment import RenderLimits
from .inputs import ChatInput
from .render import ChatResult, render, render_chat, special_token_variables

__all__ = ["ChatInput", "ChatResult", "RenderLimits", "render", "render_chat",
           "special_token_variables"]
