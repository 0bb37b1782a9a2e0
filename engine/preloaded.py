"""Piece tokenizers built once, before worker processes fork, and reused by every worker.

Byte-level vocabularies reach worker processes through mapped table files (tables.py).
A piece tokenizer's model is native tables built from its ``tokenizer.json``; instead of
a file format for them, the service's supervisor builds them before it forks its workers
(``preload``), and a worker loading a file with the same sha256 takes the built model
(``lookup``): its pages stay shared copy-on-write, and the worker skips parsing the file.
Only ``preload`` adds entries and loads only look, so a hot reload of a new version never
grows this table (it is built like any load, in the worker that asks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .artifact import _read, sha256_hex
from .file_checks import check_tokenizer_json, parse_json

#: sha256 of a tokenizer.json -> (its parsed description without vocabulary and merges,
#: the model built from them)
_BY_DIGEST: dict[str, tuple[dict[str, Any], Any]] = {}


def preload(path: str | Path) -> bool:
    """Build the model of the ``tokenizer.json`` at ``path`` now, if it is a piece
    tokenizer, for every later load of the same bytes in this process and its forks.
    Returns whether it was one. Raises what a load would (ArtifactError...)."""
    from .models.piece_models import build_piece_model, is_piece_tokenizer

    data = _read(Path(path))
    digest = sha256_hex(data)
    if digest in _BY_DIGEST:
        return True
    spec = parse_json(data, path)
    check_tokenizer_json(spec, str(path))
    if not is_piece_tokenizer(spec):
        return False
    model = build_piece_model(spec["model"])
    spec["model"] = {k: v for k, v in spec["model"].items() if k not in ("vocab", "merges")}
    _BY_DIGEST[digest] = (spec, model)
    return True


def lookup(digest: str) -> tuple[dict[str, Any], Any] | None:
    """The preloaded description and model of the file with this sha256, or None."""
    return _BY_DIGEST.get(digest)
