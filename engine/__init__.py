"""engine: exact, fast byte-level BPE tokenization (no HTTP in here).

    >>> import engine
    >>> tok = engine.load("o200k_base")
    >>> ids = tok.encode("hello world")
    >>> tok.decode(ids)
    'hello world'

``load`` accepts a bundled tokenizer name, an artifact version directory (manifest.json
plus files, hashes verified), a ``tokenizer.json`` (or a directory holding one), or a
tiktoken rank file with ``preset=`` (cl100k_base, o200k_base, llama3, qwen).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .artifact import Artifact as Artifact
from .artifact import load_artifact
from .errors import ArtifactError as ArtifactError
from .errors import EngineError as EngineError
from .errors import InputTooLarge as InputTooLarge
from .errors import InvalidUtf8 as InvalidUtf8
from .errors import SpecialTokenInText as SpecialTokenInText
from .errors import UnknownTokenId as UnknownTokenId
from .errors import UnsupportedArtifact as UnsupportedArtifact
from .presets import PRESETS as PRESETS
from .tokenizer import Tokenizer as Tokenizer

__all__ = [
    "load", "bundled_root", "bundled_names", "Tokenizer", "Artifact", "PRESETS",
    "EngineError", "ArtifactError", "UnsupportedArtifact", "SpecialTokenInText",
    "UnknownTokenId", "InvalidUtf8", "InputTooLarge",
]


def bundled_root() -> Path:
    """Where bundled artifacts live: ``$TOKSERVE_BUNDLED_ARTIFACTS`` or the repo's artifacts/."""
    env = os.environ.get("TOKSERVE_BUNDLED_ARTIFACTS")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "artifacts"


def bundled_names() -> list[str]:
    root = bundled_root()
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _latest_version(directory: Path) -> Path:
    versions = [p for p in directory.iterdir() if (p / "manifest.json").exists()]
    if not versions:
        raise ArtifactError(f"{directory} holds no artifact version (no */manifest.json)")

    def key(p: Path) -> tuple:
        return tuple((0, int(x)) if x.isdigit() else (1, x) for x in p.name.split("."))

    return max(versions, key=key)


def load(source: str | os.PathLike, **options: Any) -> Tokenizer:
    """Load a tokenizer from a bundled name or a path (see the module docstring).

    Raises:
        ArtifactError: missing, unreadable, malformed or hash-mismatching files.
        UnsupportedArtifact: a feature the engine does not implement (never silently
            different ids).
    """
    text = os.fspath(source)
    path = Path(text)
    if not path.exists() and "/" not in text and os.sep not in text:
        candidate = bundled_root() / text
        if not candidate.is_dir():
            raise ArtifactError(
                f"no bundled tokenizer named {text!r}; bundled: {', '.join(bundled_names())}"
            )
        path = _latest_version(candidate)
    elif path.is_dir() and not (path / "manifest.json").exists() and not (
        path / "tokenizer.json"
    ).exists():
        path = _latest_version(path)
    return Tokenizer(load_artifact(path, **options))
