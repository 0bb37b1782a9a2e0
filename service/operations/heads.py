"""What every response body starts with: the tokenizer that answered (``name@version``
and its hash) and the model the request named it by, when it named one."""

from __future__ import annotations

from typing import Any

from ..errors import dumps
from ..runtime.registry import Entry


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
