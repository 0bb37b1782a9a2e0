"""Model names -> tokenizer names: what ``encoding_for_model`` and the service resolve.

Two sources, one rule each:

* ``models.json`` (package data beside this module) holds tiktoken's tables: exact model
  names, then prefixes tried in file order. It is data, not code, so that the table a
  test checks against tiktoken is the table the service serves.
* An artifact's ``manifest.json`` may list ``"models": [...]`` (repo ids, marketing
  names); those map to the artifact's own name. They are read from the manifests of the
  roots asked about, so an imported tokenizer brings its names with it.

Exact names win over manifest aliases, which win over prefixes (a prefix is a guess:
``gpt-4o-anything`` is o200k_base because OpenAI names its snapshots that way).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from .versions import MANIFEST, version_dirs

_TABLE = Path(__file__).with_name("models.json")


@lru_cache(maxsize=1)
def tiktoken_table() -> tuple[dict[str, str], dict[str, str]]:
    """``(exact, prefixes)`` from models.json (read once per process)."""
    data = json.loads(_TABLE.read_text(encoding="utf-8"))
    return dict(data["models"]), dict(data["prefixes"])


def manifest_aliases(roots: Iterable[Path]) -> dict[str, str]:
    """``{model name: artifact name}`` from the ``models`` lists of every manifest under
    ``roots`` (each version directory, versions.py). Earlier roots win a clash."""
    aliases: dict[str, str] = {}
    for root in roots:
        for version_dir in version_dirs(root):
            try:
                manifest = json.loads((version_dir / MANIFEST).read_text(encoding="utf-8"))
                declared = manifest.get("models", [])
            except (OSError, ValueError, AttributeError):
                continue  # a broken artifact is reported by whoever loads it
            for model in declared if isinstance(declared, list) else []:
                if isinstance(model, str):
                    aliases.setdefault(model, version_dir.parent.name)
    return aliases


def resolve_model(model: str, aliases: dict[str, str] | None = None) -> str | None:
    """The tokenizer name ``model`` maps to, or None. See the module docstring for order."""
    exact, prefixes = tiktoken_table()
    if model in exact:
        return exact[model]
    if aliases and model in aliases:
        return aliases[model]
    for prefix, name in prefixes.items():
        if model.startswith(prefix):
            return name
    return None
