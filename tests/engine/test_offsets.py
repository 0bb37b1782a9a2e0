"""Offsets in char, utf16 and byte units against an independent computation.

The contract (../shared/API.md, "Offsets"): half-open spans into the ORIGINAL text; an
ordinary token whose UTF-8 bytes are ``[bs, be)`` starts at the unit where the character
holding byte ``bs`` starts and ends just after the character holding byte ``be - 1``; a
special token covers exactly its literal. Here the expectation is rebuilt from nothing
but the token bytes (``token_bytes``) laid end to end over the text's UTF-8, so it does
not share code with the engine's offset path. Ids added by the post-processor (BOS/EOS)
are not in the text: empty spans at the start / end.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.checks import MAX_EXAMPLES, any_text, literal_text, tricky_text
from corpus import build_corpus, literal_cases

UNITS = ("char", "utf16", "byte")


def _repair(text: str) -> str:
    """Pairs join into their astral character, lone surrogates become U+FFFD (tiktoken's rule)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _unit_width(ch: str, units: str) -> int:
    if units == "char":
        return 1
    if units == "utf16":
        return 2 if ord(ch) > 0xFFFF else 1
    return len(ch.encode("utf-8"))


def expected_offsets(tok, text: str, ids: list[int], units: str) -> list[tuple[int, int]]:
    """Offsets from token bytes alone (no normalizer: the bytes tile the text's UTF-8)."""
    chars = _repair(text)  # same UTF-16 length as text
    char_of_byte: list[int] = []
    unit_start = [0]
    for i, ch in enumerate(chars):
        char_of_byte += [i] * len(ch.encode("utf-8"))
        unit_start.append(unit_start[-1] + _unit_width(ch, units))
    data = chars.encode("utf-8")
    out = []
    pos = 0
    for token in ids:
        raw = tok.token_bytes(token)
        assert data[pos:pos + len(raw)] == raw, f"token {token} bytes {raw!r} not at byte {pos}"
        first, last = char_of_byte[pos], char_of_byte[pos + len(raw) - 1]
        out.append((unit_start[first], unit_start[last + 1]))
        pos += len(raw)
    assert pos == len(data), "token bytes do not cover the text"
    return out


def check(tok, text: str, policy: str = "allow") -> None:
    ids = tok.encode(text, special_tokens=policy)
    for units in UNITS:
        got_ids, offsets = tok.encode_with_offsets(text, units=units, special_tokens=policy)
        assert got_ids == ids
        assert [tuple(o) for o in offsets] == expected_offsets(tok, text, ids, units), (units, text)


@pytest.fixture(scope="module")
def sampled_cases() -> list[tuple[str, str]]:
    corpus = build_corpus()
    return [c for i, c in enumerate(corpus) if i % 5 == 0]


def test_offsets_corpus(pair, sampled_cases):
    tok = pair.ours
    cases = sampled_cases + literal_cases(random.Random(3), list(tok.special_tokens), count=60)
    bad = []
    for label, text in cases:
        try:
            check(tok, text)
        except AssertionError as exc:
            bad.append(f"{label}: {str(exc)[:200]}")
    assert not bad, f"{len(bad)} of {len(cases)} cases disagree:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("text", [
    "héllo wörld", "日本語のテキスト", "a😀b 😀😀", "👨‍👩‍👧‍👦 family", "\U000323b0\U00031350 new",
    "x\ud800y \udfff", "e\u0301\u0301 nfd", "  leading spaces", "tab\tand\nnewline\r\n",
    "", " ", "\U0010ffff\x00",
])
def test_offsets_examples(pair, text):
    check(pair.ours, text)


def test_partial_character_tokens_cover_whole_character(o200k_pair):
    """U+1F9CC (4 UTF-8 bytes) has no token of its own in o200k_base: it is split into
    byte tokens, and each of them covers the whole character in every unit."""
    tok = o200k_pair.ours
    text = "a\U0001F9CCb"
    expected = {
        "char": [(0, 1), (1, 2), (1, 2), (1, 2), (2, 3)],
        "utf16": [(0, 1), (1, 3), (1, 3), (1, 3), (3, 4)],
        "byte": [(0, 1), (1, 5), (1, 5), (1, 5), (5, 6)],
    }
    for units, spans in expected.items():
        ids, offsets = tok.encode_with_offsets(text, units=units)
        assert [tok.token_bytes(i) for i in ids] == [b"a", b"\xf0\x9f", b"\xa7", b"\x8c", b"b"]
        assert [tuple(o) for o in offsets] == spans


def test_special_token_covers_its_literal(pair):
    tok = pair.ours
    literal = sorted(tok.special_tokens)[0]
    text = f"ab {literal} é"
    ids, offsets = tok.encode_with_offsets(text, units="char", special_tokens="allow")
    k = ids.index(tok.special_tokens[literal])
    assert tuple(offsets[k]) == (3, 3 + len(literal))


def test_post_processor_ids_have_empty_spans(pair):
    tok = pair.ours
    text = "hello world"
    plain_ids, plain = tok.encode_with_offsets(text, units="byte")
    ids, offsets = tok.encode_with_offsets(text, units="byte", add_special_tokens=True)
    assert ids == tok.encode(text, add_special_tokens=True)
    extra = len(ids) - len(plain_ids)
    if extra == 0:
        assert [tuple(o) for o in offsets] == [tuple(o) for o in plain]
        return
    start = ids.index(plain_ids[0])
    assert [tuple(o) for o in offsets[:start]] == [(0, 0)] * start
    assert [tuple(o) for o in offsets[start:start + len(plain)]] == [tuple(o) for o in plain]
    assert all(tuple(o) == (len(text), len(text)) for o in offsets[start + len(plain):])


HYPOTHESIS = settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


@HYPOTHESIS
@given(text=st.one_of(any_text, tricky_text))
def test_offsets_hypothesis(pair, text):
    check(pair.ours, text, "text")


@HYPOTHESIS
@given(data=st.data())
def test_offsets_hypothesis_literals(pair, data):
    check(pair.ours, data.draw(literal_text(list(pair.ours.special_tokens))), "allow")
