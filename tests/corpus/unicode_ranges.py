"""Code point pools for seeded random Unicode text.

``RECENT`` lists blocks added in Unicode 15, 16 and 17. Their characters are where the
references' Unicode tables disagree with newer ones (Python 3.11's ``unicodedata`` is
Unicode 14, ``regex`` knows 17, tiktoken 0.14 and Oniguruma know neither all of 16 nor
17), so ids change with the table a tokenizer uses: they must be in the differential
corpus. A few code points in these ranges are still unassigned; that is intended.
"""

from __future__ import annotations

RECENT: dict[str, tuple[int, int]] = {
    # Unicode 15.0
    "u15/cjk-ext-h": (0x31350, 0x323AF),
    "u15/kawi": (0x11F00, 0x11F59),
    "u15/nag-mundari": (0x1E4D0, 0x1E4F9),
    "u15/kaktovik-numerals": (0x1D2C0, 0x1D2D3),
    "u15/cyrillic-ext-d": (0x1E030, 0x1E08F),
    "u15/devanagari-ext-a": (0x11B00, 0x11B09),
    "u15/emoji-15": (0x1FA70, 0x1FAF8),
    # Unicode 15.1
    "u15.1/cjk-ext-i": (0x2EBF0, 0x2EE5D),
    # Unicode 16.0
    "u16/garay": (0x10D40, 0x10D8F),
    "u16/gurung-khema": (0x16100, 0x16139),
    "u16/kirat-rai": (0x16D40, 0x16D79),
    "u16/ol-onal": (0x1E5D0, 0x1E5FF),
    "u16/sunuwar": (0x11BC0, 0x11BE1),
    "u16/todhri": (0x105C0, 0x105F3),
    "u16/tulu-tigalari": (0x11380, 0x113E2),
    "u16/legacy-computing-sup": (0x1CC00, 0x1CCF9),
    "u16/egyptian-ext-a": (0x13460, 0x143FA),
    "u16/myanmar-ext-c": (0x116D0, 0x116E3),
    # Unicode 17.0
    "u17/cjk-ext-j": (0x323B0, 0x33479),
    "u17/sidetic": (0x10940, 0x10959),
    "u17/tolong-siki": (0x11DB0, 0x11DE9),
    "u17/beria-erfe": (0x16EA0, 0x16EDF),
    "u17/tai-yo": (0x1E6C0, 0x1E6FF),
    "u17/sharada-sup": (0x11B60, 0x11B67),
}

#: broad pools for uniform sampling: (low, high, weight)
POOLS: list[tuple[int, int, float]] = [
    (0x20, 0x7E, 30.0),       # printable ASCII
    (0x00, 0x1F, 1.0),        # C0 controls incl. \t \n \r
    (0x80, 0x24F, 6.0),       # Latin-1, Latin Extended
    (0x250, 0x2FFF, 8.0),     # IPA .. CJK radicals: most alphabetic scripts
    (0x3000, 0x9FFF, 8.0),    # CJK punctuation, kana, CJK
    (0xA000, 0xD7FF, 4.0),    # Yi .. Hangul
    (0xE000, 0xFFFD, 2.0),    # private use, compatibility, specials
    (0x10000, 0x1FFFF, 5.0),  # SMP: historic scripts, emoji, math
    (0x20000, 0x3347F, 3.0),  # CJK extensions B..J
    (0xE0000, 0xE01EF, 0.5),  # tags, variation selectors supplement
    (0xF0000, 0x10FFFF, 0.5), # supplementary private use (incl. noncharacters)
]
