"""Normalizer stage: Unicode normalization with an alignment back to the original.

Offsets must point into the text the client sent, not the normalized one, so every
normalized segment carries, per normalized UTF-8 byte, the original byte span it came
from. Normalization is done per chunk (a starter plus the combining marks after it);
when chunk-wise results do not concatenate to the whole-text result (rare composition
across starters), the whole segment is one chunk: offsets get coarser, ids never change.

The Unicode version is the reference's: ``tokenizers`` normalizes with Unicode 9.0 data,
so for tokenizer.json artifacts the characters assigned since (and taking part in
normalization now) are left untouched, each one a boundary nothing normalizes across
(``tools/gen_normalization_tables.py`` explains why that is exact and how 9.0 was found).
"""

from __future__ import annotations

from typing import Any

import regex

from ..errors import UnsupportedArtifact
from .normalization_tables import UNKNOWN_TO_TOKENIZERS

import unicodedata2 as unicodedata  # newer Unicode data than the interpreter's

_FORMS = {"NFC", "NFKC", "NFD", "NFKD"}

#: per reference, a regex (one capturing group) of the characters its data does not know
_UNKNOWN = {
    "tokenizers": regex.compile(
        "([%s])" % "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in UNKNOWN_TO_TOKENIZERS)),
}


class Normalizer:
    """Immutable; ``forms`` is the list of normalization forms applied in order."""

    def __init__(self, spec: dict[str, Any] | None, reference: str = "tokenizers") -> None:
        self.forms: list[str] = []
        self._unknown = _UNKNOWN.get(reference)
        self._collect(spec)

    def _collect(self, spec: dict[str, Any] | None) -> None:
        if spec is None:
            return
        kind = spec.get("type")
        if kind == "Sequence":
            for child in spec.get("normalizers", []):
                self._collect(child)
        elif kind in _FORMS:
            self.forms.append(kind)
        else:
            raise UnsupportedArtifact(f"normalizer {kind!r}")

    def __bool__(self) -> bool:
        return bool(self.forms)

    def apply(self, text: str) -> str:
        for form in self.forms:
            text = self._normalize(form, text)
        return text

    def _normalize(self, form: str, text: str) -> str:
        if self._unknown is None or not self._unknown.search(text):
            return unicodedata.normalize(form, text)
        parts = self._unknown.split(text)  # odd indices: the unknown characters themselves
        return "".join(p if i % 2 else unicodedata.normalize(form, p)
                       for i, p in enumerate(parts))

    def normalize(self, text: str) -> tuple[str, list[tuple[int, int]] | None]:
        """Returns the normalized text and, if it differs, per normalized UTF-8 byte the
        original byte span ``(start, end)`` relative to ``text``; ``None`` means identity."""
        out = self.apply(text)
        if out == text:
            return out, None
        chunks = _chunks(text)
        pieces = [self.apply(c) for c in chunks]
        if "".join(pieces) != out:
            chunks, pieces = [text], [out]
        align: list[tuple[int, int]] = []
        pos = 0
        for chunk, piece in zip(chunks, pieces):
            width = len(chunk.encode("utf-8"))
            align.extend([(pos, pos + width)] * len(piece.encode("utf-8")))
            pos += width
        return out, align


def _chunks(text: str) -> list[str]:
    chunks: list[str] = []
    start = 0
    for i in range(1, len(text)):
        if unicodedata.combining(text[i]) == 0 and not _is_jamo_continuation(text[i]):
            chunks.append(text[start:i])
            start = i
    chunks.append(text[start:])
    return chunks


def _is_jamo_continuation(ch: str) -> bool:
    return "\u1160" <= ch <= "\u11ff" or "\ud7b0" <= ch <= "\ud7ff"
