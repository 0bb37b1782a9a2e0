"""``load``: a name or a path -> a ready ``Tokenizer``; and ``verify_directory``.

Built on versions.py (which directory a name means, the manifest and its hashes) and
formats.py (files -> ``Artifact``). ``load`` accepts:

* a bundled tokenizer name, ``name`` or ``name@version`` (or one under ``root=``);
* an artifact version directory (manifest.json plus files, hashes verified), or a
  name's directory (its latest version);
* a ``tokenizer.json`` (or a directory holding one);
* a tiktoken rank file with ``preset=`` (cl100k_base, o200k_base, llama3, qwen);
* a SentencePiece ``.model`` file (Llama 2's ``tokenizer.model``; told apart from a rank
  file by its content, file_kinds.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .artifact import Artifact
from .formats import load_artifact, load_directory
from .tokenizer import Tokenizer
from .versions import MANIFEST, Manifest, check_tokenizer_hash, latest_version, resolve


def load(source: str | os.PathLike, *, root: str | os.PathLike | None = None,
         tables: str | os.PathLike | None = None, **options: Any) -> Tokenizer:
    """Load a tokenizer from a bundled name or a path (see the module docstring).

    ``root``: where bare names are looked up (default: the bundled artifacts).
    ``tables``: a directory for compiled tables that processes share (tables.py): a
    version directory's tables are mapped from there, written there on first load.

    Raises:
        ArtifactError: missing, unreadable, malformed or hash-mismatching files.
        UnsupportedArtifact: a feature the engine does not implement (never silently
            different ids).
    """
    text = os.fspath(source)
    path = Path(text)
    if not path.exists() and "/" not in text and os.sep not in text:
        path = resolve(text, root)
    elif path.is_dir() and not (path / MANIFEST).exists() and not (
        path / "tokenizer.json"
    ).exists():
        path = latest_version(path)
    return tokenizer_for(load_artifact(path, tables=tables, **options))


def tokenizer_for(artifact: Artifact) -> Tokenizer:
    """The tokenizer class an artifact needs: ``PieceTokenizer`` for piece vocabularies
    (SentencePiece-style), ``Tokenizer`` for byte-level ones."""
    if artifact.is_pieces:
        from .piece_tokenizer import PieceTokenizer

        return PieceTokenizer(artifact)
    return Tokenizer(artifact)


def verify_directory(directory: str | Path) -> Manifest:
    """Re-check an artifact version: every file's sha256, then a full load whose
    content hash must equal the manifest's ``tokenizer_hash``. Returns the manifest.

    Raises:
        ArtifactError: naming the first file or value that does not match.
    """
    directory = Path(directory)
    tok = tokenizer_for(load_directory(directory))
    manifest = tok.manifest or {}
    check_tokenizer_hash(directory, manifest, tok.hash)
    return manifest
