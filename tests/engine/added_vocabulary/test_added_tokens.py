"""Added-token scan and the special-token policies (reject, allow, text, plain ranges)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokserve
from tokserve.added_vocabulary._literals import LiteralHeads
from tokserve.added_vocabulary.added_tokens import AddedTokenScanner
from tokserve.artifact import AddedToken


@pytest.fixture(scope="module")
def o200k():
    return tokserve.load("o200k_base")


def test_added_tokens_reject_lists_literals_and_positions(o200k):
    text = "a <|endoftext|> b <|endofprompt|> c <|endoftext|>"
    with pytest.raises(tokserve.SpecialTokenInText) as info:
        o200k.encode(text)
    err = info.value
    assert err.code == "special_token_in_text"
    assert err.details["literals"] == ["<|endofprompt|>", "<|endoftext|>"]
    assert err.details["positions"] == [2, 18, 36]
    assert err.details["occurrences"] == [["<|endoftext|>", 2], ["<|endofprompt|>", 18],
                                          ["<|endoftext|>", 36]]


def test_added_tokens_allow_and_text(o200k):
    text = "x<|endoftext|>y"
    allowed = o200k.encode(text, special_tokens="allow")
    assert 199999 in allowed
    plain = o200k.encode(text, special_tokens="text")
    assert 199999 not in plain
    assert o200k.decode(plain) == text == o200k.decode(allowed)


def test_added_tokens_plain_ranges_exempt_content(o200k):
    text = "<|endoftext|>user said <|endoftext|>"
    ids = o200k.encode(text, special_tokens="allow", plain_ranges=[(13, len(text))])
    assert ids.count(199999) == 1 and ids[0] == 199999
    # a range touching only part of a literal also disables that literal
    ids = o200k.encode(text, special_tokens="allow", plain_ranges=[(3, 4)])
    assert ids.count(199999) == 1 and ids[-1] == 199999


def test_added_tokens_leftmost_longest():
    scan = AddedTokenScanner([AddedToken("<a>", 1), AddedToken("<a><b>", 2), AddedToken("b>", 3)])
    matches = scan.find("x<a><b>y<a>b>")
    assert [(m.literal, m.start) for m in matches] == [("<a><b>", 1), ("<a>", 8), ("b>", 11)]


def test_added_tokens_lstrip_rstrip_single_word():
    scan = AddedTokenScanner([AddedToken("<m>", 5, lstrip=True, rstrip=True),
                              AddedToken("word", 6, single_word=True)])
    m = scan.find("a   <m>  b")
    assert [(x.start, x.end) for x in m] == [(1, 9)]
    assert [x.id for x in scan.find("a word, swordfish")] == [6]


def test_added_tokens_policy_must_be_known(o200k):
    with pytest.raises(ValueError, match="special_tokens must be one of"):
        o200k.encode("x", special_tokens="maybe")


# ---- the compiled pre-check (_literals.LiteralHeads) ------------------------------

_CHARS = st.sampled_from(list("<|>[]ab é東😀\n") + ["\x00", "\xff"])


@settings(max_examples=400, deadline=None)
@given(literals=st.lists(st.text(_CHARS, min_size=1, max_size=5), min_size=1, max_size=6),
       text=st.text(_CHARS, max_size=40))
def test_literal_heads_are_exactly_the_first_two_bytes(literals, text):
    """``present`` is True exactly when some literal's first two UTF-8 bytes (its only
    byte, for a one-byte literal) occur in the text's UTF-8; so a literal that occurs
    is never missed. Both paths: one shared first byte (memchr) and several (table)."""
    encoded = [lit.encode() for lit in literals]
    data = text.encode()
    heads = LiteralHeads(encoded)
    assert heads.present(data) == any(lit[:2] in data for lit in encoded)
    if any(lit in text for lit in literals):
        assert heads.present(data)


def test_literal_heads_edges():
    heads = LiteralHeads([b"<|endoftext|>"])
    assert not heads.present(b"") and not heads.present(b"<") and not heads.present(b"a<b<")
    assert heads.present(b"<|") and heads.present(b"x <div> <|end")
    with pytest.raises(ValueError):
        LiteralHeads([b""])


def test_scanner_answers_the_same_with_or_without_utf8(o200k):
    """The UTF-8 pre-check only decides whether the search runs: the matches are those of
    the text alone, for texts with and without literals."""
    scanner = AddedTokenScanner([AddedToken("<|endoftext|>", 199999),
                                 AddedToken("é!", 5)])
    for text in ("plain", "a <div> b", "x<|endoftext|>y é! <|endoftext", "<|endoftext|>"):
        assert scanner.find(text, utf8=text.encode()) == scanner.find(text)
        assert scanner.maybe_present(text, text.encode()) == ("<|" in text or "é!" in text)


_MANY_RANGES = """
import sys, tokserve
name, literal = sys.argv[1], sys.argv[2]
tok = tokserve.load(name)
special = tok.special_tokens[literal]
n = 50_000
text = (literal + "x") * n
step = len(literal) + 1
content = [(i * step + len(literal), (i + 1) * step) for i in range(n)]  # every "x"
ids = tok.encode(text, special_tokens="allow", plain_ranges=content)
assert ids.count(special) == n, ids.count(special)
literals = [(i * step, i * step + len(literal)) for i in range(n)]  # every literal
ids = tok.encode(text, special_tokens="allow", plain_ranges=literals)
assert special not in ids
print("ok")
"""


@pytest.mark.parametrize("name, literal", [("o200k_base", "<|endoftext|>"),
                                           ("deepseek-v4", "<｜end▁of▁sentence｜>")])
def test_added_tokens_plain_ranges_cost_is_not_quadratic(name, literal):
    """5·10^4 caller ranges and 5·10^4 literals (a long chat under ``reserved_literals:
    "escape"``): each match is tested against the ranges in O(log n), so this takes a
    few seconds; testing every range for every match (2.5·10^9 steps) took hours. A
    subprocess so that a regression fails on the timeout instead of hanging the suite.
    deepseek-v4's added tokens are normalized, so its second pass clips the ranges too."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", _MANY_RANGES, name, literal],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]
