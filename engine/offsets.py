"""Offsets stage: token byte spans -> half-open offsets into the ORIGINAL text.

The engine tracks every token as a byte span of the (surrogate-repaired) original text;
normalized segments are mapped back through their alignment before this stage, so
this is the single place where units are chosen. Lone surrogates were replaced by
U+FFFD, which is one code point and one UTF-16 unit like the surrogate it replaces;
a surrogate pair held as two code points was joined into its astral character, which
is two UTF-16 units like the pair. So utf16 offsets always index the caller's string,
and char offsets do too unless a ``str`` carried a split pair (it then counts as one
code point; JSON parsers join escaped pairs, so HTTP callers never see this).
"""

from __future__ import annotations

from typing import Literal

from ._offsets import UNIT_BYTE, UNIT_CHAR, UNIT_UTF16, units_from_byte_spans

Units = Literal["char", "utf16", "byte"]

_UNIT_CODES = {"char": UNIT_CHAR, "utf16": UNIT_UTF16, "byte": UNIT_BYTE}


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
