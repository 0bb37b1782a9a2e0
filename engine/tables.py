"""Tables: an artifact version's compiled tables in a file every process maps and shares.

Why: each ``--workers`` process of the service used to parse the vocabulary files and
build its own copy of every tokenizer's tables. The BPE model's tables are one block of
memory with no pointers in it (bpe_image.h), so the first process to load a version
writes them to ``<tables dir>/<key>.tables`` and every process maps that file
read-only: the pages are the operating system's page cache, shared by all. A mapped
version also skips parsing its vocabulary file, whose Python objects were most of a
process's memory for tokenizer.json vocabularies.

File: a fixed head (magic, the lengths, the sha256 of everything after the head), then
JSON describing the artifact (its settings, everything but the vocabulary) and the
manifest it was built from (its sha256), then the image at a multiple of 64 bytes.

Trust: the key is the sha256 of the version's ``manifest.json``, whose files the loader
has just verified, and the file must name that same manifest; its own sha256 must hold,
and the image must pass ``BpeModel``'s layout checks. A file that fails any of these is
refused like a broken artifact (``ArtifactError`` naming it and the fix: delete it).
The directory must be one only this service writes to (the default is the user's own
cache directory): the checks catch damage, not a forger who recomputes the hash. It
holds one file per artifact version loaded (another layout's file for the same manifest
is removed when the new one is written); any file may be deleted at any time.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .artifact import AddedToken, Artifact
from .errors import ArtifactError
from .models.bpe._bpe import IMAGE_LAYOUT, Image, build_image

#: what the JSON part holds; bump with any change to it (the image has IMAGE_LAYOUT)
FORMAT = 1
_MAGIC = b"TOKTBLS\x01"
_HEAD = struct.Struct("<8sQQ32s")  # magic, json length, image length, sha256(json + image)
_ALIGN = 64
_SPEC_FIELDS = ("name", "format", "reference", "whole_piece_lookup", "normalizer",
                "pre_tokenizer", "post_processor", "bos_token", "eos_token", "pad_token",
                "add_bos_token", "add_eos_token", "hash")


def image_of(artifact: Artifact) -> Image | memoryview:
    """``artifact``'s compiled tables: mapped already, or built from its vocabulary."""
    if artifact.tables is not None:
        return artifact.tables
    return build_image(artifact.tokens, artifact.merges,
                       [(t.content.encode("utf-8"), t.id) for t in artifact.added_tokens],
                       tiktoken_data=artifact.tiktoken_data)


def key_of(manifest_bytes: bytes) -> str:
    """The file's key: the sha256 of the manifest the tables were built from."""
    return hashlib.sha256(manifest_bytes).hexdigest()


def path_for(directory: str | os.PathLike, key: str) -> Path:
    return Path(directory) / f"{key}.f{FORMAT}.l{IMAGE_LAYOUT}.tables"


def read(path: Path, key: str) -> tuple[dict[str, Any], memoryview] | None:
    """The artifact settings and the mapped image of ``path``; None when there is no
    such file.

    Raises:
        ArtifactError: the file is damaged, or was built from another manifest.
    """
    try:
        f = open(path, "rb")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise _damaged(path, str(e)) from e
    try:
        with f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:  # ValueError: an empty file cannot be mapped
        raise _damaged(path, str(e)) from e
    view = memoryview(mapped)
    if len(view) < _HEAD.size:
        raise _damaged(path, "shorter than its head")
    magic, json_len, image_len, digest = _HEAD.unpack(view[:_HEAD.size])
    start = _image_start(json_len)
    if magic != _MAGIC or start + image_len != len(view):
        raise _damaged(path, "head does not match the file's length")
    if hashlib.sha256(view[_HEAD.size:]).digest() != digest:
        raise _damaged(path, "sha256 mismatch")
    try:
        meta = json.loads(bytes(view[_HEAD.size:_HEAD.size + json_len]))
    except ValueError as e:
        raise _damaged(path, f"unreadable description: {e}") from e
    if meta.get("format") != FORMAT or meta.get("manifest_sha256") != key:
        raise _damaged(path, "built from another manifest or by another version")
    return meta["artifact"], view[start:]


def write(path: Path, key: str, artifact: Artifact, image: Image | bytes) -> None:
    """Write ``image`` (and ``artifact``'s settings) to ``path`` atomically: another
    process loading the same version at the same time finds the whole file or none."""
    spec = {name: getattr(artifact, name) for name in _SPEC_FIELDS}
    spec["added_tokens"] = [asdict(t) for t in artifact.added_tokens]
    meta = json.dumps({"format": FORMAT, "manifest_sha256": key, "artifact": spec},
                      ensure_ascii=False, sort_keys=True).encode("utf-8")
    pad = b"\0" * (_image_start(len(meta)) - _HEAD.size - len(meta))
    sha = hashlib.sha256(meta + pad)
    sha.update(image)  # a buffer: no bytes concatenation of the whole image
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tables-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_HEAD.pack(_MAGIC, len(meta), len(image), sha.digest()))
            f.write(meta + pad)
            f.write(image)
        try:
            os.link(tmp, path)  # never replaces a file another process may have mapped
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    for stale in path.parent.glob(f"{key}.*.tables"):  # this manifest, an older layout
        if stale != path:
            stale.unlink(missing_ok=True)  # a process mapping it keeps its pages


def artifact_from(spec: dict[str, Any], image: memoryview, **fields: Any) -> Artifact:
    """The artifact a tables file describes, its vocabulary being the mapped image."""
    added = tuple(AddedToken(**t) for t in spec["added_tokens"])
    settings = {name: spec[name] for name in _SPEC_FIELDS}
    return Artifact(tokens=None, merges=None, added_tokens=added, tables=image,
                    **settings, **fields)


def _image_start(json_len: int) -> int:
    return -(-(_HEAD.size + json_len) // _ALIGN) * _ALIGN


def _damaged(path: Path, why: str) -> ArtifactError:
    return ArtifactError(f"{path}: compiled tables refused ({why}); delete the file and "
                         f"the next load rebuilds it", path=str(path))
