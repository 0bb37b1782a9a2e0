"""The piece pipeline's stages, each against the same stage of Hugging Face ``tokenizers``.

Normalizers (plain and aligned ways give the reference's string), pre-tokenizers (pieces
AND their offsets, which ``pre_tokenize_str`` reports, so the alignment is checked too),
and decoder chains (``decode`` and a token-by-token stream both give the reference's text).
Seeded random inputs mix the characters these stages treat specially.
"""

from __future__ import annotations

import random

import pytest
from tokenizers import Regex
from tokenizers import decoders as D
from tokenizers import normalizers as N
from tokenizers import pre_tokenizers as P

from tokserve.decoders.piece_decoder import PieceDecoder
from tokserve.errors import UnsupportedArtifact
from tokserve.normalizers.aligned import AlignedText
from tokserve.normalizers.piece_normalizer import PieceNormalizer
from tokserve.pre_tokenizers.piece_pre_tokenizer import PiecePreTokenizer

ALPHABET = ["a", "b", "Z", " ", "  ", "\t", "\n", "▁", "é", "e\u0301", "Σ", "ß", "İ", "ﬁ",
            "Ａ", "日", "😀", "\u3000", "\x1c", "-", "--", ".", "x y", "\u200d"]


def _texts(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    out = ["", " ", "  ", "a", " a", "a ", "▁", " ▁ ", "Σ Σa aΣ"]
    for _ in range(n):
        out.append("".join(rnd.choice(ALPHABET) for _ in range(rnd.randrange(1, 12))))
    return out


NORMALIZERS = [
    ({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                          {"type": "Replace", "pattern": {"String": " "},
                                           "content": "▁"}]},
     N.Sequence([N.Prepend("▁"), N.Replace(" ", "▁")])),
    ({"type": "Replace", "pattern": {"String": " "}, "content": "▁"}, N.Replace(" ", "▁")),
    ({"type": "Replace", "pattern": {"String": "--"}, "content": "—"}, N.Replace("--", "—")),
    ({"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
     N.Sequence([N.NFKC(), N.Lowercase()])),
    ({"type": "NFD"}, N.NFD()),
    # what a SentencePiece model's remove_extra_whitespaces converts to
    ({"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"Regex": r"\A +"}, "content": ""},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        {"type": "Replace", "pattern": {"Regex": r"[ ▁]+\z"}, "content": ""}]},
     N.Sequence([N.Replace(Regex(r"\A +"), ""), N.Replace(Regex(" {2,}"), " "),
                 N.Replace(Regex(r"[ ▁]+\z"), "")])),
    ({"type": "Replace", "pattern": {"Regex": "^a|b$"}, "content": "<>"},
     N.Replace(Regex("^a|b$"), "<>")),
    ({"type": "NFC"}, N.NFC()),
    ({"type": "Strip", "strip_left": True, "strip_right": False}, N.Strip(True, False)),
    ({"type": "Strip", "strip_left": True, "strip_right": True}, N.Strip(True, True)),
    ({"type": "Lowercase"}, N.Lowercase()),
]


@pytest.mark.parametrize(("spec", "reference"), NORMALIZERS, ids=lambda x: str(x)[:40])
def test_normalizers_give_the_reference_string_both_ways(spec, reference):
    ours = PieceNormalizer(spec)
    for text in _texts(300, 1):
        expected = reference.normalize_str(text)
        assert ours.apply(text) == expected, repr(text)
        at = ours.apply_aligned(AlignedText(text))
        assert at.text == expected, repr(text)
        assert len(at.align) == len(at.text)


PRE_TOKENIZERS = [
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
     P.Metaspace(replacement="▁", prepend_scheme="first", split=True)),
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
     P.Metaspace(replacement="▁", prepend_scheme="always", split=True)),
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": False},
     P.Metaspace(replacement="▁", prepend_scheme="never", split=False)),
    ({"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},  # T5's legacy form
     P.Metaspace(replacement="▁", prepend_scheme="always")),
    ({"type": "WhitespaceSplit"}, P.WhitespaceSplit()),
    ({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                            {"type": "Metaspace", "replacement": "▁",
                                             "add_prefix_space": True}]},
     P.Sequence([P.WhitespaceSplit(), P.Metaspace(replacement="▁")])),
] + [
    ({"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert},
     P.Split(pattern if kind == "String" else Regex(pattern),
             behavior.lower().replace("mergedwith", "merged_with_"), invert=invert))
    for kind, pattern in (("String", " "), ("String", "--"), ("Regex", "<s>|</s>|▁+"),
                          ("Regex", r"\s+|\p{L}"))
    for behavior in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                     "Contiguous")
    for invert in (False, True)
]


@pytest.mark.parametrize(("spec", "reference"), PRE_TOKENIZERS, ids=lambda x: str(x)[:60])
def test_pre_tokenizers_give_the_reference_pieces_and_offsets(spec, reference):
    ours = PiecePreTokenizer(spec)
    for text in _texts(200, 2):
        expected = reference.pre_tokenize_str(text)
        got = [(p.text, (p.align[0][0], p.align[-1][1]))
               for p in ours.split_aligned(AlignedText(text))]
        assert got == expected, repr(text)
        assert ours.split(text, True) == [t for t, _ in expected], repr(text)


DECODERS = [
    ({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
     D.Sequence([D.Replace("▁", " "), D.ByteFallback(), D.Fuse(), D.Strip(" ", 1, 0)])),
    ({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}]},
     D.Sequence([D.Replace("▁", " "), D.ByteFallback(), D.Fuse()])),
    ({"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
     D.Metaspace(replacement="▁", prepend_scheme="always")),
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True},
     D.Metaspace(replacement="▁", prepend_scheme="never")),
    ({"type": "Sequence", "decoders": [
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": "▁", "start": 2, "stop": 2}]},
     D.Sequence([D.ByteFallback(), D.Fuse(), D.Strip("▁", 2, 2)])),
    ({"type": "Strip", "content": "x", "start": 1, "stop": 1}, D.Strip("x", 1, 1)),
]

TOKENS = ["▁", "▁▁", "▁Hello", "world", "▁▁x", "x", "<s>", "<0xE4>", "<0xB8>", "<0xAD>",
          "<0x41>", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>", "<0xFF>", " ", "x▁"]


@pytest.mark.parametrize(("spec", "reference"), DECODERS, ids=lambda x: str(x)[:60])
def test_decoder_chains_give_the_reference_text_whole_and_streamed(spec, reference):
    ours = PieceDecoder(spec)
    rnd = random.Random(3)
    for _ in range(400):
        tokens = [rnd.choice(TOKENS) for _ in range(rnd.randrange(0, 9))]
        try:
            expected = reference.decode(tokens)
        except BaseException:  # Strip's `stop` past a short token panics in tokenizers
            ours.decode(tokens)  # ours answers; there is nothing to compare with
            continue
        assert ours.decode(tokens) == expected, tokens
        stream = ours.stream()
        parts = [stream.feed([t]) for t in tokens] + [stream.finish()]
        assert "".join(parts) == expected, tokens


def test_a_byte_run_is_held_until_it_ends():
    stream = PieceDecoder(DECODERS[0][0]).stream()
    assert stream.feed(["▁中", "<0xE4>", "<0xB8>"]) == "中"
    assert stream.feed(["<0xAD>"]) == ""
    assert stream.feed(["▁x"]) == "中 x"
    assert stream.finish() == ""


@pytest.mark.parametrize(("stage", "spec", "named"), [
    (PieceNormalizer, {"type": "Sequence", "normalizers": [{"type": "NFC"},
                                                           {"type": "BertNormalizer"}]},
     "normalizer.normalizers[1]: normalizer 'BertNormalizer'"),
    (PieceNormalizer, {"type": "Replace", "pattern": {"Regex": " +\\Z"}, "content": ""},
     "normalizer: a regex with \\Z"),
    (PiecePreTokenizer, {"type": "Sequence", "pretokenizers": [{"type": "Punctuation"}]},
     "pre_tokenizer.pretokenizers[0]: pre_tokenizer 'Punctuation'"),
    (PieceDecoder, {"type": "Sequence", "decoders": [{"type": "WordPiece"}]},
     "decoder.decoders[0]: decoder 'WordPiece'"),
])
def test_an_unsupported_step_is_refused_by_name_and_path(stage, spec, named):
    with pytest.raises(UnsupportedArtifact) as info:
        stage(spec)
    assert named in str(info.value)
