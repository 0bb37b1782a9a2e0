"""Loading a piece BPE model: what tokenizers refuses we refuse, what we do not
implement is refused by name, and the vocabulary accessors.

tokenizers refuses at load a merge whose parts or result are not pieces, a merges line
that is not two pieces, a merges list mixing strings and pairs, and ids that are not
unsigned integers: ours raises ArtifactError for each. dropout, a continuing subword
prefix or an end-of-word suffix tokenizers implements but we do not: UnsupportedArtifact
naming the field (dropout 0 and empty affixes change nothing and load).
"""

from __future__ import annotations

import json

import pytest
import tokenizers

from tokserve.errors import ArtifactError, UnsupportedArtifact
from tokserve.models.piece_bpe._piece_bpe import PieceBpeModel, from_model

VOCAB = {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "▁": 4, "▁ab": 5, "<0x7A>": 6}
MERGES = ["a b", "▁ ab"]


def model(**fields) -> dict:
    base = {"type": "BPE", "dropout": None, "unk_token": "<unk>",
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
            "byte_fallback": True, "vocab": dict(VOCAB), "merges": list(MERGES)}
    base.update(fields)
    return base


def reference_loads(fields: dict) -> bool:
    try:
        tokenizers.Tokenizer.from_str(json.dumps({
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": None, "post_processor": None,
            "decoder": None, "model": fields}))
    except Exception:  # noqa: BLE001 - any refusal
        return False
    return True


@pytest.mark.parametrize("fields", [
    {"merges": ["a c"]},                       # a part that is not a piece
    {"merges": ["c a"]},
    {"merges": ["b a"]},                       # the result "ba" is not a piece
    {"merges": [["a", "c"]]},
    {"merges": ["a b c"]},                     # not two pieces
    {"merges": ["ab"]},
    {"merges": ["a  b"]},
    {"merges": ["a b", ["▁", "ab"]]},          # strings and pairs mixed
    {"merges": [["a", "b", "c"]]},
    {"vocab": dict(VOCAB, c=-1)},
    {"vocab": dict(VOCAB, c=1.5)},
    {"vocab": dict(VOCAB, c="1")},
])
def test_refused_like_tokenizers(fields):
    assert not reference_loads(model(**fields))
    with pytest.raises(ArtifactError):
        from_model(model(**fields))


def test_merge_error_names_the_piece():
    with pytest.raises(ArtifactError, match="'c'"):
        from_model(model(merges=["a b", "a c"]))
    with pytest.raises(ArtifactError, match="'ba'"):
        from_model(model(merges=[["b", "a"]]))


@pytest.mark.parametrize("field, value", [
    ("dropout", 0.1), ("continuing_subword_prefix", "##"), ("end_of_word_suffix", "</w>")])
def test_unimplemented_fields_refused_by_name(field, value):
    with pytest.raises(UnsupportedArtifact, match=field):
        from_model(model(**{field: value}), path="x/tokenizer.json")


@pytest.mark.parametrize("fields", [
    {"dropout": 0.0}, {"dropout": 0}, {"continuing_subword_prefix": ""},
    {"end_of_word_suffix": ""}, {"merges": ["#version: 0.2", "a b", "▁ ab"]},
    {"merges": [["a", "b"], ["▁", "ab"]]}, {"merges": ["a b", "a b", "▁ ab"]}, {"merges": []},
    {"unk_token": None}, {"unk_token": "<missing>"}, {"fuse_unk": None}, {"byte_fallback": None},
])
def test_accepted_and_equal(fields):
    fields = model(**fields)
    reference = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "model": fields}))
    ours = from_model(fields)
    for text in ["ab", "▁ab▁ab", "aab▁b", "z▁ab", "▁"]:
        tokens = reference.model.tokenize(text)
        assert ours.encode_with_spans(text.encode()) == (
            [t.id for t in tokens], [x for t in tokens for x in t.offsets])


def test_unk_token_not_a_piece_fails_only_when_needed():
    ours = from_model(model(unk_token="<missing>", byte_fallback=False))
    assert ours.encode("▁ab".encode()) == [5]
    with pytest.raises(ArtifactError, match="<missing>"):
        ours.encode("▁aq".encode())
    with pytest.raises(ArtifactError):
        ours.encode_many([b"ab", "q".encode()], 2)


def test_other_refusals():
    with pytest.raises(ArtifactError):
        from_model(model(type="WordPiece"))
    with pytest.raises(ArtifactError):
        from_model({"type": "BPE", "vocab": VOCAB})
    with pytest.raises(ArtifactError):
        from_model(model(vocab=dict(VOCAB, **{"\ud800": 9})))
    with pytest.raises(ArtifactError):
        from_model(model(fuse_unk="yes"))
    with pytest.raises(UnsupportedArtifact):
        from_model(model(vocab=dict(VOCAB, huge=1 << 30)))


def test_accessors():
    ours = from_model(model(vocab=dict(VOCAB, spare=9)))
    assert isinstance(ours, PieceBpeModel)
    assert ours.size == 10 and ours.vocab_size == 8 and ours.merge_count == 2
    assert ours.piece_to_id("▁ab") == 5 and ours.piece_to_id("nope") is None
    assert ours.id_to_piece(5) == "▁ab" and ours.id_to_piece(7) is None
    assert ours.id_to_piece(-1) is None and ours.id_to_piece(10) is None
    assert ours.id_to_piece(9) == "spare" and ours.unk_token == "<unk>"
    assert ours.piece_to_id("\ud800") is None
