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
from ..errors import ArtifactError, EngineError
from ..formats import load_directory
from ..loading import tokenizer_for
from ..versions import MANIFEST, Manifest, check_name


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
    ``str`` is the template text), stored as ``chat_template[.<name>].jinja``. Remaining
    ``fields`` go into the manifest as they are (preset, pattern, special_tokens,
    bos_token, source, license, ...). Returns the manifest.

    Invariants: ``name``, ``version`` and every template name are in the name grammar
    (versions.py), so nothing is written outside ``root``; a served version is never
    mutated (an existing one is refused); the files are written to
    ``root/name/.<version>.partial/`` and renamed into place only once they load, and a
    failed write removes that directory (and the name's directory when this call made
    it and it is left empty), so a refused import leaves nothing behind.
    """
    check_name(name, "name")
    check_name(version, "version")
    for tname in chat_templates or {}:
        check_name(tname, "chat template name")
    name_dir = Path(root) / name
    target = name_dir / version
    if target.exists():
        raise ArtifactError(f"{target} exists; artifact versions are immutable")
    made_name_dir = not name_dir.exists()
    staging = name_dir / f".{version}.partial"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        manifest = _write_version(staging, name, version, files, format=format,
                                  tokenizer_file=tokenizer_file, chat_templates=chat_templates,
                                  default_chat_template=default_chat_template, **fields)
        staging.rename(target)
    except BaseException as exc:
        if isinstance(exc, EngineError):  # name the files the caller gave, not our copies
            _name_sources(exc, staging, {**files, **{
                _template_file(t): (src if isinstance(src, Path) else f"chat template {t!r}")
                for t, src in (chat_templates or {}).items()}})
        shutil.rmtree(staging, ignore_errors=True)
        if made_name_dir:
            try:
                name_dir.rmdir()  # only when empty: a concurrent import may be using it
            except OSError:
                pass
        raise
    return manifest


def _write_version(staging: Path, name: str, version: str, files: dict[str, str | Path], *,
                   format: str, tokenizer_file: str,
                   chat_templates: dict[str, str | Path] | None,
                   default_chat_template: str | None, **fields: Any) -> Manifest:
    """The files, templates and manifest written into ``staging``, then loaded once (so a
    broken version fails here) and the manifest completed from that load."""
    hashes: dict[str, str] = {}
    for fname, src in files.items():
        if fname in ("", ".", "..") or Path(fname).name != fname:
            raise ArtifactError(f"file name {fname!r} is not a plain name inside the artifact")
        shutil.copyfile(src, staging / fname)
        hashes[fname] = sha256_hex((staging / fname).read_bytes())
    templates: dict[str, dict[str, str]] = {}
    for tname, src in (chat_templates or {}).items():
        fname = _template_file(tname)
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
    tok = tokenizer_for(load_directory(staging))
    manifest["vocab_size"] = tok.vocab_size
    manifest["special_tokens"] = tok.special_tokens
    manifest["tokenizer_hash"] = tok.hash
    _dump(staging / MANIFEST, manifest)
    return manifest


def _template_file(tname: str) -> str:
    return "chat_template.jinja" if tname == "default" else f"chat_template.{tname}.jinja"


def _name_sources(exc: EngineError, staging: Path, files: dict[str, str | Path]) -> None:
    """``exc``'s message with each staged copy's path replaced by its source's."""
    message = exc.message
    for fname, src in files.items():
        message = message.replace(str(staging / fname), str(src))
    exc.message = message.replace(str(staging), "the new version")
    exc.args = (exc.message,)


def _dump(path: Path, manifest: dict[str, Any]) -> None:
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
