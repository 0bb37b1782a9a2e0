"""What a file is, from its first bytes: the tokenizer formats tokserve reads, and the
files people pass by mistake, each named with what to pass instead.

Two tokenizers ship a file named ``tokenizer.model`` in different formats (Llama 2's is a
SentencePiece model, Llama 3's a tiktoken rank file), downloads sometimes save a web page
or a Git LFS pointer, and weights files sit beside tokenizer files: a file name says
little, so loaders and importers dispatch on ``sniff`` and refuse with ``refusal``.

Invariants: only the head (``HEAD`` bytes) is read; a positive answer needs the
format's own signature (a protobuf piece with a float score, a ``base64 rank`` line, a
JSON object with the format's keys, a magic number), so a kind is never guessed from
the name; anything else is ``UNKNOWN``, whose message lists what tokserve reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ArtifactError
from .sentencepiece_files import looks_like_model_proto

HEAD = 4096

#: the readable kinds (``FileKind.name``)
SENTENCEPIECE, TIKTOKEN, TOKENIZER_JSON, TEKKEN = ("sentencepiece", "tiktoken",
                                                   "tokenizer_json", "tekken")
UNKNOWN = "unknown"

READABLE = ("tokserve reads a Hugging Face tokenizer.json (or its directory), a SentencePiece "
            "tokenizer.model, a tiktoken rank file (with preset= or pattern=) or a Mistral "
            "tekken.json")


@dataclass(frozen=True)
class FileKind:
    name: str  # one of the readable kinds, or a short name of what else it is
    what: str  # "a SentencePiece model (protobuf)", "an HTML page", ...
    advice: str = ""  # what to pass instead ("" for a readable kind)

    @property
    def readable(self) -> bool:
        return self.name in (SENTENCEPIECE, TIKTOKEN, TOKENIZER_JSON, TEKKEN)


_RANK_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?")
_KINDS = {
    SENTENCEPIECE: FileKind(SENTENCEPIECE, "a SentencePiece model (protobuf)"),
    TIKTOKEN: FileKind(TIKTOKEN, "a tiktoken rank file (base64 token and rank per line)"),
    TOKENIZER_JSON: FileKind(TOKENIZER_JSON, "a Hugging Face tokenizer.json"),
    TEKKEN: FileKind(TEKKEN, "a Mistral tekken.json"),
}


def sniff(path: str | Path) -> FileKind:
    """The kind of the file at ``path`` (see ``sniff_bytes``).

    Raises:
        ArtifactError: the file cannot be read.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD)
    except FileNotFoundError:
        raise ArtifactError(f"tokenizer file not found: {path}", path=str(path)) from None
    except OSError as e:
        raise ArtifactError(f"cannot read tokenizer file {path}: {e}", path=str(path)) from e
    return sniff_bytes(head)


def sniff_bytes(head: bytes) -> FileKind:
    """The kind of a file whose first bytes are ``head`` (``HEAD`` of them suffice)."""
    head = head[:HEAD]
    if not head:
        return FileKind("empty", "an empty file", READABLE)
    if looks_like_model_proto(head):
        return _KINDS[SENTENCEPIECE]
    binary = _binary_kind(head)
    if binary is not None:
        return binary
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(head) >= 2 and 0 in head[:2]):
        return FileKind("utf16", "UTF-16 or UTF-32 encoded (a byte-order mark or NUL bytes at "
                        "its start)", "tokenizer files are UTF-8: convert it")
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"{"):
        return _json_kind(text)
    first = head.split(b"\n", 1)[0]
    if _RANK_LINE.fullmatch(first) and len(first) > 2:
        return _KINDS[TIKTOKEN]
    lowered = text[:64].lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<head")):
        return FileKind("html", "an HTML page, not the file itself",
                        "download the raw file (on the Hugging Face Hub the /resolve/ URL, "
                        "not /blob/)")
    if head.startswith(b"version https://git-lfs.github.com/spec/"):
        return FileKind("git_lfs", "a Git LFS pointer, not the file itself",
                        "fetch the content with `git lfs pull`")
    return FileKind(UNKNOWN, "not a tokenizer file", READABLE)


def _binary_kind(head: bytes) -> FileKind | None:
    """Compressed files, archives and model weights (cheap magic-number checks)."""
    weights = "a model's weights, not its tokenizer: pass the tokenizer files beside it"
    if head.startswith(b"\x1f\x8b"):
        return FileKind("gzip", "a gzip-compressed file", "decompress it first (gunzip)")
    if head.startswith(b"PK\x03\x04"):
        if b"data.pkl" in head or b"/version" in head:
            return FileKind("pytorch", "a PyTorch checkpoint (zip)", weights)
        return FileKind("zip", "a zip archive", "extract the tokenizer file from it first")
    if head.startswith(b"GGUF"):
        return FileKind("gguf", "a GGUF model file (llama.cpp)", weights)
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return FileKind("pickle", "a Python pickle (an older PyTorch checkpoint?)", weights)
    if len(head) > 9 and head[8:10] in (b'{"', b"{'") and 2 <= int.from_bytes(
            head[:8], "little") < 1 << 32:
        return FileKind("safetensors", "a safetensors weights file", weights)
    return None


#: top-level keys of a tokenizer.json, one of which its head holds ("model" comes last)
_TOKENIZER_JSON_KEYS = (b'"model"', b'"added_tokens"', b'"truncation"', b'"pre_tokenizer"',
                        b'"normalizer"', b'"post_processor"')


def _json_kind(text: bytes) -> FileKind:
    if any(key in text for key in _TOKENIZER_JSON_KEYS):
        return _KINDS[TOKENIZER_JSON]
    if b'"config"' in text and (b'"vocab"' in text or b'"pattern"' in text):
        return _KINDS[TEKKEN]
    if b'"tokenizer_class"' in text or b'"chat_template"' in text:
        return FileKind("tokenizer_config", "a tokenizer_config.json",
                        "pass the directory that holds it and its tokenizer.json")
    return FileKind("json", "a JSON file that is neither a tokenizer.json nor a tekken.json",
                    READABLE)


def refusal(path: str | Path, kind: FileKind, wanted: str | None = None) -> str:
    """One line saying what the file at ``path`` is and what to pass instead;
    ``wanted`` names what the caller asked for (e.g. "a tiktoken rank file")."""
    instead = f", not {wanted}" if wanted else ""
    advice = f": {kind.advice}" if kind.advice else ""
    return f"{path} is {kind.what}{instead}{advice}"
