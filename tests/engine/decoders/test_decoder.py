"""Decoder: ids -> bytes -> str, errors="strict"|"replace", unknown ids, skip_special_tokens.

Expectations come from the reference decoders (tiktoken's ``decode`` replaces invalid
UTF-8; tokenizers' ByteLevel decoder does too) and from ``bytes.decode`` itself.
"""

from __future__ import annotations

import random

import pytest

import tokserve


def _ordinary_ids(tok, rng: random.Random, n: int) -> list[int]:
    specials = set(tok.special_tokens.values())
    out: list[int] = []
    while len(out) < n:
        i = rng.randrange(tok.vocab_size)
        if i in specials:
            continue
        try:
            tok.token_bytes(i)
        except tokserve.UnknownTokenId:
            continue
        out.append(i)
    return out


def test_decode_bytes_is_concatenated_token_bytes(pair):
    tok = pair.ours
    rng = random.Random(1)
    for _ in range(50):
        ids = _ordinary_ids(tok, rng, rng.randint(0, 30))
        assert tok.decode_bytes(ids) == b"".join(tok.token_bytes(i) for i in ids)


def test_random_ids_decode_like_reference(pair):
    """Random id sequences are mostly invalid UTF-8: replacement must match the reference."""
    rng = random.Random(2)
    for _ in range(300):
        ids = _ordinary_ids(pair.ours, rng, rng.randint(1, 12))
        assert pair.ours.decode(ids) == pair.ref.decode(ids), ids
        assert pair.ours.decode(ids) == pair.ours.decode_bytes(ids).decode("utf-8", "replace")


def test_strict_raises_on_invalid_utf8_and_replace_does_not(o200k_pair):
    tok = o200k_pair.ours
    ids = tok.encode("a\U0001F9CCb")  # the emoji is split over byte tokens
    assert tok.decode(ids, errors="strict") == "a\U0001F9CCb"
    partial = ids[:2]
    with pytest.raises(tokserve.InvalidUtf8) as info:
        tok.decode(partial, errors="strict")
    assert info.value.code == "invalid_utf8"
    assert tok.decode(partial, errors="replace") == "a\ufffd" == o200k_pair.ref.decode(partial)


def test_strict_accepts_every_valid_roundtrip(pair):
    for text in ["héllo", "日本語", "👨‍👩‍👧‍👦", "\U000323b0", "\x00\x7f", ""]:
        assert pair.ours.decode(pair.ours.encode(text), errors="strict") == text


def test_unknown_ids_raise_typed_error(pair):
    tok = pair.ours
    bad = [tok.vocab_size, tok.vocab_size + 7, 2**31 - 1]
    for ids in ([bad[0]], [0, bad[1]], [bad[2]], [-1]):
        with pytest.raises(tokserve.UnknownTokenId) as info:
            tok.decode(ids)
        assert info.value.code == "unknown_token_id"
        assert set(info.value.details["ids"]) <= set(ids) and info.value.details["ids"]
    with pytest.raises(tokserve.UnknownTokenId):
        tok.token_bytes(tok.vocab_size)
    with pytest.raises(tokserve.UnknownTokenId):
        tok.decode_bytes([tok.vocab_size])


@pytest.mark.parametrize("gap", [100261, 100275])
def test_ids_in_vocabulary_gaps_are_unknown(cl100k_pair, gap):
    """cl100k_base has no ids 100261..100275 (between <|fim_suffix|> and <|endofprompt|>)."""
    with pytest.raises(tokserve.UnknownTokenId):
        cl100k_pair.ours.decode([gap])


def test_skip_special_tokens(pair):
    tok = pair.ours
    text = "hello world"
    specials = sorted(pair.ref.special_ids)
    ids = [specials[0], *tok.encode(text), specials[-1]]
    assert tok.decode(ids, skip_special_tokens=True) == text
    assert tok.decode(ids, skip_special_tokens=True) == pair.ref.decode(ids, True)
    assert tok.decode(ids) == pair.ref.decode(ids, False)
    assert tok.decode_bytes(ids, skip_special_tokens=True) == text.encode()


def test_skip_special_tokens_keeps_non_special_added_tokens(deepseek_pair):
    """DeepSeek's <think> is an added token but not special: tokenizers keeps it."""
    tok = deepseek_pair.ours
    text = "<｜begin▁of▁sentence｜><think>x</think>"
    ids = tok.encode(text, special_tokens="allow")
    assert tok.decode(ids, skip_special_tokens=True) == "<think>x</think>"
    assert tok.decode(ids, skip_special_tokens=True) == deepseek_pair.ref.decode(ids, True)
