"""Write artifact version directories: the files plus a ``manifest.json`` that hashes them.

The manifest is what makes an artifact reproducible and auditable: every file's sha256,
the settings that change ids, where the files came from and under which licence, and
the content-derived ``tokenizer_hash`` computed by actually loading the result. Reading
and checking a version is versions.py's (and ``loading.verify_directory``'s).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..artifact import sha256_hex
from ..errors import ArtifactError
from ..formats import load_directory
from ..tokenizer import Tokenizer
from ..versions import MANIFEST, Manifest


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
