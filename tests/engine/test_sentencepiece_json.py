"""A SentencePiece ``.model`` converted to a tokenizer.json dict gives sentencepiece's ids.

Checked independently of our engine: the dict is loaded by ``tokenizers`` (the engine's
reference) and compared with ``sentencepiece.SentencePieceProcessor.encode`` on several
hundred ordinary texts (sentencepiece_inputs.texts), for small models trained here
(Unigram and BPE, with and without byte fallback, user-defined and control symbols,
nmt_nfkc and identity normalization); the shared Llama 2 and Mistral files are
test_sentencepiece_shared.py's. What cannot be exact is refused by name.

Where the two references cannot agree, the test says why for every text: ``tokenizers``'
``Precompiled`` normalizes a grapheme cluster at once (a mapped character followed by a
combining mark loses the mark; sentencepiece maps character by character), and Unigram
ties (the same pieces in another order) and near-ties break differently in
sentencepiece's float32 path sums than in tokenizers' float64 ones (on a long text,
float32 cannot tell apart paths 0.001 apart). Anything else fails.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from sentencepiece_inputs import bpe_pieces, field, model_proto, piece, texts, train

from tokserve.errors import ArtifactError, UnsupportedArtifact
from tokserve.sentencepiece_files import parse_model_proto
from tokserve.sentencepiece_json import tokenizer_json_from_proto

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")

#: user-defined symbols where sentencepiece isolates them (beside the dummy prefix, spaces)
SYMBOL_TEXTS = ["foo", "foo bar", " foo", "afoo", "foobar", "a foo b", "<tag>", "<tag>x<tag>",
                "a  <tag>  b", "foofoo", "foo  foo", "  foo  ", "\tfoo\n", "x<tag>foo<tag>"]
TRAINED = {
    "unigram-nfkc": dict(model_type="unigram"),
    "unigram-nfkc-bytes-symbols": dict(model_type="unigram", byte_fallback=True,
                                       user_defined_symbols=["<tag>", "foo"],
                                       control_symbols=["<ctl>", "[X]"]),
    "unigram-identity": dict(model_type="unigram", normalization_rule_name="identity"),
    "unigram-identity-spaces-kept-no-prefix": dict(
        model_type="unigram", normalization_rule_name="identity", byte_fallback=True,
        remove_extra_whitespaces=False, add_dummy_prefix=False),
    "bpe-identity-bytes-symbols": dict(model_type="bpe", normalization_rule_name="identity",
                                       byte_fallback=True, user_defined_symbols=["<tag>", "foo"],
                                       control_symbols=["<ctl>"]),
    "bpe-nfkc": dict(model_type="bpe"),
    "bpe-nfkc-bytes-no-prefix": dict(model_type="bpe", byte_fallback=True,
                                     add_dummy_prefix=False),
}


def _references(data: bytes, add_bos: bool | None = None):
    spec = tokenizer_json_from_proto(parse_model_proto(data), "model", add_bos=add_bos)
    return (spm.SentencePieceProcessor(model_proto=data),
            tokenizers.Tokenizer.from_str(json.dumps(spec)), spec)


def _normalized(tok, text: str) -> str:
    return tok.normalizer.normalize_str(text) if tok.normalizer is not None else text


def _float_tie(ours: list[int], theirs: list[int], sp) -> bool:
    """Whether every stretch where the two segmentations differ covers the same text
    with the same pieces in another order, or, without unknown or byte pieces in it,
    with scores equal within float32 resolution of the path score so far (sentencepiece
    sums a whole text's path in float32; tokenizers in float64)."""
    i = j = 0
    path = 0.0
    while i < len(ours) and j < len(theirs):
        if ours[i] == theirs[j]:
            path += sp.get_score(ours[i])
            i, j = i + 1, j + 1
            continue
        a, b, start_i, start_j = "", "", i, j
        while True:  # the shortest stretch after which both have covered the same pieces
            if len(a) <= len(b):
                a, i = a + sp.id_to_piece(ours[i]), i + 1
            else:
                b, j = b + sp.id_to_piece(theirs[j]), j + 1
            if len(a) == len(b) or i == len(ours) or j == len(theirs):
                break
        mine, their = ours[start_i:i], theirs[start_j:j]
        if a != b:
            return False
        if Counter(mine) == Counter(their):
            continue
        if any(sp.is_unknown(t) or sp.is_byte(t) for t in mine + their):
            return False
        path += sum(map(sp.get_score, mine))
        if abs(sum(map(sp.get_score, mine)) - sum(map(sp.get_score, their))) > (
                2.0 ** -20 * abs(path) + 1e-5):
            return False
    return i == len(ours) and j == len(theirs)


@pytest.mark.parametrize("label", list(TRAINED))
def test_trained_models_give_sentencepieces_ids(label):
    options = TRAINED[label]
    sp, tok, _ = _references(train(**options))
    unigram = options["model_type"] == "unigram"
    grapheme, ties = [], []
    cases = texts() + tuple(SYMBOL_TEXTS)
    for text in cases:
        ours, theirs = tok.encode(text, add_special_tokens=False).ids, sp.encode(text)
        if ours == theirs:
            continue
        if _normalized(tok, text) != sp.normalize(text):
            grapheme.append(text)  # tokenizers' Precompiled, grapheme by grapheme
        elif unigram and _float_tie(ours, theirs, sp):
            ties.append(text)  # the same pieces in another order, or a float32 near-tie
        else:
            pytest.fail(f"{label}: {text!r}: {sp.id_to_piece(theirs)} != "
                        f"{[tok.id_to_token(i) for i in ours]}")
    if options.get("normalization_rule_name") == "identity":
        assert not grapheme
    if not unigram:
        assert not ties
    assert len(grapheme) + len(ties) < len(cases) // 20, (grapheme[:3], ties[:3])


def test_user_defined_symbols_are_isolated_as_sentencepiece_does():
    for options in (TRAINED["bpe-identity-bytes-symbols"], TRAINED["unigram-nfkc-bytes-symbols"]):
        sp, tok, _ = _references(train(**options))
        foo = sp.piece_to_id("foo")
        for text in SYMBOL_TEXTS:
            assert tok.encode(text, add_special_tokens=False).ids == sp.encode(text), text
        assert foo in sp.encode("a foo b")


def test_control_symbols_are_special_added_tokens_and_bos_follows_the_flag():
    data = train(**TRAINED["unigram-nfkc-bytes-symbols"])
    _, _, spec = _references(data)
    added = {t["content"]: t for t in spec["added_tokens"]}
    assert set(added) == {"<unk>", "<s>", "</s>", "<ctl>", "[X]"}
    assert all(t["special"] and not t["normalized"] for t in added.values())
    assert spec["post_processor"]["single"][0] == {"SpecialToken": {"id": "<s>", "type_id": 0}}
    sp, tok, spec = _references(data, add_bos=False)
    assert spec["post_processor"] is None
    assert tok.encode("hello").ids == sp.encode("hello")
    eos = tokenizer_json_from_proto(parse_model_proto(data), "m", add_bos=False, add_eos=True)
    assert eos["post_processor"]["single"] == [{"Sequence": {"id": "A", "type_id": 0}},
                                               {"SpecialToken": {"id": "</s>", "type_id": 0}}]


# ---------------------------------------------------------------- refusals


def _convert(data: bytes) -> dict:
    return tokenizer_json_from_proto(parse_model_proto(data, "x.model"), "x.model")


@pytest.mark.parametrize("options, named", [
    (dict(model_type="word"), "model_type WORD"),
    (dict(model_type="char"), "model_type CHAR"),
    (dict(model_type="bpe", treat_whitespace_as_suffix=True), "treat_whitespace_as_suffix"),
    (dict(model_type="unigram", user_defined_symbols=["\uff46oo"]),
     "user-defined piece 'ｆoo' that the normalization nmt_nfkc rewrites"),
], ids=["word", "char", "suffix", "user-defined-normalized"])
def test_what_cannot_be_exact_is_refused_by_name(options, named):
    with pytest.raises(UnsupportedArtifact, match=named) as info:
        _convert(train(**options))
    assert "x.model" in info.value.message


def test_denormalizer_rules_and_unused_pieces_are_refused():
    unigram = train(model_type="unigram")
    charsmap = parse_model_proto(unigram).normalizer_spec.precompiled_charsmap
    rules = field(5, field(1, "custom") + field(2, charsmap))
    with pytest.raises(UnsupportedArtifact, match=r"denormalizer_spec rules \(custom\)"):
        _convert(unigram + rules)
    with pytest.raises(UnsupportedArtifact, match="UNUSED piece 'zq' in a Unigram model"):
        _convert(unigram + piece("zq", -3.0, 5))
    pieces = bpe_pieces(["abc"])
    pieces[[p[0] for p in pieces].index("ab")] = ("ab", -0.0, 5)
    with pytest.raises(UnsupportedArtifact, match="UNUSED piece 'ab' that merges reach"):
        _convert(model_proto(pieces))
    orphan = bpe_pieces(["ab"]) + [("xy", -50.0, 1)]
    with pytest.raises(UnsupportedArtifact, match="'xy' holds 'x', which is no piece"):
        _convert(model_proto(orphan))


@pytest.mark.parametrize("pieces, byte_fallback, message", [
    ([("a", 0.0, 1)], False, "exactly one UNKNOWN piece, this one has 0"),
    (bpe_pieces(["ab"]) + [("ab", -9.0, 1)], False, "are both 'ab'"),
    (bpe_pieces(["ab"]), True, "lacks some of the 256 byte pieces"),
    (bpe_pieces(["ab"]) + [("<0x41>", 0.0, 6)], False, "byte pieces although byte_fallback"),
], ids=["no-unk", "duplicate", "missing-bytes", "stray-byte"])
def test_what_sentencepiece_refuses_is_an_artifact_error(pieces, byte_fallback, message):
    with pytest.raises(ArtifactError, match=message):
        _convert(model_proto(pieces, byte_fallback=byte_fallback))


def test_a_hand_written_bpe_model_agrees_with_sentencepiece():
    """The encoder in sentencepiece_inputs writes what sentencepiece reads: the checks
    above refuse real shapes, not artefacts of the test's own protos."""
    data = model_proto(bpe_pieces(["hello", "help", "▁he", "▁world"]))
    sp, tok, _ = _references(data)
    for text in ["hello help", "help world hello", "hhh", "world", "he llo"]:
        assert tok.encode(text, add_special_tokens=False).ids == sp.encode(text), text
