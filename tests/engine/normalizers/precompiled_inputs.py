"""Inputs for the Precompiled normalizer tests: T5's charsmap, the reference, texts.

``charsmap_keys`` reads the keys out of the darts-clone double array with an independent
few lines of Python (a depth-first walk over every byte label), so that the texts can
be aimed at the rules: whole keys, key prefixes, keys glued to combining marks, CR LF,
removals next to expansions ("™\\x1eg").
"""

from __future__ import annotations

import base64
import functools
import json
import random
import struct
import zlib

from corpus.builders import control_cases, emoji_cases, normalization_cases
from corpus.scripts import script_cases
from shared_files import shared_file

T5 = "artifacts/t5-small/tokenizer.json"


@functools.lru_cache(maxsize=1)
def t5_charsmap_base64() -> str:
    with open(shared_file(T5), encoding="utf-8") as fh:
        return json.load(fh)["normalizer"]["precompiled_charsmap"]


@functools.lru_cache(maxsize=1)
def reference():
    from tokenizers.normalizers import Precompiled

    return Precompiled(base64.b64decode(t5_charsmap_base64()))


_STARTS = tuple(range(1, 0x80)) + tuple(range(0xC2, 0xF5))  # bytes that begin a character
_INSIDE = tuple(range(0x80, 0xC0))  # continuation bytes


@functools.lru_cache(maxsize=1)
def charsmap_keys() -> tuple[str, ...]:
    """Every key of up to two characters, and every eighth longer one (T5 has 206k
    three-jamo keys; walking them all takes seconds)."""
    blob = base64.b64decode(t5_charsmap_base64())
    (size,) = struct.unpack_from("<I", blob)
    units = struct.unpack_from(f"<{size // 4}I", blob, 4)
    keys = []
    # (node position, key bytes so far, bytes still due in the current character)
    stack = [((units[0] >> 10) << ((units[0] & 512) >> 6), b"", 0)]
    while stack:
        pos, prefix, due = stack.pop()
        for label in (_INSIDE if due else _STARTS):
            child = pos ^ label
            if child >= len(units) or units[child] & 0x800000FF != label:
                continue
            unit = units[child]
            key = prefix + bytes([label])
            left = due - 1 if due else (0 if label < 0x80 else 1 if label < 0xE0 else
                                        2 if label < 0xF0 else 3)
            if unit & 256 and not left:
                keys.append(key.decode("utf-8"))
            if not left and len(key.decode("utf-8")) >= 2 and zlib.crc32(key) % 8:
                continue  # two characters done: walk on below one node in eight
            stack.append((child ^ ((unit >> 10) << ((unit & 512) >> 6)), key, left))
    return tuple(sorted(keys))


GLUE = ["\u0300", "\u0301", "\u0323", "\u0338", "\u093c", "\u094d", "\u09be", "\u200d", "\ufe0f",
        "\U0001F3FB", "\r", "\n", "\x1e", "\x01", "\t", " ", "\u3099", "\uff9e", "\u1160",
        "\u11a8", "\U0001F1E6", "\U0001F1FA", "\u0600", "™", "ﷺ", "a", "x"]


def crafted_texts(count: int, seed: int) -> list[str]:
    """Random joins of keys, key prefixes and characters that glue onto them."""
    keys = charsmap_keys()
    rng = random.Random(seed)
    texts = ["a\r\nb", "a\n\rb", "™\x1eg", "\x1eab", "\x1e\x1eab", "ﬁ", "ᵤ̭", "ª\u0301",
             "hello world", "", "e\u0301", "ﷺ", "㍿", "ａｂ\x1eq\n", "\x1e", "™", "👨‍👩‍👧‍👦",
             "🇺🇸🇯🇵🇫", "क्ष", "\u0600a", "\u0600ª", "\t\t", "\xa0", "Ǆemal ｶﾞ ｱ"]
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.4:
                parts.append(rng.choice(keys))
            elif r < 0.55:
                parts.append(rng.choice(keys)[:rng.randint(1, 3)])
            elif r < 0.8:
                parts.append(rng.choice(GLUE))
            else:
                parts.append(chr(rng.choice([rng.randint(0x20, 0x3000),
                                             rng.randint(0x3000, 0x2FFFF)])))
        text = "".join(parts)
        if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            texts.append(text)
    return texts


def corpus_texts() -> list[str]:
    """Every script, emoji and ZWJ sequences, NFC/NFD, compatibility forms, controls."""
    rng = random.Random(29)
    texts = [text for _, text in script_cases(rng)]
    texts += [text for _, text in emoji_cases(rng)]
    texts += [text for _, text in normalization_cases(rng)]
    texts += [text for _, text in control_cases(rng)]
    fullwidth = "".join(chr(c) for c in range(0xFF01, 0xFFEF))
    hangul = ("".join(chr(c) for c in range(0x1100, 0x1200))
              + "".join(chr(c) for c in range(0x3131, 0x318F)))
    ligatures = "ﬀﬁﬂﬃﬄﬅﬆ ﷺ ﷻ ㍿ ㌀ ™ ℡ ½ ¼ ² ³ Ⅻ ⅻ ① ⑴ ⒜ 🄐 ︵ ﹏"
    texts += [fullwidth, hangul, ligatures, "".join(chr(c) for c in range(0x250))]
    return [t for t in texts if not any(0xD800 <= ord(c) <= 0xDFFF for c in t)]
