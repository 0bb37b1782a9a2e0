"""Import tokenizers that teams bring into versioned artifact directories.

A checkpoint is only usable with exactly the tokenizer it was trained with, so an
import copies the files unchanged, hashes them, records where they came from, and
loads the result once (so a broken import fails here, not in production).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from ..formats import added_token_text
from ..presets import PRESETS
from .manifest import write_artifact


def import_tiktoken(rank_file: str | Path, root: str | Path, name: str, version: str, *,
                    preset: str | None = None, pattern: str | None = None,
                    special_tokens: dict[str, int] | None = None,
                    extra_templates: dict[str, str | Path] | None = None,
                    **fields: Any) -> dict:
    """A tiktoken rank file plus a preset (or an explicit pattern and special tokens).
    ``extra_templates`` (name -> Jinja file or text) ship as its chat templates."""
    rank_file = Path(rank_file)
    if preset is None and pattern is None:
        raise ArtifactError(f"importing {rank_file}: give a preset ({', '.join(PRESETS)}) "
                            f"or a pattern")
    p = PRESETS.get(preset) if preset else None
    if preset and p is None:
        raise ArtifactError(f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}")
    fname = rank_file.name
    return write_artifact(
        root, name, version, {fname: rank_file}, format="tiktoken", tokenizer_file=fname,
        preset=preset, pattern=pattern or p.pattern,
        special_tokens=special_tokens if special_tokens is not None else p.special_tokens,
        bos_token=fields.pop("bos_token", p.bos_token if p else None),
        eos_token=fields.pop("eos_token", p.eos_token if p else None),
        add_bos_token=fields.pop("add_bos_token", bool(p and p.add_bos_token)),
        chat_templates=extra_templates, **_default_template(extra_templates),
        **fields,
    )


def import_hf(directory: str | Path, root: str | Path, name: str, version: str, *,
              extra_templates: dict[str, str | Path] | None = None, **fields: Any) -> dict:
    """A Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json,
    special_tokens_map.json); chat templates in the config become named templates, and
    ``extra_templates`` are added (replacing one of the same name)."""
    directory = Path(directory)
    if not (directory / "tokenizer.json").exists():
        raise ArtifactError(f"{directory} has no tokenizer.json")
    files = {f: directory / f for f in ("tokenizer.json", "tokenizer_config.json",
                                        "special_tokens_map.json") if (directory / f).exists()}
    config: dict[str, Any] = {}
    if "tokenizer_config.json" in files:
        config = json.loads(files["tokenizer_config.json"].read_text(encoding="utf-8"))
    if "special_tokens_map.json" in files:
        stm = json.loads(files["special_tokens_map.json"].read_text(encoding="utf-8"))
        for key in ("bos_token", "eos_token", "pad_token"):
            config.setdefault(key, stm.get(key))
    templates: dict[str, str] = {}
    raw = config.get("chat_template")
    if isinstance(raw, str):
        templates["default"] = raw
    elif isinstance(raw, list):
        templates = {t["name"]: t["template"] for t in raw}
    jinja = directory / "chat_template.jinja"
    if jinja.exists() and "default" not in templates:
        templates["default"] = jinja.read_text(encoding="utf-8")
    default = {} if templates else _default_template(extra_templates)  # the config's stays
    templates.update(extra_templates or {})
    return write_artifact(
        root, name, version, files, format="hf_tokenizer_json", tokenizer_file="tokenizer.json",
        tokenizer_config_file="tokenizer_config.json" if "tokenizer_config.json" in files else None,
        chat_templates=templates, **default,
        bos_token=added_token_text(config.get("bos_token")),
        eos_token=added_token_text(config.get("eos_token")),
        pad_token=added_token_text(config.get("pad_token")),
        add_bos_token=bool(config.get("add_bos_token", False)),
        add_eos_token=bool(config.get("add_eos_token", False)),
        model_max_length=config.get("model_max_length"),
        **fields,
    )


def import_tekken(path: str | Path, root: str | Path, name: str, version: str, *,
                  extra_templates: dict[str, str | Path] | None = None,
                  **fields: Any) -> dict:
    """A Mistral tekken.json, copied unchanged (``extra_templates``: its chat templates)."""
    path = Path(path)
    return write_artifact(root, name, version, {path.name: path}, format="tekken",
                          tokenizer_file=path.name, chat_templates=extra_templates,
                          **_default_template(extra_templates), **fields)


def _default_template(extra: dict[str, str | Path] | None) -> dict[str, Any]:
    """A template given at import is the default when it is the artifact's only one (a
    template named "default" is the default anyway)."""
    if extra and len(extra) == 1 and "default" not in extra:
        return {"default_chat_template": next(iter(extra))}
    return {}


def import_any(path: str | Path, root: str | Path, name: str, version: str,
               **fields: Any) -> dict:
    """Dispatch on what ``source`` is (directory, tekken/tokenizer JSON, rank file)."""
    source = Path(path)  # not a keyword "source": that is the manifest's provenance field
    if source.is_dir():
        return import_hf(source, root, name, version, **fields)
    if source.suffix == ".json":
        head = source.read_bytes()[:4096]
        if b'"model"' not in head and b'"config"' in head:
            return import_tekken(source, root, name, version, **fields)
        raise ArtifactError(f"{source}: import a tokenizer.json through its directory")
    return import_tiktoken(source, root, name, version, **fields)
