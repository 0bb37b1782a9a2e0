"""The native added-token path of piece tokenizers (piece_cuts.py, _literal_split.pyx,
PieceBpeModel.encode_gaps) against the Python path it replaces and against tokenizers.

The native path is only taken where it is the Python path by construction; these tests
check that claim on Gemma 3 (6,415 raw literals: newline, tab and ▁ runs, html tags,
<unusedN>), policy by policy, and the literal search alone against AddedTokenScanner on
random literal sets (multi-byte characters, literals that are prefixes of others).
"""

from __future__ import annotations

import copy
import random
from array import array

import pytest

from shared_files import shared_file
from tokserve.added_vocabulary._literal_split import LiteralSplitter
from tokserve.added_vocabulary.added_tokens import AddedTokenScanner
from tokserve.added_vocabulary.piece_cuts import PieceCuts
from tokserve.artifact import AddedToken
from tokserve.errors import SpecialTokenInText
from tokserve.normalizers.piece_normalizer import PieceNormalizer

POLICIES = ("allow", "reject", "text")


def _token(content: str, tid: int, **flags: bool) -> AddedToken:
    fields = dict(id=tid, content=content, special=False, normalized=False, lstrip=False,
                  rstrip=False, single_word=False)
    fields.update(flags)
    return AddedToken(**fields)


def _byte_matches(text: str, scanner: AddedTokenScanner) -> list[int]:
    """AddedTokenScanner.find's matches as flat (byte start, byte end, id)."""
    out: list[int] = []
    for m in scanner.find(text):
        start = len(text[:m.start].encode())
        out += (start, start + len(text[m.start:m.end].encode()), m.id)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_splitter_equals_scanner_on_random_literals(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "ab<>\n\t ▁é中😀"
    count = rng.choice([3, 40, 400])  # the alternation regex, and the trie above 256
    literals = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
                for _ in range(count)}
    tokens = [_token(lit, 1000 + i) for i, lit in enumerate(sorted(literals))]
    tokens.append(_token(tokens[0].content, 7))  # a literal given twice: the later id
    scanner = AddedTokenScanner(tokens)
    splitter = LiteralSplitter({t.content.encode(): t.id for t in tokens}.items())
    for _ in range(300):
        text = "".join(rng.choice(alphabet + "xyz") for _ in range(rng.randint(0, 60)))
        assert list(splitter.find(text.encode())) == _byte_matches(text, scanner), text


def test_splitter_stops_at_refused() -> None:
    splitter = LiteralSplitter([(b"<a>", 1), (b"\n", 2), (b"\n\n", 3)], refused=[b"<a>"])
    assert list(splitter.find(b"x\n\n\ny")) == [1, 3, 3, 3, 4, 2]
    assert list(splitter.find(b"x\n<a>", True) or [0]) == [0]
    assert splitter.find(b"x\n<a>", True) is None
    assert list(splitter.find(b"x\n<a>")) == [1, 2, 2, 2, 5, 1]
    assert list(splitter.find(b"")) == []
    with pytest.raises(ValueError):
        LiteralSplitter([(b"", 1)])


def test_build_refuses_other_shapes() -> None:
    norm = PieceNormalizer({"type": "Replace", "pattern": {"String": " "}, "content": "▁"})
    assert PieceCuts.build((_token("\n", 1),), norm) is not None
    for flag in ("normalized", "lstrip", "rstrip", "single_word"):
        assert PieceCuts.build((_token("\n", 1, **{flag: True}),), norm) is None, flag
    other = PieceNormalizer({"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}, {"type": "NFC"}]})
    assert PieceCuts.build((_token("\n", 1),), other) is None
    empty = PieceNormalizer({"type": "Replace", "pattern": {"String": ""}, "content": "▁"})
    assert PieceCuts.build((_token("\n", 1),), empty) is None


@pytest.fixture(scope="module")
def gemma3():
    import tokenizers

    import tokserve

    path = shared_file("artifacts/gemma3/tokenizer.json")
    fast = tokserve.load(str(path))
    assert fast._cuts is not None, "Gemma 3 must take the native path"
    slow = copy.copy(fast)
    slow._cuts = None  # the Python path, same model and tables
    return fast, slow, tokenizers.Tokenizer.from_file(str(path))


def _texts() -> list[str]:
    rng = random.Random(30)
    texts = ["", " ", "  ", "a", "hello world", " leading", "trailing ", "a  b   c"]
    for n in range(1, 41):
        texts += ["\n" * n, "\t" * n, "▁" * n, " " * n, f"x{chr(10) * n}y",
                  f" {chr(9) * n} z", "\n\t" * (n // 2) + "▁" * (n % 5)]
    texts += ["<b>bold</b> </p>", "<td>x</td> </tr>\n<tr>", "<unused0>", "x <unused17> y",
              "<unused99999>", "<h1>Title</h1>\n\n<p>Para</p>\n", "<start_of_turn>user\nhi",
              "<end_of_turn>\n", "<bos>x", "def f():\n\treturn 1\n\n\n", "中文 \n\n 日本語",
              "emoji 😀\n\t\n", "é\u0301 ▁ x", "<", "<<b>>", "<b", "\n<b>\n</b>\n"]
    pieces = ["\n", "\n\n", "\t", " ", "▁", "<b>", "</b>", "<unused3>", "word", "中",
              "😀", "<start_of_turn>", "x", "  ", "\t\t\n"]
    for _ in range(200):
        texts.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))))
    return texts


def _outcome(fn, *args):
    try:
        return fn(*args)
    except SpecialTokenInText as e:
        return ("SpecialTokenInText", str(e))


def test_gemma3_native_equals_python_path(gemma3) -> None:
    fast, slow, _ = gemma3
    for text in _texts():
        for policy in POLICIES:
            for add in (False, True):
                got = _outcome(fast.encode, text, policy, add)
                assert got == _outcome(slow.encode, text, policy, add), (text, policy)
                counted = _outcome(fast.count, text, policy, add)
                assert counted == (len(got) if type(got) is list else got), (text, policy)


def test_gemma3_native_equals_tokenizers(gemma3) -> None:
    fast, _, reference = gemma3
    refused = 0
    for text in _texts():
        expected = reference.encode(text, add_special_tokens=False).ids
        assert fast.encode(text, "allow") == expected, text
        try:
            assert fast.encode(text, "reject") == expected, text
        except SpecialTokenInText:
            refused += 1
    assert 0 < refused < len(_texts())


def test_encode_gaps_checks_its_cuts(gemma3) -> None:
    model = gemma3[0]._model
    norm = (b" ", "▁".encode(), b"")
    assert model.encode_gaps(b"a\nb", array("q", [1, 2, 108]), *norm) == \
        model.encode(b"a") + [108] + model.encode(b"b")
    for bad in ([1, 2], [2, 1, 5], [0, 9, 5], [1, 2, 5, 0, 1, 5], [0, 1, -1]):
        with pytest.raises(ValueError):
            model.encode_gaps(b"a\nb", array("q", bad), *norm)
    with pytest.raises(ValueError):
        model.encode_gaps(b"a", array("q"), b"", b"", b"")
