"""Artifact version directories: ``<root>/<name>/<version>/manifest.json`` plus its files.

The one home of what such a directory is, for the engine (``load``, the model table)
and the service (its registry) alike:

* the name grammar: artifact names and versions (and chat template names, which become
  file names) are 1 to 128 ASCII letters, digits, ``.``, ``_`` and ``-``, not starting
  with ``.`` (so never ``.``, ``..``, a path, ``name@version`` or a hidden directory);
  ``check_name`` refuses anything else, at import, train, export, load and discovery;
* discovery: which names and versions a root holds (``names``, ``versions``,
  ``version_dirs``); a version is a directory, not hidden (``.<version>.partial`` is
  an import still being written, skipped silently), holding a ``manifest.json`` file,
  whose name and version directories follow the grammar (any other is skipped with a
  warning: it could not be addressed, so it is never served);
* the version rule: ``version_key``, one natural ordering; a bare name means its
  highest version (``latest_version``);
* resolution: ``name`` or ``name@version`` under a root -> a version directory
  (``split_ref``, ``resolve``); the bundled root is the package data
  ``tokserve.artifacts`` (``bundled_root``);
* the manifest: read and checked for the keys every version has (``read_manifest``),
  every file it names hashed against it (``verify_files``), and the content hash a
  full load found compared with the one it records (``check_tokenizer_hash``).

Writing a version (hashing files into a new manifest) is authoring's job
(authoring/manifest.py); turning the files into an ``Artifact`` is formats.py's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
from pathlib import Path
from typing import Any

from .artifact import _read
from .errors import ArtifactError
from .file_checks import parse_json

MANIFEST = "manifest.json"

#: An artifact version's ``manifest.json``: ``name``, ``version``, ``format``,
#: ``tokenizer_file``, ``files`` (name -> sha256, every file verified at load),
#: ``chat_templates``, the settings that change ids, ``source``, ``license``, and the
#: ``vocab_size``, ``special_tokens`` and ``tokenizer_hash`` found by loading it.
Manifest = dict[str, Any]

_REQUIRED = ("name", "version", "format", "tokenizer_file", "files")
_DIGITS = re.compile(r"(\d+)")

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- the name grammar

#: what ``check_name`` accepts, as said in every refusal, the CLI help and docs/SERVICE.md
NAME_GRAMMAR = ("1 to 128 characters: ASCII letters, digits, '.', '_' and '-', "
                "not starting with '.'")
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def is_valid_name(value: object) -> bool:
    """``value`` is a string in the name grammar (``NAME_GRAMMAR``)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(value: object, what: str = "name") -> str:
    """``value`` if it is in the name grammar, the one rule for artifact names, versions
    and chat template names: each becomes one path component under the artifact root,
    so the grammar is what keeps every write inside it and every artifact addressable
    as ``name@version``.

    Raises:
        ArtifactError: one line naming ``what``, the value (repr: a newline shows as
            ``\\n``) and the grammar.
    """
    if isinstance(value, str) and _NAME.fullmatch(value):
        return value
    shown = repr(value)
    if len(shown) > 80:
        shown = f"{shown[:60]}... ({len(shown)} characters quoted)"
    raise ArtifactError(f"invalid {what} {shown}: {NAME_GRAMMAR}", **{what: value})


# ---------------------------------------------------------------- the version rule


def version_key(version: str) -> tuple[tuple[int, int, str], ...]:
    """The one ordering of artifact versions: natural sort, digit runs as numbers.

    ``"2" < "10"``, ``"1.9" < "1.10"``, ``"2a" < "10"``. A bare tokenizer name means its
    highest version by this key, in the engine (``load``) and in the service's registry.
    """
    parts = _DIGITS.split(version)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")


# ---------------------------------------------------------------- discovery


def is_version_dir(path: Path) -> bool:
    """``path`` is an artifact version: a visible directory holding a manifest file,
    named in the grammar (one that is not is skipped with a warning)."""
    if path.name.startswith(".") or not (path / MANIFEST).is_file():
        return False  # hidden (an import being written, or its leftover) or not a version
    return _named_in_grammar(path, "version")


def versions(name_dir: str | Path) -> list[Path]:
    """The version directories under ``<root>/<name>``, sorted by directory name."""
    name_dir = Path(name_dir)
    if not name_dir.is_dir():
        return []
    return sorted(p for p in name_dir.iterdir() if is_version_dir(p))


def names(root: str | Path) -> list[str]:
    """The names under ``root`` with at least one version, sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if not p.name.startswith(".") and _holds_a_version(p)
                  and _named_in_grammar(p, "name"))


def _holds_a_version(path: Path) -> bool:
    """Whether ``path`` holds a visible directory with a manifest (no warning: the
    version names are ``versions``' to judge, once per scan)."""
    return path.is_dir() and any(not p.name.startswith(".") and (p / MANIFEST).is_file()
                                 for p in path.iterdir())


def _named_in_grammar(path: Path, what: str) -> bool:
    if is_valid_name(path.name):
        return True
    log.warning("artifact directory %s skipped: invalid %s %r (%s)", path, what, path.name,
                NAME_GRAMMAR)
    return False


def version_dirs(root: str | Path) -> list[Path]:
    """Every ``<root>/<name>/<version>/`` directory, by name then version directory name
    (scan order; an absent root holds none)."""
    return [vdir for name in names(root) for vdir in versions(Path(root) / name)]


def latest_version(name_dir: str | Path) -> Path:
    """The version directory under ``name_dir`` that a bare name means (``version_key``).

    Raises:
        ArtifactError: ``name_dir`` holds no version.
    """
    found = versions(name_dir)
    if not found:
        raise ArtifactError(f"{name_dir} holds no artifact version (no */{MANIFEST})")
    return max(found, key=lambda p: version_key(p.name))


# ---------------------------------------------------------------- resolution


def split_ref(ref: str) -> tuple[str, str | None]:
    """``"name@version"`` -> ``(name, version)``; ``"name"`` -> ``(name, None)``."""
    name, sep, version = ref.partition("@")
    return name, (version if sep else None)


def bundled_root() -> Path:
    """Where the bundled artifacts live: the package data ``tokserve.artifacts``.

    Found through the import system, so it is right for a wheel install
    (``site-packages/tokserve/artifacts``) and an editable one (the checkout's
    ``artifacts/``) alike, from any working directory. No environment variable: callers
    that serve other roots pass them (``load(..., root=)``, the service's settings).
    """
    spec = importlib.util.find_spec(f"{__package__}.artifacts")
    if spec is None or not spec.submodule_search_locations:
        raise ArtifactError(f"this installation has no {__package__}.artifacts package data")
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_names(root: str | Path | None = None) -> list[str]:
    """Names with at least one version under ``root`` (default: the bundled root)."""
    return names(bundled_root() if root is None else root)


def resolve(ref: str, root: str | Path | None = None) -> Path:
    """The version directory ``ref`` (``name`` or ``name@version``) means under ``root``
    (default: the bundled root): that version, or the name's latest.

    Raises:
        ArtifactError: a name or version outside the grammar (``check_name``), no such
            name (the message lists the names there), or no such version of it.
    """
    base = bundled_root() if root is None else Path(root)
    name, version = split_ref(ref)
    check_name(name, "name")
    if version is not None:
        check_name(version, "version")
    candidate = base / name
    if not candidate.is_dir():
        where = "bundled tokenizer" if root is None else f"tokenizer under {base}"
        raise ArtifactError(
            f"no {where} named {name!r}; available: {', '.join(names(base)) or 'none'}"
        )
    path = candidate / version if version else latest_version(candidate)
    if not (path / MANIFEST).is_file():
        raise ArtifactError(f"{name!r} has no version {version!r} under {base}")
    return path


# ---------------------------------------------------------------- the manifest


def read_manifest(directory: Path) -> tuple[Manifest, bytes]:
    """``directory``'s manifest, checked to hold the keys every version has, and its raw
    bytes (whose sha256 keys the version's compiled tables, tables.py).

    Raises:
        ArtifactError: unreadable, not a JSON object, a required key missing, or a name
            or version outside the grammar.
    """
    raw = _read(directory / MANIFEST)
    manifest = parse_json(raw, directory / MANIFEST)  # UTF-8 only, any depth refused cleanly
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{directory / MANIFEST} is not a JSON object")
    for key in _REQUIRED:
        if key not in manifest:
            raise ArtifactError(f"{directory / MANIFEST} lacks required key {key!r}")
    for key in ("name", "version"):
        if not is_valid_name(manifest[key]):
            raise ArtifactError(f"{directory / MANIFEST}: invalid {key} {manifest[key]!r}: "
                                f"{NAME_GRAMMAR}")
    return manifest, raw


def verify_files(directory: Path, manifest: Manifest) -> dict[str, str]:
    """Every file the manifest names must exist and match its sha256; returns the
    digests (file name -> hex) it checked."""
    digests: dict[str, str] = {}
    for fname, expected in manifest["files"].items():
        target = directory / fname
        if Path(fname).is_absolute() or ".." in Path(fname).parts:
            raise ArtifactError(f"{directory / MANIFEST}: file name {fname!r} escapes the artifact")
        actual = _file_sha256(target)
        if actual != expected:
            raise ArtifactError(
                f"{target}: sha256 {actual[:12]}… does not match the manifest's "
                f"{str(expected)[:12]}…; the file was modified or corrupted",
                path=str(target),
            )
        digests[fname] = actual
    return digests


def check_tokenizer_hash(directory: Path, manifest: Manifest, found: str) -> None:
    """The content hash a full load ``found`` must be the one the manifest records
    (``tokenizer_hash``, written when the version was; a manifest without one passes).

    Raises:
        ArtifactError: naming both hashes.
    """
    recorded = manifest.get("tokenizer_hash")
    if recorded is not None and recorded != found:
        raise ArtifactError(
            f"{directory}: content hash {found} differs from the manifest's {recorded}"
        )


def _file_sha256(path: Path) -> str:
    """In small blocks: a file read whole for its hash would leave a buffer of its size
    in the process's heap (measured in benchmarks/README.md, "Memory")."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except FileNotFoundError:
        raise ArtifactError(f"tokenizer file not found: {path}", path=str(path)) from None
    except OSError as e:
        raise ArtifactError(f"cannot read tokenizer file {path}: {e}", path=str(path)) from e
