"""The piece BPE model against tokenizers' BPE model on Gemma 3 (262,144 pieces).

Gemma 3's merges are [a, b] pairs, and one merge, (">", "▁</"), joins across a "▁":
a chunk must not end before "▁" after ">" (or after a character that is no piece and
falls back to bytes "<0xNN>", which end with ">"). Texts as in test_piece_bpe_files.py,
plus HTML-like text where that merge applies.
"""

from __future__ import annotations

import pytest

from piece_bpe_texts import hostile_texts, load_pair, mismatches, normalized, raw_texts

HTML = ["<td>x</td> </tr>", "<a> </b>", "> </", "x> </y", "\U0001f600 </td>", "𒀀 </td>",
        "<b>bold</b> </p> </div>", ">" * 5 + " </" * 5]


@pytest.fixture(scope="module")
def pair():
    return load_pair("gemma3")


def test_texts_equal_reference(pair):
    ours, reference = pair
    texts = normalized(reference, raw_texts() + HTML)
    assert ours.chunking
    assert mismatches(ours, reference, texts) == []
    assert mismatches(ours, reference, texts) == []


def test_merge_across_space_is_kept(pair):
    ours, reference = pair
    data = "<td>▁</td>".encode()
    gt = ours.piece_to_id(">▁</")
    assert gt is not None and gt in ours.encode(data)
    assert mismatches(ours, reference, ["<td>▁</td>"]) == []


def test_hostile_equal_reference(pair):
    ours, reference = pair
    assert mismatches(ours, reference, list(hostile_texts(2000).values())) == []
