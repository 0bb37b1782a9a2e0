"""Offsets stage: token byte spans -> half-open offsets into the ORIGINAL text.

The engine tracks every token as a byte span of the (surrogate-repaired) original text:
ordinary text that the normalizer changed is mapped back through its alignment
(``realign``), literals through their character positions (``ByteCursor``), and only
at the end are the spans converted to the unit the caller asked for (``to_units``),
the single place where units are chosen. Lone surrogates were replaced by U+FFFD, which
is one code point and one UTF-16 unit like the surrogate it replaces; a surrogate pair
held as two code points was joined into its astral character, which is two UTF-16 units
like the pair. So utf16 offsets always index the caller's string, and char offsets do
too unless a ``str`` carried a split pair (it then counts as one code point; JSON
parsers join escaped pairs, so HTTP callers never see this).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Literal

from ._offsets import UNIT_BYTE, UNIT_CHAR, UNIT_UTF16, units_from_byte_spans

Units = Literal["char", "utf16", "byte"]

_UNIT_CODES = {"char": UNIT_CHAR, "utf16": UNIT_UTF16, "byte": UNIT_BYTE}


class ByteCursor:
    """Character index -> UTF-8 byte offset in ``text``, for indexes that never go back
    (one pass over the text however many are asked)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._char = 0
        self._byte = 0

    def at(self, index: int) -> int:
        self._byte += len(self._text[self._char:index].encode("utf-8"))
        self._char = index
        return self._byte


def realign(spans: list[int], align: list[tuple[int, int]] | None, inserted: list[int],
            base: int) -> list[int]:
    """Flat byte spans of a normalized text -> spans in the original text.

    ``inserted``: positions of bytes the pre-tokenizer added (ByteLevel's prefix space),
    which belong to no original byte; ``align``: per normalized byte, its original span
    relative to ``base`` (None: the text is the original at ``base``). A token that
    covers part of a normalized character covers the whole original chunk it came from.
    """
    if inserted:
        spans = [x - bisect_left(inserted, x) for x in spans]
    if align is None:
        return [x + base for x in spans] if base else spans
    n = len(align)
    end = align[-1][1] if align else 0
    out: list[int] = []
    for k in range(0, len(spans), 2):
        s, e = spans[k], spans[k + 1]
        start = align[s][0] if s < n else end
        out += (base + start, base + (align[e - 1][1] if e > s else start))
    return out


def to_units(data: bytes, spans: list[int], units: Units) -> list[tuple[int, int]]:
    """Convert flat byte spans over ``data`` (UTF-8 of the text) to ``units``.

    Raises:
        ValueError: ``units`` is not one of char, utf16, byte.
    """
    try:
        code = _UNIT_CODES[units]
    except KeyError:
        raise ValueError(f"units must be 'char', 'utf16' or 'byte', not {units!r}") from None
    return units_from_byte_spans(data, spans, code)
