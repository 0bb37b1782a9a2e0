"""Chat token counts for OpenAI's chat models, which publish no chat template.

OpenAI documents how its chat models turn messages into tokens in the OpenAI Cookbook,
"How to count tokens with tiktoken" (examples/How_to_count_tokens_with_tiktoken.ipynb,
sections 6 and 7), and checks the rule there against the API's own usage figures:

* every message costs ``tokens_per_message`` plus the tokens of each of its values
  (role, content, name...), and a ``name`` costs ``tokens_per_name`` more: 3 and 1 for
  gpt-3.5-turbo-0613 and later, gpt-4 and gpt-4o; 4 and -1 for gpt-3.5-turbo-0301;
* every reply is primed with ``<|start|>assistant<|message|>``: 3 tokens;
* tools (function definitions) cost, per function, ``func_init`` plus the tokens of
  ``name:description`` (a final period dropped), and when it has properties
  ``prop_init`` plus, per property, ``prop_key`` and the tokens of
  ``name:type:description`` (final period dropped) and, for an enum, ``enum_init`` plus
  ``enum_item`` and the item's tokens per item; then ``func_end`` once. gpt-4o and later
  (o200k_base) use 7/3/3/-3/3/12, gpt-3.5-turbo and gpt-4 (cl100k_base) 10/3/3/-3/3/12.

The cookbook's worked figures (its example conversation: 129 tokens on gpt-3.5-turbo and
gpt-4, 127 on gpt-3.5-turbo-0301, 124 on gpt-4o; with its weather tool 105 and 101) are
the tests of this module. The counts are exact for text messages as the cookbook checks
them; with tools, images (non-text content parts) or tool calls in messages they are the
documented estimate, and the response says ``"exact": false``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

METHOD = "openai-chat-format"

#: Encodings whose chat accounting this module knows (a tokenizer's manifest preset).
ENCODINGS = ("o200k_base", "cl100k_base")


@dataclass(frozen=True)
class Accounting:
    """The cookbook's constants for one model family."""

    tokens_per_message: int = 3
    tokens_per_name: int = 1
    reply_priming: int = 3
    func_init: int = 7
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


_O200K = Accounting()
_CL100K = Accounting(func_init=10)
_GPT35_0301 = Accounting(tokens_per_message=4, tokens_per_name=-1, func_init=10)


def accounting_for(encoding: str, model: str | None = None) -> Accounting:
    """The constants for ``model`` (when the request named one) on ``encoding``."""
    if model is not None and model.removeprefix("openai/") == "gpt-3.5-turbo-0301":
        return _GPT35_0301
    return _O200K if encoding == "o200k_base" else _CL100K


@dataclass
class ChatCount:
    message_tokens: list[int]
    tools_tokens: int
    template_tokens: int
    exact: bool

    @property
    def count(self) -> int:
        return sum(self.message_tokens) + self.tools_tokens + self.template_tokens


def count_chat(tok: Any, messages: Sequence[Mapping[str, Any]],
               tools: Sequence[Mapping[str, Any]] | None, accounting: Accounting,
               special_tokens: str = "text") -> ChatCount:
    """The cookbook's count of ``messages`` (and ``tools``) on ``tok``, per message.

    ``special_tokens`` is how a special-token literal in a value is encoded ("text":
    as the characters it is, as the API does; "allow": as its special id).
    """
    exact = True

    def n(text: str) -> int:
        return tok.count(text, special_tokens=special_tokens)

    per_message = []
    for message in messages:
        tokens = accounting.tokens_per_message
        for key, value in message.items():
            if value is None:
                continue
            if isinstance(value, str):
                tokens += n(value)
            elif key == "content" and isinstance(value, list):
                for part in value:
                    text = part.get("text") if isinstance(part, Mapping) else None
                    if isinstance(text, str):
                        tokens += n(text)
                    else:
                        exact = False  # images and other parts: not in the documented rule
            else:  # tool calls and other structured values: the documented rule stops here
                tokens += n(_json_text(value))
                exact = False
            if key == "name":
                tokens += accounting.tokens_per_name
        per_message.append(tokens)
    tools_tokens = _tools_tokens(n, tools or (), accounting)
    if tools:
        exact = False
    return ChatCount(per_message, tools_tokens, accounting.reply_priming, exact)


def _json_text(value: Any) -> str:
    """A structured value as the compact JSON text it is counted as. orjson refuses lone
    surrogates (which a JSON body may carry as escapes); the stdlib keeps them, and the
    tokenizer then counts each as U+FFFD, as it does in any string."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tools_tokens(n: Any, tools: Sequence[Mapping[str, Any]], a: Accounting) -> int:
    if not tools:
        return 0
    total = 0
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
        if not isinstance(function, Mapping):
            function = {}
        total += a.func_init
        total += n(f"{function.get('name', '')}:{_strip_period(function.get('description'))}")
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        if isinstance(properties, Mapping) and properties:
            total += a.prop_init
            for key, spec in properties.items():
                spec = spec if isinstance(spec, Mapping) else {}
                total += a.prop_key
                enum = spec.get("enum")
                if isinstance(enum, list):
                    total += a.enum_init
                    for item in enum:
                        total += a.enum_item + n(str(item))
                total += n(f"{key}:{spec.get('type', '')}:"
                           f"{_strip_period(spec.get('description'))}")
    return total + a.func_end


def _strip_period(text: Any) -> str:
    text = "" if text is None else str(text)
    return text[:-1] if text.endswith(".") else text
