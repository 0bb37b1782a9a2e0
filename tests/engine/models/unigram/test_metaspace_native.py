"""``UnigramModel.encode_metaspace``: T5's pre-tokenizer done natively, piece for piece.

The native path (unigram_metaspace.h) must give exactly the ids of the Python path it
replaces (``PiecePreTokenizer.split``, then ``encode`` with the pieces' ends) and of
``tokenizers`` (its pre-tokenizer's pieces, each through ``model.tokenize``), on normalized
text aimed at every rule: each White_Space character (one, two and three UTF-8 bytes),
their non-White_Space neighbours that share a lead byte (U+0080..0084, U+00A1, U+1681,
U+200B, U+2030, U+2060, U+3001) and U+001C..001F (``str.isspace`` but not White_Space),
runs of the replacement inside, before and after words and alone, CJK, emoji, long words,
the GIL-free size and the empty text. T5's own shape (``always``, ``split``) is checked
against both references; the other schemes, ``split: false`` and other replacements
(one, two and four bytes, and a space) against the Python path and ``tokenizers``'
pre-tokenizer too.
"""

from __future__ import annotations

import itertools
import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
import tokserve

from tokserve.errors import ArtifactError
from tokserve.models.unigram._unigram import UnigramModel
from tokserve.pre_tokenizers.piece_pre_tokenizer import PiecePreTokenizer

from unigram_inputs import t5_file, t5_model_dict, t5_reference

tokenizers = pytest.importorskip("tokenizers")

WHITE_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
               + "\u2028\u2029\u202f\u205f\u3000")
#: not White_Space, yet beside it: the same UTF-8 lead byte, or ``str.isspace``
NEIGHBOURS = ("\x1c\x1d\x1e\x1f\x00\x08\x0e\x80\x84\x86\x9f\xa1\xa2\u1681\u180e\u200b"
              "\u200c\u2027\u202a\u202e\u2030\u205e\u2060\u3001\u30a2\ufeff")
OTHERS = "abcXYZ019.,-'<>é世界한😀\u0301▁▁▁"
FIXED = ["", " ", "   ", "\t\n", "▁", "▁▁▁", " ▁ ", "a▁", "▁a", "a▁▁b", "▁▁a▁", "a ▁ b",
         "Hello world", " Hello  world ", "▁Hello▁world", "x\x1cy", "x\x85y", "\x85", "\x1f",
         "世界 世界", "😀▁😀", "a" * 3000, "▁" * 600, "x" + "▁y" * 1000, "<unk> </s> <pad>",
         "word " * 700, ("abc▁ d\u3000é世界😀 " * 200)]


def _texts() -> list[str]:
    rng = random.Random(30)
    pools = [WHITE_SPACE, NEIGHBOURS, OTHERS, "▁", " "]
    texts = list(FIXED)
    for _ in range(1500):
        size = rng.choice((1, 2, 3, 5, 8, 20, 60))
        texts.append("".join(rng.choice(rng.choice(pools)) for _ in range(size)))
    return texts


TEXTS = _texts()


def _spec(replacement: str = "▁", scheme: str = "always", split: bool = True) -> dict:
    return {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"},
        {"type": "Metaspace", "replacement": replacement, "prepend_scheme": scheme,
         "split": split}]}


def _python_ids(model: UnigramModel, pre: PiecePreTokenizer, text: str,
                first: bool) -> list[int]:
    """The path the native one replaces: Python pieces, one model call with their ends."""
    pieces = [p.encode("utf-8") for p in pre.split(text, first)]
    if not pieces:
        return []
    return model.encode(b"".join(pieces), list(itertools.accumulate(map(len, pieces))))


def _reference_ids(ref, pre_tokenizer, text: str) -> list[int]:
    """tokenizers: its pre-tokenizer's pieces (the text begins the input), each through
    its model."""
    return [t.id for piece, _ in pre_tokenizer.pre_tokenize_str(text)
            for t in ref.model.tokenize(piece)]


@pytest.fixture(scope="module")
def t5() -> UnigramModel:
    return UnigramModel.from_json_dict(t5_model_dict())


@pytest.fixture(scope="module")
def t5_pre() -> PiecePreTokenizer:
    with open(t5_file(), encoding="utf-8") as fh:
        return PiecePreTokenizer(json.load(fh)["pre_tokenizer"])


def test_t5_shape_is_recognised(t5_pre):
    assert t5_pre.metaspace_words() == ("▁", "always", True)
    assert PiecePreTokenizer(_spec("_", "first", False)).metaspace_words() == (
        "_", "first", False)
    metaspace = _spec()["pretokenizers"][1]
    for other in (None, metaspace, {"type": "WhitespaceSplit"},
                  {"type": "Sequence", "pretokenizers": [metaspace, {"type": "WhitespaceSplit"}]},
                  {"type": "Sequence", "pretokenizers": _spec()["pretokenizers"] + [
                      {"type": "Split", "pattern": {"String": "x"}, "behavior": "Isolated"}]}):
        assert PiecePreTokenizer(other).metaspace_words() is None, other


def test_t5_equals_python_path_and_tokenizers(t5, t5_pre):
    ref = t5_reference()
    for text in TEXTS:
        data = text.encode("utf-8")
        expected = _reference_ids(ref, ref.pre_tokenizer, text)
        for first in (True, False):
            assert _python_ids(t5, t5_pre, text, first) == expected, (text, first)
            assert t5.encode_metaspace(data, "▁", first) == expected, (text, first)
            assert t5.count_metaspace(data, "▁", first) == len(expected), (text, first)
        assert t5.encode_metaspace(data) == expected, text  # T5's defaults


def test_cold_warm_and_uncached_agree(t5):
    uncached = UnigramModel.from_json_dict(t5_model_dict(), cache_capacity=0)
    t5.clear_cache()
    cold = [t5.encode_metaspace(t.encode()) for t in TEXTS]
    assert [t5.encode_metaspace(t.encode()) for t in TEXTS] == cold
    assert [uncached.encode_metaspace(t.encode()) for t in TEXTS] == cold
    assert uncached.cache_hits == uncached.cache_misses == 0
    assert t5.cache_hits > 0


def test_threads_agree(t5):
    long_texts = [t for t in TEXTS if len(t.encode()) >= 2048]  # the GIL is released
    assert len(long_texts) >= 4
    expected = [t5.encode_metaspace(t.encode()) for t in long_texts]
    t5.clear_cache()
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda t: t5.encode_metaspace(t.encode()), long_texts * 4))
    assert got == expected * 4


@pytest.mark.parametrize("replacement", ["▁", "_", "a", "é", "😀", " "])
@pytest.mark.parametrize("scheme", ["always", "first", "never"])
@pytest.mark.parametrize("split", [True, False])
def test_other_shapes(t5, replacement, scheme, split):
    pre = PiecePreTokenizer(_spec(replacement, scheme, split))
    ref = t5_reference()
    theirs = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.WhitespaceSplit(),
        tokenizers.pre_tokenizers.Metaspace(replacement, scheme, split)])
    pool = [t.replace("▁", replacement) for t in TEXTS[::5]] + TEXTS[:40]
    for text in pool:
        data = text.encode("utf-8")
        for first in (True, False):
            expected = _python_ids(t5, pre, text, first)
            got = t5.encode_metaspace(data, replacement, first, scheme, split)
            assert got == expected, (text, first)
            assert t5.count_metaspace(data, replacement, first, scheme, split) == len(got)
        assert t5.encode_metaspace(data, replacement, True, scheme, split) == \
            _reference_ids(ref, theirs, text), text


def test_missing_unk_raises_like_the_python_path():
    model = UnigramModel([("▁a", -1.0), ("a", -2.0), ("▁", -3.0), ("b", -4.0)])
    pre = PiecePreTokenizer(_spec())
    assert model.encode_metaspace("a ▁a\tab".encode()) == _python_ids(model, pre, "a ▁a\tab",
                                                                      True)
    for text in ("a c", "c", "a ▁c"):
        with pytest.raises(ArtifactError):
            _python_ids(model, pre, text, True)
        with pytest.raises(ArtifactError):
            model.encode_metaspace(text.encode())
        with pytest.raises(ArtifactError):
            model.count_metaspace(text.encode())


def test_bad_arguments(t5):
    for replacement in ("", "ab"):
        with pytest.raises(ValueError):
            t5.encode_metaspace(b"a", replacement)
    with pytest.raises(ValueError):
        t5.count_metaspace(b"a", "▁", True, "sometimes")
    with pytest.raises(TypeError):
        t5.encode_metaspace("a")


def test_t5_tokenizer_takes_the_native_path():
    ours = tokserve.load(t5_file())
    assert ours._metaspace == ("▁", "always", True)  # encode and count go native
    ref = t5_reference()
    texts = TEXTS[::3] + ["<extra_id_0>a b</s> ▁c", " </s>", "x<pad>"]
    for text in texts:
        expected = ref.encode(text, add_special_tokens=False).ids
        assert ours.encode(text, special_tokens="allow") == expected, text
        assert ours.count(text, special_tokens="allow") == len(expected), text
