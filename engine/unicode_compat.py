"""Make the ``regex`` module match like a reference library (tiktoken or tokenizers).

Why: the ``regex`` module is the generic pre-tokenizer fallback, but it knows Unicode 17
while tiktoken 0.14 (Rust ``regex`` crate) and tokenizers 0.23 (Oniguruma) both use
Unicode 16.0 (measured over every code point, see tools/gen_unicode_tables.py), and its
anchors differ: Rust ``$`` is the end of the text, Oniguruma (Ruby syntax) ``$``/``^`` are
line anchors, and Python's ``$`` also matches before a final newline. Ids change with
either difference, so every fallback pattern goes through ``adapt_pattern`` first.

What ``adapt_pattern`` rewrites (everything else is passed through unchanged):

* ``\\p{X}`` for general categories (``L``, ``Lu``, ``Ll``, ``Lt``, ``Lm``, ``Lo``, ``M``,
  ``Mn``, ``Mc``, ``Me``, ``N``, ``Nd``, ``Nl``, ``No``, ``P``, ``Pc``..., ``S``, ``Sm``...,
  long names too) and ``\\d`` become explicit code point ranges of the reference's Unicode
  version, taken from the same generated tables the compiled scanner uses
  (``_scan.property_bits``); inside a character class the ranges are spliced in, so
  ``[^\\r\\n\\p{L}\\p{N}]`` keeps its meaning. ``\\P{X}`` / ``\\p{^X}`` / ``\\D`` outside a class
  become a negated class.
* ``\\s`` / ``\\S`` become explicit White_Space classes (equal in all three libraries today;
  explicit so a future ``regex`` release cannot drift).
* ``$`` becomes ``\\Z`` for tiktoken and ``(?m:$)`` for tokenizers; ``^`` becomes ``(?m:^)``
  for tokenizers.

Known approximations (documented, not silent in the tests): negated properties *inside*
a class, scripts/blocks/binary properties (``\\p{Han}``, ``\\p{Alphabetic}``), ``\\w``/``\\b``,
and Oniguruma's multi-character case folds are left to the ``regex`` module's Unicode 17
semantics. Case-insensitive matching itself agrees: all three use simple case folding for
these patterns (``(?i:s)`` matches ``s``, ``S`` and U+017F in each).

Invariant: ``adapt_pattern`` is pure and cached; the result compiles with ``regex`` in
its default (V0) mode.
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

from .pre_tokenizers import _scan

REFERENCES = ("tiktoken", "tokenizers")

# Bits of engine/_native/unicode_tables.h
_LUT, _LL, _LMO, _M, _N, _WS, _P, _S = 1, 2, 4, 8, 16, 32, 64, 128

_WHITE_SPACE = ((0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
                (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
                (0x3000, 0x3000))
#: the same set as characters (Rust's char::is_whitespace), for scans done in Python
WHITE_SPACE_CHARS = frozenset(chr(c) for a, b in _WHITE_SPACE for c in range(a, b + 1))

# canonical category -> (bits of its major category in the tables, needs regex subset)
_CATEGORIES: dict[str, tuple[int, bool]] = {
    "L": (_LUT | _LL | _LMO, False), "LU": (_LUT, True), "LT": (_LUT, True),
    "LL": (_LL, False), "LM": (_LMO, True), "LO": (_LMO, True),
    "M": (_M, False), "MN": (_M, True), "MC": (_M, True), "ME": (_M, True),
    "N": (_N, False), "ND": (_N, True), "NL": (_N, True), "NO": (_N, True),
    "P": (_P, False), "S": (_S, False),
    **{c: (_P, True) for c in ("PC", "PD", "PS", "PE", "PI", "PF", "PO")},
    **{c: (_S, True) for c in ("SM", "SC", "SK", "SO")},
}
_LONG_NAMES = {
    "LETTER": "L", "UPPERCASELETTER": "LU", "LOWERCASELETTER": "LL", "TITLECASELETTER": "LT",
    "MODIFIERLETTER": "LM", "OTHERLETTER": "LO", "MARK": "M", "COMBININGMARK": "M",
    "NONSPACINGMARK": "MN", "SPACINGMARK": "MC", "ENCLOSINGMARK": "ME", "NUMBER": "N",
    "DECIMALNUMBER": "ND", "LETTERNUMBER": "NL", "OTHERNUMBER": "NO", "PUNCTUATION": "P",
    "CONNECTORPUNCTUATION": "PC", "DASHPUNCTUATION": "PD", "OPENPUNCTUATION": "PS",
    "CLOSEPUNCTUATION": "PE", "INITIALPUNCTUATION": "PI", "FINALPUNCTUATION": "PF",
    "OTHERPUNCTUATION": "PO", "SYMBOL": "S", "MATHSYMBOL": "SM", "CURRENCYSYMBOL": "SC",
    "MODIFIERSYMBOL": "SK", "OTHERSYMBOL": "SO",
}


def _canonical(name: str) -> str | None:
    key = re.sub(r"[\s_\-]", "", name).upper()
    for prefix in ("GENERALCATEGORY=", "GC=", "GENERALCATEGORY:", "GC:"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    key = _LONG_NAMES.get(key, key)
    return key if key in _CATEGORIES else None


@lru_cache(maxsize=2)
def _bits(reference: str) -> bytes:
    return _scan.property_bits(reference)


def _ranges_of_mask(table: bytes, mask: int) -> list[tuple[int, int]]:
    values = b"".join(re.escape(bytes([v])) for v in range(256) if v & mask)
    return [(m.start(), m.end() - 1) for m in re.finditer(b"[" + values + b"]+", table)]


@lru_cache(maxsize=None)
def _regex_category(cat: str) -> tuple[tuple[int, int], ...]:
    """The ``regex`` module's own ranges for a general category (its Unicode version)."""
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)

    def cp(i: int) -> int:
        return i if i < 0xD800 else i + 0x800

    return tuple((cp(m.start()), cp(m.end() - 1))
                 for m in regex.finditer(r"\p{%s}+" % cat, text))


def intersect_ranges(a, b) -> list[tuple[int, int]]:
    """The intersection of two sorted lists of disjoint inclusive code point ranges."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


@lru_cache(maxsize=None)
def category_ranges(cat: str, reference: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of general category ``cat`` as ``reference`` sees it."""
    if reference not in REFERENCES:
        raise ValueError(f"unknown reference {reference!r}")
    canon = _canonical(cat)
    if canon is None:
        raise KeyError(cat)
    mask, subset = _CATEGORIES[canon]
    ranges = _ranges_of_mask(_bits(reference), mask)
    if subset:  # the tables store major categories; the subcategory comes from regex
        ranges = intersect_ranges(ranges, _regex_category(canon[0] + canon[1].lower()))
    return tuple(ranges)


def _esc(c: int) -> str:
    if c < 0x100:
        return "\\x%02x" % c
    return "\\u%04x" % c if c < 0x10000 else "\\U%08x" % c


def _class_body(ranges) -> str:
    return "".join(_esc(a) if a == b else f"{_esc(a)}-{_esc(b)}" for a, b in ranges)


def _property(pattern: str, i: int) -> tuple[str, bool, int]:
    """Parse ``\\p{..}``/``\\pX``/``\\P..`` at i: (name, negated, end index)."""
    negated = pattern[i + 1] == "P"
    if i + 2 < len(pattern) and pattern[i + 2] == "{":
        close = pattern.find("}", i + 3)
        if close < 0:
            return "", negated, i + 2
        name = pattern[i + 3:close]
        end = close + 1
    else:
        name, end = pattern[i + 2:i + 3], i + 3
    if name.startswith("^"):
        negated, name = not negated, name[1:]
    return name, negated, end


@lru_cache(maxsize=256)
def adapt_pattern(pattern: str, reference: str) -> str:
    """Rewrite ``pattern`` so the ``regex`` module matches it as ``reference`` would."""
    if reference not in REFERENCES:
        raise ValueError(f"unknown reference {reference!r}")
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            body, negated, end = None, False, i + 2
            if nxt in "pP":
                name, negated, end = _property(pattern, i)
                if _canonical(name):
                    body = _class_body(category_ranges(name, reference))
            elif nxt in "sS":
                body, negated = _class_body(_WHITE_SPACE), nxt == "S"
            elif nxt in "dD":
                body, negated = _class_body(category_ranges("Nd", reference)), nxt == "D"
            if body is None or (negated and in_class):
                out.append(pattern[i:end])  # not ours to adapt (see module docstring)
            elif in_class:
                out.append(body)
            else:
                out.append(("[^" if negated else "[") + body + "]")
            i = end
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":  # a leading ']' is literal
                j += 1
            out.append(pattern[i:j])
            i = j
            continue
        if ch == "$":
            out.append(r"\Z" if reference == "tiktoken" else "(?m:$)")
        elif ch == "^" and reference == "tokenizers":
            out.append("(?m:^)")
        else:
            out.append(ch)
        i += 1
    return "".join(out)
