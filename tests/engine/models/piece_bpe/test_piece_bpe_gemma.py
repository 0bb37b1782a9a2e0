"""The piece BPE model against tokenizers' BPE model on Gemma 1 (256,000 pieces).

Gemma's vocabulary lacks the byte piece <0x09>, so a tab that is not a piece would be
<unk>; its normalizer prepends no "▁". Texts as in test_piece_bpe_files.py.
"""

from __future__ import annotations

import pytest

from piece_bpe_texts import hostile_texts, load_pair, mismatches, normalized, raw_texts


@pytest.fixture(scope="module")
def pair():
    return load_pair("gemma")


def test_texts_equal_reference(pair):
    ours, reference = pair
    texts = normalized(reference, raw_texts())
    assert ours.chunking
    assert mismatches(ours, reference, texts) == []
    assert mismatches(ours, reference, texts) == []


def test_hostile_equal_reference(pair):
    ours, reference = pair
    assert mismatches(ours, reference, list(hostile_texts(2000).values())) == []
