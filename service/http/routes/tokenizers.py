"""GET /tokenizers, /tokenizers/{name} (or name@version) and /models."""

from typing import Any

from fastapi import Request, Response

from ...errors import TokenizerNotFound, dumps
from ...runtime.registry import Entry
from ...runtime.state import state_of
from ._common import json_response


def describe(entry: Entry) -> dict[str, Any]:
    tok = entry.tokenizer
    return {
        "name": entry.name,
        "version": entry.version,
        "tokenizer": entry.ref,
        "tokenizer_hash": entry.hash,
        "vocab_size": tok.vocab_size,
        "special_tokens": dict(tok.special_tokens),
        "chat_templates": dict(entry.chat_template_hashes),
        "default_chat_template": entry.default_chat_template,
    }


async def list_tokenizers(request: Request) -> Response:
    """Every served version, and the default's name@version."""
    registry = state_of(request.app).registry
    try:
        default = registry.resolve(None).ref
    except TokenizerNotFound:  # default not loaded: still list the others
        default = None
    entries = [describe(e) for e in registry.entries()]
    return json_response(dumps({"default": default, "tokenizers": entries}))


async def get_tokenizer(name: str, request: Request) -> Response:
    """One version (bare name = current) plus its manifest."""
    entry = state_of(request.app).registry.resolve(name)
    return json_response(dumps({**describe(entry), "manifest": entry.manifest}))


async def list_models(request: Request) -> Response:
    """The model names ``tokenizer``/``model`` accept, and the tokenizer each uses."""
    return json_response(dumps(state_of(request.app).registry.models()))
