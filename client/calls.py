"""Each endpoint once: how to build its request and read its answer.

``Client`` and ``AsyncClient`` differ only in how bytes travel; both run these ``Call``s,
so the two can never disagree about a field name or a default. Options the caller does
not pass are left out of the body (the server's defaults apply, as documented).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .results import (EncodeBatchResult, Encoded, EncodeResult, RenderChatResult,
                      TokenizerInfo, TokenizerList, from_body)


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: dict[str, Any] | None
    parse: Callable[[Any], Any]
    json_response: bool = True
    headers: dict[str, str] | None = None


def _body(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _one_of(**given: Any) -> None:
    present = [k for k, v in given.items() if v is not None]
    if len(present) != 1:
        raise TypeError(f"pass exactly one of {', '.join(given)} (got "
                        f"{', '.join(present) or 'none'})")


def encode(text: str | None, texts: Sequence[str] | None, tokenizer: str | None,
           options: dict[str, Any]) -> Call:
    _one_of(text=text, texts=texts)
    body = _body(text=text, texts=None if texts is None else list(texts),
                 tokenizer=tokenizer, **options)
    if texts is None:
        return Call("POST", "/encode", body, lambda b: from_body(EncodeResult, b))
    return Call("POST", "/encode", body, lambda b: EncodeBatchResult(
        b["tokenizer"], b["tokenizer_hash"], [from_body(Encoded, r) for r in b["results"]],
        {k: v for k, v in b.items() if k not in ("tokenizer", "tokenizer_hash", "results")}))


def count(text: str | None, texts: Sequence[str] | None, messages: Sequence[dict] | None,
          tokenizer: str | None, options: dict[str, Any]) -> Call:
    _one_of(text=text, texts=texts, messages=messages)
    body = _body(text=text, texts=None if texts is None else list(texts),
                 messages=None if messages is None else list(messages),
                 tokenizer=tokenizer, **options)
    return Call("POST", "/count", body,
                (lambda b: list(b["counts"])) if texts is not None else (lambda b: b["count"]))


def decode(ids: Sequence[int] | None, batch_ids: Sequence[Sequence[int]] | None,
           tokenizer: str | None, options: dict[str, Any]) -> Call:
    _one_of(ids=ids, batch_ids=batch_ids)
    body = _body(ids=None if ids is None else list(ids),
                 batch_ids=None if batch_ids is None else [list(r) for r in batch_ids],
                 tokenizer=tokenizer, **options)
    return Call("POST", "/decode", body,
                (lambda b: b["text"]) if ids is not None else (lambda b: list(b["texts"])))


def render_chat(messages: Sequence[dict], tokenizer: str | None,
                options: dict[str, Any]) -> Call:
    body = _body(messages=list(messages), tokenizer=tokenizer, **options)
    return Call("POST", "/render_chat", body, lambda b: from_body(RenderChatResult, b))


def tokenizers() -> Call:
    return Call("GET", "/tokenizers", None, lambda b: TokenizerList(
        b.get("default"), [from_body(TokenizerInfo, t) for t in b["tokenizers"]],
        {k: v for k, v in b.items() if k not in ("default", "tokenizers")}))


def tokenizer(name: str) -> Call:
    from urllib.parse import quote

    return Call("GET", f"/tokenizers/{quote(name, safe='@')}", None,
                lambda b: from_body(TokenizerInfo, b))


def models() -> Call:
    return Call("GET", "/models", None, lambda b: b)


def health() -> Call:
    return Call("GET", "/healthz", None, lambda b: b)


def metrics() -> Call:
    return Call("GET", "/metrics", None, lambda text: text, json_response=False)


def reload(admin_token: str | None) -> Call:
    headers = {"Authorization": f"Bearer {admin_token}"} if admin_token else None
    return Call("POST", "/admin/reload", None, lambda b: b, headers=headers)
