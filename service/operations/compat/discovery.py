"""What the discovery routes of every stack say about a tokenizer: its special tokens,
its Hugging Face tokenizer class and config, its chat template, the names it serves.

Clients call these before anything else (lm-evaluation-harness's ``RemoteTokenizer``
reads vLLM's ``tokenizer_info`` when it is constructed; llama.cpp's web UI and many
scripts read ``/props`` for ``n_ctx``), so every value is the artifact's own: nothing
here is a placeholder. The context length comes from ``context.py``.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import TokenizerNotFound
from ...runtime.registry import Entry
from ...runtime.state import ServiceState
from .context import UNKNOWN, context_length

#: transformers' class for a tokenizer.json (what ``AutoTokenizer`` builds when the
#: artifact's tokenizer_config.json names none, and what tiktoken files convert to)
FAST_CLASS = "PreTrainedTokenizerFast"
_SPECIALS = ("bos_token", "eos_token", "unk_token", "pad_token")


def special_token(entry: Entry, which: str) -> str | None:
    """The literal of ``bos_token``, ``eos_token``, ``unk_token`` or ``pad_token``."""
    value = getattr(entry.tokenizer, which, None) or entry.manifest.get(which)
    return value if isinstance(value, str) and value else None


def chat_template(entry: Entry) -> str | None:
    """The source of the template a chat route renders with (None: the tokenizer has
    none)."""
    name = entry.default_chat_template
    return entry.chat_templates.get(name) if name else None


def _plain(value: Any) -> Any:
    """tokenizer_config.json values as a loaded tokenizer's ``init_kwargs`` serialize:
    an ``AddedToken`` (``{"__type": "AddedToken", "content": ...}``) is its content."""
    if isinstance(value, dict):
        if value.get("__type") == "AddedToken" and isinstance(value.get("content"), str):
            return value["content"]
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@lru_cache(maxsize=64)
def _config_file(path: str, tokenizer_hash: str) -> dict[str, Any]:
    """A version's tokenizer_config.json (read once per version: entries never change;
    the hash keys a version replaced under the same path)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def tokenizer_config(entry: Entry) -> dict[str, Any]:
    """The tokenizer's config as Hugging Face's ``init_kwargs`` holds it: the artifact's
    tokenizer_config.json when it has one (file paths and the template left out), and
    the special tokens and flags its manifest records either way."""
    manifest = entry.manifest
    name = manifest.get("tokenizer_config_file")
    config: dict[str, Any] = {}
    if isinstance(name, str):
        config = _plain(_config_file(str(entry.path / name), entry.hash))
    for key in ("vocab_file", "merges_file", "tokenizer_file", "chat_template"):
        config.pop(key, None)
    for which in _SPECIALS:
        config.setdefault(which, special_token(entry, which))
    for flag in ("add_bos_token", "add_eos_token"):
        if isinstance(manifest.get(flag), bool):
            config.setdefault(flag, manifest[flag])
    config.setdefault("clean_up_tokenization_spaces", False)
    return config


def tokenizer_class(entry: Entry) -> str:
    """The transformers class that loads this tokenizer."""
    config = tokenizer_config(entry)
    named = config.get("tokenizer_class")
    return named if isinstance(named, str) and named else FAST_CLASS


def served_names(state: ServiceState, pinned: str | None) -> list[str]:
    """The names a models list shows: the base URL's one name; else the default tokenizer
    first (clients that take ``data[0]`` get what a request without ``model`` gets), the
    other served tokenizers, then every model name ``GET /models`` maps to one of them."""
    if pinned is not None:
        return [pinned]
    registry = state.registry
    try:
        names = [registry.resolve(None).name]
    except TokenizerNotFound:  # no default configured, or it is not served
        names = []
    names += sorted({e.name for e in registry.entries()} - set(names))
    table = registry.models()
    names += [row["model"] for row in table["models"] if row["served"]]
    return list(dict.fromkeys(names))


def model_cards(state: ServiceState, pinned: str | None, owned_by: str) -> list[dict[str, Any]]:
    """OpenAI-style model cards, as vLLM's and SGLang's ``/v1/models`` list them: one per
    served name, with its context length (``None`` where no length is known)."""
    now = int(time.time())
    cards = []
    for model in served_names(state, pinned):
        served = state.registry.lookup(None, model)[0]
        length = context_length(served, model)
        cards.append({"id": model, "object": "model", "created": now, "owned_by": owned_by,
                      "root": served.ref, "parent": None,
                      "max_model_len": None if length == UNKNOWN else length})
    return cards
