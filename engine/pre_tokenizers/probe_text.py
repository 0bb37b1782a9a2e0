"""The texts a custom pre-tokenizer pattern is tried on before it is trusted.

Coverage (``COVERAGE_PROBES``): a tiktoken-style pattern is the whole pre-tokenizer, so a
character none of its alternatives matches is silently dropped, and with it its ids.
The probes hold characters of every Unicode general category (surrogates excepted: text
reaching the pattern is valid Unicode), of every script of the tests' corpus
(tests/corpus/scripts.py; tests/engine/pre_tokenizers/test_pattern_check.py keeps the
two lists in step), whitespace runs, CR/LF, and everyday mixes of them.

Time (``RUN_UNITS``): a pattern that backtracks badly does so on long runs of what one
of its repeats matches, ended by something it does not; the runs are built from these
units (pattern_check.py).

``SAMPLE_ALPHABET`` (all of ASCII plus every character above) is what regex_shape.py
compares character sets on.
"""

from __future__ import annotations

#: general category -> characters of it (stable since Unicode 6 or older, so assigned
#: in every reference's Unicode version)
CATEGORY_SAMPLES: dict[str, str] = {
    "Lu": "AZÀΩЖ\U0001d400", "Ll": "azßωж", "Lt": "\u01c5\u1f88", "Lm": "\u02b0\u3005",
    "Lo": "\u05d0\u0627\u4e2d\u3042\uac00", "Mn": "\u0301\u0591\u0e31", "Mc": "\u0903\u0bbe",
    "Me": "\u20dd\u0488", "Nd": "09\u0663\u0967\uff10", "Nl": "\u216b\u3007",
    "No": "\u00bd\u00b2\u2460", "Pc": "_\u203f", "Pd": "-\u2014", "Ps": "([{\u300c",
    "Pe": ")]}\u300d", "Pi": "\u00ab\u2018", "Pf": "\u00bb\u2019", "Po": "!.,'\"#\u3002",
    "Sm": "+<=>|~\u2211", "Sc": "$\u20ac\u00a5", "Sk": "^`\u00a8", "So": "\u00a9\U0001f600",
    "Zs": " \u00a0\u3000\u2003", "Zl": "\u2028", "Zp": "\u2029",
    "Cc": "\x00\t\n\x0b\x0c\r\x1b\x7f\x85", "Cf": "\u00ad\u200d\ufeff\U000e0001",
    "Co": "\ue000\U000f0000", "Cn": "\u0378\uffff\U000e0080",
}

#: script of tests/corpus/scripts.py -> a letter, a combining mark (where it has one) and
#: a punctuation mark of it
SCRIPT_SAMPLES: dict[str, str] = {
    "latin": "I\u0300.", "ipa": "\u026f\u0300.", "greek": "\u0399\u0300.",
    "cyrillic": "\u0425\u0483.", "armenian": "\u053d\u0589", "hebrew": "\u05d8\u0591.",
    "arabic": "\u062e\u064b\u060c", "syriac": "\u071a\u0730\u0700",
    "thaana": "\u078c\u07a6\u060c", "nko": "\u07d4\u07eb\u07f8",
    "devanagari": "\u0915\u0900\u0964", "bengali": "\u0996\u0981\u0964",
    "gurmukhi": "\u0a16\u0a01\u0964", "gujarati": "\u0a96\u0a81\u0964",
    "oriya": "\u0b16\u0b01\u0964", "tamil": "\u0b96\u0bbe.", "telugu": "\u0c16\u0c00.",
    "kannada": "\u0c96\u0c81.", "malayalam": "\u0d16\u0d00.",
    "sinhala": "\u0d9a\u0dca\u0df4", "thai": "\u0e10\u0e31\u0e2f", "lao": "\u0e90\u0eb1\u0ec6",
    "tibetan": "\u0f4e\u0f71\u0f0b", "myanmar": "\u100e\u102b\u104a", "georgian": "\u10de.",
    "hangul": "\ubaab.", "hangul_jamo": "\u1106.", "ethiopic": "\u1218\u135d\u1362",
    "cherokee": "\u13bc.", "canadian": "\u14cf\u166e", "ogham_runic": "\u1689\u16eb",
    "khmer": "\u1791\u17b6\u17d4", "mongolian": "\u183d\u18a9\u1802",
    "hiragana": "\u305d\u3099\u3002", "katakana": "\u30be\u3002", "cjk": "\u6955\u3002",
    "cjk_ext": "\u3c95\U00020000\u3002", "bopomofo": "\u3113\u3002",
    "yi_vai": "\ua184\ua4fe", "tifinagh_glagolitic_coptic": "\u2d42\u2c00\u2c80.",
    "javanese_balinese": "\ua993\ua9b3\ua9c8", "gothic_linearb_cuneiform": "\U00010338\U00012000.",
    "math_alnum": "\U0001d4e1\u2211", "fullwidth": "\uff29\uff01", "letterlike_enclosed": "\u211a.",
}

_WHITESPACE = ("  ", "   x", "x   ", "\t\t", "\n\n\n", "\r\n", "\r\n\r\n", "\r\r", " \n ",
               "\n ", "x  \n  y", " \t\n\x0b\x0c\r", "\u3000\u3000", "\u00a0\u00a0x",
               "\u2028\u2029", "\x85", " " * 40 + "x", "\n" * 20)
_MIXED = ("Hello, world!", "I'm sure they'd've SAID it's OK", "1234567 89",
          "naïve café 東京 😀👍🏽", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "e\u0301",
          "def f(x):\r\n    return x ** 2\r\n", "x=1;y<2>z", "$12.50 \u20ac3", "a_b-c.d/e\\f",
          "<|endoftext|>", "\x00\x01\x02", "'s 're 'VE")

#: every text coverage is checked on (pattern_check.py)
COVERAGE_PROBES: tuple[str, ...] = (
    *(c for chars in CATEGORY_SAMPLES.values() for c in chars),
    *(" " + "".join(CATEGORY_SAMPLES.values()).replace(" ", "") + " ",),
    *SCRIPT_SAMPLES.values(),
    *(f"{s} {s}{s}\n" for s in SCRIPT_SAMPLES.values()),
    *_WHITESPACE,
    *_MIXED,
)

#: what timing runs are made of: each repeated, then ended by a character that rarely
#: continues anything (pattern_check.py)
RUN_UNITS: tuple[str, ...] = (
    "a", "A", "aA", "0", " ", "\t", "\n", "\r\n", " \n", ".", ",", "'", "-", "_", "!",
    "a ", " a", "a1", "a.", "0,", "é", "\u0301", "a\u0301", "中", "あ", "\u0627", "😀",
    "\u00a0", "\u3000", "\x00",
)

#: all of ASCII, then every sample character above (regex_shape.py's alphabet)
SAMPLE_ALPHABET: tuple[str, ...] = tuple(dict.fromkeys(
    [chr(c) for c in range(128)]
    + [c for chars in CATEGORY_SAMPLES.values() for c in chars]
    + [c for sample in SCRIPT_SAMPLES.values() for c in sample]
    + [c for unit in RUN_UNITS for c in unit]))
