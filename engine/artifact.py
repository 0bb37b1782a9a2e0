"""Artifacts: one frozen, format-independent description of a tokenizer.

``Artifact`` is what every on-disk format becomes (formats.py reads them: tiktoken rank
files, Hugging Face ``tokenizer.json``, Mistral ``tekken.json``, artifact version
directories); the Tokenizer is built from it and from nothing else. Anything a format
can express that the engine does not implement raises ``UnsupportedArtifact`` naming
the feature: loading must never silently change ids.

``Artifact.hash`` is derived from content only (the vocabulary file's bytes plus every
setting that can change ids), so it is stable across restarts and machines. An artifact
read from a version directory also carries its manifest and its chat templates, each
checked against the sha256 the manifest pins before it is trusted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ArtifactError


@dataclass(frozen=True)
class AddedToken:
    """A literal matched before pre-tokenization (special or not; HF flags kept)."""

    content: str
    id: int
    special: bool = True
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False
    normalized: bool = False


@dataclass(frozen=True)
class ChatTemplate:
    """A Jinja chat template of an artifact version, as verified at load."""

    name: str
    source: str
    sha256: str  # "sha256:<hex>" of the file's bytes, equal to the manifest's


@dataclass(frozen=True)
class Artifact:
    name: str
    format: str
    reference: str  # "tiktoken" | "tokenizers": whose Unicode tables and regex semantics
    # the BPE vocabulary: (bytes, id) pairs, or for tiktoken files the raw rank file
    # (parsed in C by the model: it is most of the load time otherwise)
    tokens: list[tuple[bytes, int]] | None = field(repr=False)
    merges: list[tuple[bytes, bytes]] | None = field(repr=False)
    whole_piece_lookup: bool
    added_tokens: tuple[AddedToken, ...]
    normalizer: dict[str, Any] | None
    pre_tokenizer: dict[str, Any]  # {"type": "Pattern", "pattern": str} or an HF spec
    post_processor: dict[str, Any] | None
    bos_token: str | None
    eos_token: str | None
    pad_token: str | None
    add_bos_token: bool
    add_eos_token: bool
    hash: str
    tiktoken_data: bytes | None = field(default=None, repr=False)
    manifest: dict[str, Any] | None = None
    directory: Path | None = None
    # version directories only: name -> template, and the one a request means by default
    chat_templates: dict[str, ChatTemplate] = field(default_factory=dict, repr=False)
    default_chat_template: str | None = None
    # the compiled tables (tables.py) when mapped from a file; tokens, merges and
    # tiktoken_data are then None
    tables: Any = field(default=None, repr=False)
    # piece tokenizers (SentencePiece-style: piece_tokenizer.py) only: the file's model
    # and decoder objects; ``tokens``/``merges`` are then None
    model: dict[str, Any] | None = field(default=None, repr=False)
    decoder: dict[str, Any] | None = field(default=None, repr=False)
    # the model built from ``model`` at load (so a malformed one is refused there, naming
    # the file), handed to the tokenizer
    piece_model: Any = field(default=None, repr=False, compare=False)

    @property
    def is_pieces(self) -> bool:
        """Whether this is a piece tokenizer (``PieceTokenizer``), not byte-level."""
        return self.model is not None


# ---------------------------------------------------------------- helpers


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(f"tokenizer file not found: {path}", path=str(path)) from None
    except OSError as e:
        raise ArtifactError(f"cannot read tokenizer file {path}: {e}", path=str(path)) from e


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_hash(vocab_digest: str, settings: dict[str, Any]) -> str:
    canonical = json.dumps(
        {"vocab": vocab_digest, **settings}, sort_keys=True, ensure_ascii=False, default=str
    )
    return "sha256:" + sha256_hex(canonical.encode("utf-8"))
