"""tokserve: exact, fast byte-level BPE tokenization (this package is the engine; no HTTP).

tiktoken's API, so that ``import tokserve as tiktoken`` keeps existing code working:

    >>> import tokserve
    >>> enc = tokserve.get_encoding("o200k_base")      # cached: loaded once per process
    >>> enc.encode("hello world")
    [24912, 2375]
    >>> tokserve.encoding_for_model("gpt-4o").name
    'o200k_base'

The engine's own API (policies, offsets in any unit, BOS/EOS post-processing):

    >>> tok = tokserve.load("o200k_base")
    >>> ids = tok.encode("hello world")
    >>> tok.decode(ids)
    'hello world'

``load`` accepts a bundled tokenizer name, an artifact version directory (manifest.json
plus files, hashes verified), a ``tokenizer.json`` (or a directory holding one), or a
tiktoken rank file with ``preset=`` (cl100k_base, o200k_base, llama3, qwen).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from .artifact import Artifact as Artifact
from .decode_stream import DecodeStream as DecodeStream
from .formats import load_artifact
from .errors import ArtifactError as ArtifactError
from .errors import DisallowedSpecialToken as DisallowedSpecialToken
from .errors import EngineError as EngineError
from .errors import InputTooLarge as InputTooLarge
from .errors import InvalidUtf8 as InvalidUtf8
from .errors import SpecialTokenInText as SpecialTokenInText
from .errors import UnknownTokenId as UnknownTokenId
from .errors import UnsupportedArtifact as UnsupportedArtifact
from .manifest import version_key as version_key
from .presets import PRESETS as PRESETS
from .tokenizer import Tokenizer as Tokenizer

#: The package version (pyproject.toml reads it from here: one home).
__version__ = "0.2.0"

__all__ = [
    "get_encoding", "encoding_for_model", "encoding_name_for_model", "list_encoding_names",
    "Encoding", "DisallowedSpecialToken",
    "load", "DecodeStream", "build_info", "bundled_root", "bundled_names", "latest_version", "version_key", "Tokenizer", "Artifact", "PRESETS",
    "EngineError", "ArtifactError", "UnsupportedArtifact", "SpecialTokenInText",
    "UnknownTokenId", "InvalidUtf8", "InputTooLarge",
]


def build_info() -> dict[str, str]:
    """What this installation runs: the package version and the engine build.

    ``engine`` is ``compiled`` when the extension modules are native code (they always
    are: the package does not import without them); ``tokserve --version`` prints it and
    the service exports it as a metric label.
    """
    from . import _bpe

    native = Path(_bpe.__file__).suffix in (".so", ".pyd")
    return {"version": __version__, "engine": "compiled" if native else "fallback"}


def bundled_root() -> Path:
    """Where the bundled artifacts live: the package data ``tokserve.artifacts``.

    Found through the import system, so it is right for a wheel install
    (``site-packages/tokserve/artifacts``) and an editable one (the checkout's
    ``artifacts/``) alike, from any working directory. No environment variable: callers
    that serve other roots pass them (``load(..., root=)``, the service's settings).
    """
    spec = importlib.util.find_spec(f"{__name__}.artifacts")
    if spec is None or not spec.submodule_search_locations:
        raise ArtifactError(f"this installation has no {__name__}.artifacts package data")
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_names(root: Path | None = None) -> list[str]:
    """Names with at least one version under ``root`` (default: the bundled root)."""
    root = bundled_root() if root is None else Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*/manifest.json")))


def latest_version(directory: Path) -> Path:
    """The version directory under ``directory`` that a bare name means (``version_key``)."""
    versions = [p for p in Path(directory).iterdir() if (p / "manifest.json").exists()]
    if not versions:
        raise ArtifactError(f"{directory} holds no artifact version (no */manifest.json)")
    return max(versions, key=lambda p: version_key(p.name))


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
        base = bundled_root() if root is None else Path(root)
        name, _, version = text.partition("@")
        candidate = base / name
        if not candidate.is_dir():
            where = "bundled tokenizer" if root is None else f"tokenizer under {base}"
            raise ArtifactError(
                f"no {where} named {name!r}; available: "
                f"{', '.join(bundled_names(base)) or 'none'}"
            )
        path = candidate / version if version else latest_version(candidate)
        if not (path / "manifest.json").is_file():
            raise ArtifactError(f"{name!r} has no version {version!r} under {base}")
    elif path.is_dir() and not (path / "manifest.json").exists() and not (
        path / "tokenizer.json"
    ).exists():
        path = latest_version(path)
    return Tokenizer(load_artifact(path, tables=tables, **options))


# tiktoken's API (after ``load``, which it is built on)
from .encoding import Encoding as Encoding  # noqa: E402
from .encodings import encoding_for_model as encoding_for_model  # noqa: E402
from .encodings import encoding_name_for_model as encoding_name_for_model  # noqa: E402
from .encodings import get_encoding as get_encoding  # noqa: E402
from .encodings import list_encoding_names as list_encoding_names  # noqa: E402
