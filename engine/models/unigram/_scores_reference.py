"""serde_json's f64 parsing in plain Python: the tests' oracle for unigram_scores.h.

tokenizers reads Unigram piece scores with serde_json's default number parser, which is
not correctly rounded: it accumulates up to 19-20 significant digits in a u64, converts
that to f64 (rounding once) and multiplies or divides by a power of ten (rounding again).
On T5's file a quarter of the 32,100 scores come out one unit in the last place away
from Python's (correctly rounded) ``float``, and Viterbi's near-ties (seven hyphens:
"-" + "---" + "---" or "---" + "---" + "-") follow those bits. The model reads scores
with the native copy of this algorithm (``json_score`` in _unigram.pyx,
unigram_scores.h); tests/engine/models/unigram/test_unigram_scores.py compares the two
on random numbers and checks the native one against the doubles tokenizers holds.
The steps are serde_json 1.x ``de.rs``: ``parse_integer``, ``parse_long_integer``,
``parse_decimal``, ``parse_decimal_overflow``, ``parse_exponent``, ``f64_from_parts``
(without the ``float_roundtrip`` feature, which tokenizers does not enable).
"""

from __future__ import annotations

import re


_U64_MAX = (1 << 64) - 1
_POW10 = tuple(float(f"1e{k}") for k in range(309))  # Rust's f64 literals 1e0..1e308


def _overflows(significand: int, digit: int) -> bool:
    # serde_json's overflow!(significand * 10 + digit, u64::MAX)
    return significand >= _U64_MAX // 10 and (significand > _U64_MAX // 10
                                               or digit > _U64_MAX % 10)


def _from_parts(positive: bool, significand: int, exponent: int) -> float:
    value = float(significand)  # u64 as f64: round half to even, as Python's int -> float
    while True:
        if abs(exponent) < len(_POW10):
            if exponent >= 0:
                value *= _POW10[exponent]
                if value == float("inf"):
                    raise ValueError("number out of range")
            else:
                value /= _POW10[-exponent]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            raise ValueError("number out of range")
        value /= 1e308
        exponent += 308
    return value if positive else -value


_NUMBER = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?")


def serde_json_f64(text: str) -> float:
    """The f64 serde_json's default parser gives for the JSON number ``text``.

    Raises:
        ValueError: ``text`` is not a JSON number, or is out of f64's range.
    """
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise ValueError(f"not a JSON number: {text!r}")
    sign, integer, fraction, exp_text = match.groups()
    positive = not sign
    fraction = fraction or ""
    significand, exponent = 0, 0
    if len(integer) >= 20 and int(integer) > _U64_MAX:
        # parse_long_integer: the integer digits after the first that overflows only
        # scale; then each fraction digit that still fits is appended (serde_json's
        # literal behaviour, whatever it means)
        for k, ch in enumerate(integer):
            if _overflows(significand, ord(ch) - 48):
                exponent = len(integer) - k
                break
            significand = significand * 10 + ord(ch) - 48
        for ch in fraction:
            if _overflows(significand, ord(ch) - 48):
                break  # parse_decimal_overflow: every later digit ignored
            significand = significand * 10 + ord(ch) - 48
            exponent -= 1
    else:
        # digits are taken while the u64 does not overflow: the longest prefix of the
        # digits whose value fits (leading zeros always fit)
        digits = integer + fraction
        body = digits.lstrip("0")
        taken = len(body)
        if taken > 19:
            taken = 20 if int(body[:20]) <= _U64_MAX else 19
        consumed = len(digits) - len(body) + taken  # <= len(digits): never past them
        significand = int(body[:taken]) if taken else 0
        exponent = -(consumed - len(integer))  # fraction digits taken; all integer ones fit
    if exp_text is not None:
        value = int(exp_text)
        if abs(value) > 2**31 - 1:  # parse_exponent_overflow
            if significand == 0 or value < 0:
                return 0.0 if positive else -0.0
            raise ValueError("number out of range")
        exponent += value
    return _from_parts(positive, significand, exponent)
