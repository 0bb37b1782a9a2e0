"""Grapheme clusters as the Precompiled normalizer cuts them (UAX #29, Unicode 17.0).

Two references: the ``regex`` module's ``\\X`` (same rules, same Unicode version as the
generated tables), on random strings made of characters of every break class; and
tokenizers itself, through what its normalizer outputs: "ª" is a key whose cluster,
under 6 bytes, is replaced whole, so "ª" + X loses X exactly when X joins the cluster
(every BMP character is tried), and "ª\\u0301" + X turns per-character exactly when a
supplementary X joins it (the cluster reaches 6 bytes).
"""

from __future__ import annotations

import random

import regex

from tokserve.normalizers._precompiled import grapheme_ends
from tokserve.normalizers.precompiled import Precompiled

from precompiled_inputs import reference, t5_charsmap_base64

CLASSES = [r"\p{GCB=CR}", r"\p{GCB=LF}", r"\p{GCB=Control}", r"\p{GCB=Extend}", r"\p{GCB=ZWJ}",
           r"\p{GCB=Regional_Indicator}", r"\p{GCB=Prepend}", r"\p{GCB=SpacingMark}",
           r"\p{GCB=L}", r"\p{GCB=V}", r"\p{GCB=T}", r"\p{GCB=LV}", r"\p{GCB=LVT}",
           r"\p{Extended_Pictographic}", r"\p{InCB=Linker}", r"\p{InCB=Consonant}",
           r"\p{InCB=Extend}", r"\p{GCB=Other}"]


def _pools() -> list[list[str]]:
    chars = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    rng = random.Random(0)
    pools = []
    for pattern in CLASSES:
        found = regex.findall(pattern, chars)
        pools.append(rng.sample(found, min(len(found), 64)))
    return pools


def test_clusters_equal_regex_x():
    pools = _pools()
    rng = random.Random(1)
    for _ in range(20000):
        text = "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 12)))
        want = [m.end() for m in regex.finditer(r"\X", text)]
        assert grapheme_ends(text) == want, ascii(text)


def test_clusters_of_known_sequences():
    cases = {"\r\n\n": [2, 3], "e\u0301x": [2, 3], "👨\u200d👩\u200d👧": [5],
             "🇺🇸🇯🇵🇫": [2, 4, 5], "क्ष": [3], "\u0600a": [2], "\u1100\u1161\u11a8": [3],
             "\uac01\u11a8": [2], "a\u200db": [2, 3], "": []}
    for text, ends in cases.items():
        assert grapheme_ends(text) == ends, ascii(text)


def test_joining_characters_as_tokenizers_sees_them():
    ours = Precompiled.from_base64(t5_charsmap_base64())
    ref = reference()
    bmp = [chr(c) for c in range(0x80, 0x10000) if not 0xD800 <= c <= 0xDFFF]
    for x in bmp:
        assert ours.normalize("ª" + x) == ref.normalize_str("ª" + x), ascii(x)
    supplementary = list(range(0x10000, 0x20000)) + list(range(0x20000, 0x40000, 97))
    supplementary += list(range(0xE0000, 0xE1000))
    for c in supplementary:
        text = "ª\u0301" + chr(c)
        assert ours.normalize(text) == ref.normalize_str(text), hex(c)
