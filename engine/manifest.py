"""Write artifact version directories: the files plus a ``manifest.json`` that hashes them.

The manifest is what makes an artifact reproducible and auditable: every file's sha256,
the settings that change ids, where the files came from and under which licence, and
the content-derived ``tokenizer_hash`` computed by actually loading the result.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from .artifact import MANIFEST, sha256_hex
from .formats import load_directory
from .errors import ArtifactError
from .tokenizer import Tokenizer

_DIGITS = re.compile(r"(\d+)")

#: An artifact version's ``manifest.json``: ``name``, ``version``, ``format``,
#: ``tokenizer_file``, ``files`` (name -> sha256, every file verified at load),
#: ``chat_templates``, the settings that change ids, ``source``, ``license``, and the
#: ``vocab_size``, ``special_tokens`` and ``tokenizer_hash`` found by loading it.
Manifest = dict[str, Any]


def version_key(version: str) -> tuple[tuple[int, int, str], ...]:
    """The one ordering of artifact versions: natural sort, digit runs as numbers.

    ``"2" < "10"``, ``"1.9" < "1.10"``, ``"2a" < "10"``. A bare tokenizer name means its
    highest version by this key, in the engine (``load``) and in the service's registry.
    """
    parts = _DIGITS.split(version)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")


def write_artifact(
    root: str | Path,
    name: str,
    version: str,
    files: dict[str, str | Path],
    *,
    format: str,
    tokenizer_file: str,
    chat_templates: dict[str, str | Path] | None = None,
    default_chat_template: str | None = None,
    **fields: Any,
) -> Manifest:
    """Copy ``files`` (name in the artifact -> source path) into ``root/name/version``.

    ``chat_templates`` maps template names to Jinja sources (a ``Path`` is copied, a
    ``str`` is the template text), stored as ``chat_template[.<name>].jinja``. Remaining ``fields`` go into the manifest as they
    are (preset, pattern, special_tokens, bos_token, source, license, ...).
    Refuses to overwrite an existing version: a served version is never mutated.
    Returns the manifest.
    """
    target = Path(root) / name / version
    if target.exists():
        raise ArtifactError(f"{target} exists; artifact versions are immutable")
    staging = target.with_name(f".{version}.partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    hashes: dict[str, str] = {}
    for fname, src in files.items():
        shutil.copyfile(src, staging / fname)
        hashes[fname] = sha256_hex((staging / fname).read_bytes())
    templates: dict[str, dict[str, str]] = {}
    for tname, src in (chat_templates or {}).items():
        fname = "chat_template.jinja" if tname == "default" else f"chat_template.{tname}.jinja"
        if isinstance(src, Path):
            shutil.copyfile(src, staging / fname)
        else:
            (staging / fname).write_bytes(src.encode("utf-8"))
        digest = sha256_hex((staging / fname).read_bytes())
        hashes[fname] = digest
        templates[tname] = {"file": fname, "sha256": "sha256:" + digest}
    manifest: dict[str, Any] = {
        "name": name,
        "version": version,
        "format": format,
        "tokenizer_file": tokenizer_file,
        "files": hashes,
        **fields,
        "chat_templates": templates,
        "default_chat_template": default_chat_template or (
            "default" if "default" in templates else None),
    }
    _dump(staging / MANIFEST, manifest)
    tok = Tokenizer(load_directory(staging))
    manifest["vocab_size"] = tok.vocab_size
    manifest["special_tokens"] = tok.special_tokens
    manifest["tokenizer_hash"] = tok.hash
    _dump(staging / MANIFEST, manifest)
    staging.rename(target)
    return manifest


def _dump(path: Path, manifest: dict[str, Any]) -> None:
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def verify_directory(directory: str | Path) -> dict[str, Any]:
    """Re-check an artifact version: every file's sha256, then a full load whose
    content hash must equal the manifest's ``tokenizer_hash``.

    Raises:
        ArtifactError: naming the first file or value that does not match.
    """
    directory = Path(directory)
    tok = Tokenizer(load_directory(directory))
    manifest = tok.manifest or {}
    recorded = manifest.get("tokenizer_hash")
    if recorded is not None and recorded != tok.hash:
        raise ArtifactError(
            f"{directory}: content hash {tok.hash} differs from the manifest's {recorded}"
        )
    return manifest
