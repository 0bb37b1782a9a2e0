#!/usr/bin/env python3
"""Generate ``engine/_native/unicode_tables.h``: per-code-point property bits for the
pre-tokenizer.

Why: the hand-written scanner (``engine/_native/pretok_scan.h``) must classify characters
exactly as each reference library does, and no Python module has the right tables. Python 3.11's
``unicodedata`` is Unicode 14 and the ``regex`` module is Unicode 17, while

* tiktoken 0.14 (Rust ``regex``/``fancy-regex``) uses **Unicode 16.0**, and
* tokenizers 0.23 (Oniguruma) uses **Unicode 16.0** as well.

How the versions were determined (re-run with ``--verify``): every property the scanner
needs (``\\p{L}``, ``\\p{Lu}``, ``\\p{Ll}``, ``\\p{Lt}``, ``\\p{Lm}``, ``\\p{Lo}``, ``\\p{M}``,
``\\p{N}``, ``\\p{P}``, ``\\p{S}``, ``\\s``) was extracted from each reference over all
1,112,064 scalar values: tiktoken only emits tokens for text its pattern matches, so an
``Encoding`` whose pattern is the property alone and whose ranks are the 256 single bytes
returns exactly the matching characters; tokenizers' ``Split(..., "removed")`` returns
exactly the non-matching ones. Those sets equal "general category per Unicode 18 data,
restricted to code points assigned in 16.0 or earlier" except for U+0295, which was Ll
until Unicode 17 made it Lo (``GC_BEFORE`` below). Versions 15.1 and 17.0 differ by
thousands of code points (e.g. CJK Extension J, U+323B0.., is new in 17.0). Both
references agree with each other, so one table serves both; the generator still takes
one version per reference and emits a second table if they ever differ.

Inputs: ``unicodedata2`` (Unicode 18 data) and ``unicode-age`` (the version that assigned
each code point); if ``unicode-age`` is missing, ages come from the ``regex`` module's
``\\p{Age=...}`` (which stops at 17.0, enough for versions up to 17.0).

Output layout: two-stage table, ``stage1[cp >> 7]`` selects a 128-entry block of
``stage2``; identical blocks are shared. The output is deterministic (sorted, no dates).

A second, smaller output, ``engine/pre_tokenizers/numeric_tables.py``: the characters
Rust's ``char::is_numeric`` accepts (general category N), which tokenizers' ``Digits``
pre-tokenizer splits on. That is neither Oniguruma's table nor the ``regex`` module's:
tokenizers 0.23's Rust standard library is **Unicode 17.0** (``--verify`` compares), and
``regex`` 2026.11 moved to Unicode 18, which has 323 more numeric characters.

Usage: ``python tools/gen_unicode_tables.py [--verify]`` (writes
engine/_native/unicode_tables.h and engine/pre_tokenizers/numeric_tables.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import unicodedata2

VERSIONS = {"tiktoken": (16, 0), "tokenizers": (16, 0)}
RUST_NUMERIC_VERSION = (17, 0)  # tokenizers 0.23's char::is_numeric (Digits)
BLOCK = 128
MAX_CP = 0x110000

# General categories that changed after the version where a code point was assigned,
# for the categories this table distinguishes: cp -> list of (first version with the
# Unicode 18 value, earlier value). Only bits matter: Mn/Mc changes need no entry.
GC_BEFORE: dict[int, list[tuple[tuple[int, int], str]]] = {
    0x0295: [((17, 0), "Ll")],  # LATIN LETTER PHARYNGEAL VOICED FRICATIVE: Ll -> Lo in 17.0
}

# Property bits (must match pretok_scan.h).
BITS = {
    "LUT": 1,  # Lu, Lt
    "LL": 2,  # Ll
    "LMO": 4,  # Lm, Lo
    "M": 8,  # Mn, Mc, Me
    "N": 16,  # Nd, Nl, No
    "WS": 32,  # White_Space
    "P": 64,  # Pc Pd Ps Pe Pi Pf Po
    "S": 128,  # Sm Sc Sk So
}
CAT_BIT = {
    "Lu": "LUT", "Lt": "LUT", "Ll": "LL", "Lm": "LMO", "Lo": "LMO",
    "Mn": "M", "Mc": "M", "Me": "M", "Nd": "N", "Nl": "N", "No": "N",
    "Pc": "P", "Pd": "P", "Ps": "P", "Pe": "P", "Pi": "P", "Pf": "P", "Po": "P",
    "Sm": "S", "Sc": "S", "Sk": "S", "So": "S",
}
# White_Space (PropList.txt); stable since Unicode 6.3 (U+180E left it then).
WHITE_SPACE = frozenset(
    [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
     0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
)


def _ages() -> list[tuple[int, int] | None]:
    ages: list[tuple[int, int] | None] = [None] * MAX_CP
    try:
        from unicode_age.unicode_age_db import iter_spans
    except ImportError:
        return _ages_from_regex()
    for start, stop, major, minor in iter_spans():
        for cp in range(start, stop + 1):
            ages[cp] = (major, minor)
    return ages


def _ages_from_regex() -> list[tuple[int, int] | None]:
    import regex

    ages: list[tuple[int, int] | None] = [None] * MAX_CP
    versions = sorted({(1, 1), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2), (4, 0), (4, 1),
                       (5, 0), (5, 1), (5, 2), (6, 0), (6, 1), (6, 2), (6, 3), (7, 0),
                       (8, 0), (9, 0), (10, 0), (11, 0), (12, 0), (12, 1), (13, 0),
                       (14, 0), (15, 0), (15, 1), (16, 0), (17, 0)})
    text = "".join(chr(c) for c in range(MAX_CP) if not 0xD800 <= c < 0xE000)
    for v in reversed(versions):  # \p{Age=V} is cumulative: assigned in V or earlier
        for m in regex.finditer(r"\p{Age=%d.%d}" % v, text):
            ages[ord(m.group())] = v
    return ages


def category(cp: int, version: tuple[int, int]) -> str:
    cat = unicodedata2.category(chr(cp))
    for since, before in GC_BEFORE.get(cp, []):
        if version < since:
            cat = before
    return cat


def props_for(version: tuple[int, int], ages: list) -> bytearray:
    out = bytearray(MAX_CP)
    for cp in range(MAX_CP):
        bits = BITS["WS"] if cp in WHITE_SPACE else 0
        age = ages[cp]
        if age is not None and age <= version:
            name = CAT_BIT.get(category(cp, version))
            if name:
                bits |= BITS[name]
        out[cp] = bits
    return out


def two_stage(props: bytearray) -> tuple[list[int], list[bytes]]:
    blocks: dict[bytes, int] = {}
    order: list[bytes] = []
    stage1: list[int] = []
    for start in range(0, MAX_CP, BLOCK):
        blk = bytes(props[start:start + BLOCK])
        if blk not in blocks:
            blocks[blk] = len(order)
            order.append(blk)
        stage1.append(blocks[blk])
    return stage1, order


def _c_array(ctype: str, name: str, values, per_line: int = 24) -> str:
    vals = list(values)
    lines = [", ".join(str(v) for v in vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return f"static const {ctype} {name}[{len(vals)}] = {{\n  " + ",\n  ".join(lines) + "\n};\n"


def render(tables: dict[tuple[int, int], bytearray]) -> str:
    parts = [
        "/* GENERATED by tools/gen_unicode_tables.py: do not edit.\n"
        " * Per-code-point property bits for the pre-tokenizer scanner (pretok_scan.h).\n"
        " * tiktoken 0.14 (Rust regex) = Unicode %d.%d; tokenizers 0.23 (Oniguruma) = Unicode %d.%d.\n"
        " * Two-stage table: stage2[stage1[cp >> 7] * 128 + (cp & 127)]. */\n"
        % (*VERSIONS["tiktoken"], *VERSIONS["tokenizers"]),
        "#ifndef ENGINE_UNICODE_TABLES_H\n#define ENGINE_UNICODE_TABLES_H\n#include <stdint.h>\n\n",
    ]
    for name, bit in BITS.items():
        parts.append(f"#define PT_{name} {bit}u\n")
    parts.append("\n")
    for version, props in sorted(tables.items()):
        tag = "u%d_%d" % version
        stage1, blocks = two_stage(props)
        stype = "uint8_t" if len(blocks) <= 256 else "uint16_t"
        parts.append(f"/* Unicode {version[0]}.{version[1]}: {len(blocks)} distinct blocks */\n")
        parts.append(_c_array(stype, f"pt_stage1_{tag}", stage1))
        parts.append(_c_array("uint8_t", f"pt_stage2_{tag}", b"".join(blocks)))
        parts.append(
            f"static inline unsigned pt_props_{tag}(uint32_t cp) {{\n"
            f"  return cp < 0x110000u ? pt_stage2_{tag}[((uint32_t)pt_stage1_{tag}[cp >> 7] << 7) | (cp & 127u)] : 0u;\n"
            "}\n\n"
        )
    for ref, version in sorted(VERSIONS.items()):
        parts.append(f"#define pt_props_{ref} pt_props_u{version[0]}_{version[1]}\n")
    parts.append("\n#endif\n")
    return "".join(parts)


def numeric_ranges(ages: list) -> list[tuple[int, int]]:
    """Code points of general category N assigned in RUST_NUMERIC_VERSION or earlier."""
    ranges: list[tuple[int, int]] = []
    for cp in range(MAX_CP):
        age = ages[cp]
        if age is None or age > RUST_NUMERIC_VERSION:
            continue
        if not category(cp, RUST_NUMERIC_VERSION).startswith("N"):
            continue
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


def render_numeric(ranges: list[tuple[int, int]]) -> str:
    lines = ['"""Generated by tools/gen_unicode_tables.py; do not edit.',
             "",
             "The characters Rust's ``char::is_numeric`` accepts (general category N) in the",
             "Unicode version of tokenizers 0.23's Rust standard library: what its ``Digits``",
             'pre-tokenizer splits on (the ``regex`` module\'s own ``\\\\p{N}`` follows its release).',
             '"""',
             "",
             "RUST_NUMERIC_VERSION = (%d, %d)" % RUST_NUMERIC_VERSION,
             "",
             "# (first, last) inclusive",
             "RUST_NUMERIC = ("]
    lines += [f"    (0x{a:05X}, 0x{b:05X})," for a, b in ranges]
    lines += [")", ""]
    return "\n".join(lines)


def verify_numeric(ranges: list[tuple[int, int]]) -> int:
    from tokenizers import pre_tokenizers

    scalars = [c for c in range(MAX_CP) if not 0xD800 <= c < 0xE000]
    pieces = pre_tokenizers.Digits(True).pre_tokenize_str("".join("a" + chr(c) for c in scalars))
    got = {ord(p) for p, _ in pieces if p != "a" and len(p) == 1}
    want = {c for a, b in ranges for c in range(a, b + 1)}
    print(f"tokenizers Digits {len(want):7d} chars, {len(got ^ want)} mismatches")
    return len(got ^ want)


def verify(tables: dict[tuple[int, int], bytearray]) -> int:
    """Compare the generated bits with the references themselves; returns mismatch count."""
    import tiktoken
    from tokenizers import Regex, pre_tokenizers

    scalars = [c for c in range(MAX_CP) if not 0xD800 <= c < 0xE000]
    text = "".join(map(chr, scalars))
    ranks = {bytes([i]): i for i in range(256)}

    def from_tiktoken(prop: str) -> set[int]:
        enc = tiktoken.Encoding("probe", pat_str=prop, mergeable_ranks=ranks, special_tokens={})
        return set(map(ord, bytes(enc.encode_ordinary(text)).decode()))

    def from_tokenizers(prop: str) -> set[int]:
        rest = pre_tokenizers.Split(Regex(prop), "removed").pre_tokenize_str(text)
        return set(scalars) - set(map(ord, "".join(p for p, _ in rest)))

    checks = {
        r"\p{L}": 7, r"\p{Lu}": None, r"\p{Ll}": 2, r"\p{M}": 8, r"\p{N}": 16,
        r"\s": 32, r"\p{P}": 64, r"\p{S}": 128,
    }
    bad = 0
    for ref, extract in (("tiktoken", from_tiktoken), ("tokenizers", from_tokenizers)):
        props = tables[VERSIONS[ref]]
        for prop, mask in checks.items():
            got = extract(prop)
            if mask is None:  # Lu vs Lt share a bit: check their union
                got |= extract(r"\p{Lt}")
                mask = 1
            want = {c for c in scalars if props[c] & mask}
            diff = got ^ want
            bad += len(diff)
            print(f"{ref:10s} {prop:6s} {len(want):7d} chars, {len(diff)} mismatches"
                  + (f" e.g. {sorted(diff)[:5]}" if diff else ""))
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    engine = Path(__file__).resolve().parents[1] / "engine"
    ap.add_argument("--out", default=str(engine / "_native" / "unicode_tables.h"))
    ap.add_argument("--numeric-out", default=str(engine / "pre_tokenizers" / "numeric_tables.py"))
    ap.add_argument("--verify", action="store_true", help="also compare with tiktoken and tokenizers")
    args = ap.parse_args()
    ages = _ages()
    tables = {v: props_for(v, ages) for v in sorted(set(VERSIONS.values()))}
    Path(args.out).write_text(render(tables))
    numeric = numeric_ranges(ages)
    numeric_out = Path(args.numeric_out)
    numeric_out.write_text(render_numeric(numeric))
    print(f"wrote {args.out} and {numeric_out}")
    if args.verify:
        return 1 if verify(tables) + verify_numeric(numeric) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
