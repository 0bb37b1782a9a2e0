"""Normalizer stage: forms, alignment back to the original, offsets through it."""

from __future__ import annotations

import unicodedata

import pytest

from tokserve.normalizers.normalizer import Normalizer


@pytest.mark.parametrize("form", ["NFC", "NFKC", "NFD", "NFKD"])
def test_normalizer_forms_match_unicodedata(form):
    norm = Normalizer({"type": "Sequence", "normalizers": [{"type": form}]})
    text = "e\u0301 ﬁ Å ① 한국어"
    assert norm.apply(text) == unicodedata.normalize(form, text)


def test_normalizer_identity_has_no_alignment():
    assert Normalizer({"type": "NFC"}).normalize("plain text") == ("plain text", None)


def test_normalizer_alignment_points_into_original():
    text = "ae\u0301b"  # the e + combining acute composes to one character
    out, align = Normalizer({"type": "NFC"}).normalize(text)
    assert out == "aéb"
    # normalized bytes: a | é (2 bytes) | b; original bytes: a | e + U+0301 (3 bytes) | b
    assert align == [(0, 1), (1, 4), (1, 4), (4, 5)]


def test_normalizer_unknown_is_unsupported():
    from tokserve.errors import UnsupportedArtifact

    with pytest.raises(UnsupportedArtifact, match="Lowercase"):
        Normalizer({"type": "Lowercase"})
