"""Result objects: the contract's response fields as attributes (docs/API.md).

Frozen dataclasses, so results can be cached and shared. ``extra`` keeps any field a
newer server adds that this client does not know yet (nothing the server says is lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

T = TypeVar("T")


def from_body(cls: type[T], body: dict[str, Any], **overrides: Any) -> T:
    """Build ``cls`` from a response body; unknown fields go to ``extra``."""
    names = {f.name for f in fields(cls)} - {"extra"}
    known = {k: v for k, v in body.items() if k in names}
    extra = {k: v for k, v in body.items() if k not in names}
    return cls(**known, **overrides, extra=extra)


@dataclass(frozen=True)
class Encoded:
    """One text's encoding (``/encode`` single, or one row of a batch)."""

    ids: list[int]
    count: int
    offsets: list[list[int]] | None = None
    tokens: list[str] | None = None
    truncated: bool | None = None  # with max_tokens
    original_count: int | None = None  # with max_tokens
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EncodeResult(Encoded):
    """``/encode`` with ``text``: the tokenizer that answered and the ids."""

    tokenizer: str = ""
    tokenizer_hash: str = ""
    model: str | None = None  # the model name the request asked by


@dataclass(frozen=True)
class EncodeBatchResult:
    """``/encode`` with ``texts``: one ``Encoded`` per text, in input order."""

    tokenizer: str
    tokenizer_hash: str
    results: list[Encoded]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RenderChatResult:
    """``/render_chat``: the rendered prompt, its ids and the template that made it."""

    tokenizer: str
    tokenizer_hash: str
    template_hash: str
    text: str
    count: int
    ids: list[int] | None = None
    offsets: list[list[int]] | None = None
    assistant_spans: list[list[int]] | None = None
    labels: list[int] | None = None
    mask_rule: str | None = None
    model: str | None = None
    message_counts: list[dict[str, Any]] | None = None  # with return_message_counts
    tools_tokens: int | None = None
    template_tokens: int | None = None
    dropped_messages: list[int] | None = None  # with fit
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TokenizerInfo:
    """One entry of ``/tokenizers`` (``manifest`` only from ``/tokenizers/{name}``)."""

    name: str
    version: str
    tokenizer_hash: str
    vocab_size: int
    special_tokens: dict[str, int]
    chat_templates: dict[str, str]
    manifest: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class TokenizerList:
    """``/tokenizers``: the server's default and every served version."""

    default: str | None
    tokenizers: list[TokenizerInfo]
    extra: dict[str, Any] = field(default_factory=dict)
