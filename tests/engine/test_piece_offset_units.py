"""Piece tokenizers' offsets in UTF-16 units and bytes are their character offsets, converted.

tests/engine/test_families_exact.py holds character offsets to ``tokenizers``; this holds
the other two units to those, on the bundled piece tokenizers (so it runs without
../shared), for every policy and with the post-processor's tokens.
"""

from __future__ import annotations

from itertools import accumulate

import pytest
from corpus.pieces import build_piece_corpus

import tokserve

TEXTS = [c.text for c in build_piece_corpus()][::7]


def _converted(text: str, spans: list[tuple[int, int]], width) -> list[tuple[int, int]]:
    starts = list(accumulate((width(c) for c in text), initial=0))
    return [(starts[a], starts[b]) for a, b in spans]


@pytest.mark.parametrize("name", ["mistral-v0.3", "phi-3-mini"])
@pytest.mark.parametrize("policy", ["allow", "text"])
def test_utf16_and_byte_offsets_are_the_char_offsets_converted(name, policy):
    tok = tokserve.load(name)
    for text in TEXTS:
        for add in (False, True):
            ids, chars = tok.encode_with_offsets(text, "char", policy, add)
            assert ids == tok.encode(text, policy, add)
            _, utf16 = tok.encode_with_offsets(text, "utf16", policy, add)
            _, data = tok.encode_with_offsets(text, "byte", policy, add)
            assert utf16 == _converted(text, chars, lambda c: 2 if ord(c) > 0xFFFF else 1)
            assert data == _converted(text, chars, lambda c: len(c.encode("utf-8")))
