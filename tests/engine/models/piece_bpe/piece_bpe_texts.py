"""Texts for the piece BPE model's tests, and the model and its reference built from a file.

``raw_texts()``: a few hundred texts (seeded, no files): multilingual prose, code,
whitespace runs, emoji and ZWJ sequences, CJK, rare scripts and private-use characters
that need byte fallback, control characters, "▁" itself and literal "<0x41>"-like text,
random code points from every plane, and a few long documents (so chunks repeat and come
from the cache). The model sees them as the reference normalizes them
(``normalizer.normalize_str``): it is handed normalized text, never raw text.

``hostile_texts(n)``: one sequence of n characters with no space: one repeated letter,
random lowercase, random CJK, random emoji, "▁" runs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from shared_files import shared_file

from tokserve.models.piece_bpe._piece_bpe import PieceBpeModel, from_model

PROSE = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "It's 9:30 a.m. on 2024-05-31; the meeting's at the café (room #4).",
    "Don't, won't, can't — shouldn't've.",
    "naïve façade coöperate résumé Ångström",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
    "עטלף אבק נס דרך מזגן שהתפוצץ כי חם",
    "صِف خَلقَ خَودِ كَمِثلِ الشَمسِ إِذ بَزَغَت",
    "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले",
    "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า",
    "我能吞下玻璃而不伤身体。中文分词测试：北京大学生前来应聘",
    "いろはにほへと ちりぬるを わかよたれそ つねならむ",
    "키스의 고유조건은 입술끼리 만나야 하고 특별한 기술은 필요치 않다.",
    "Tiếng Việt có dấu: Chữ Quốc ngữ",
    "ქართული ენა, Հայերեն լեզու, ትግርኛ, ᏣᎳᎩ",
    "𝔗𝔥𝔢 𝔮𝔲𝔦𝔠𝔨 𝕓𝕣𝕠𝕨𝕟 𝒻𝑜𝓍",
    "Ⅻ ① ㎡ ﬁ ﬂ ＡＢＣ １２３ ｶﾀｶﾅ",
    "e\u0301 a\u0308 n\u0303 (combining marks), \u0301 alone",
]

CODE = [
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    '{"key": [1, 2.5, null, true], "nested": {"a": "b"}}',
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<html><body><table><tr><td>cell</td></tr></table></body></html>",
    "x = lambda *args, **kw: (args, kw)\nprint(f'{x(1, y=2)!r:>10}')",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }",
    "git commit -m 'fix: off-by-one' && git push origin HEAD:refs/for/main",
    "0x7fffffff 1e-9 3.14159 -0.0 1_000_000 0b1010",
]

WHITESPACE = [
    " ", "  ", "   ", "a  b", "a   b", " leading", "trailing ", "  both  ", "\t", "\t\t",
    "a\tb", "\n", "\n\n\n", "line1\nline2\r\nline3", " \n \n ", "\u00a0nbsp\u2009thin\u3000ideo",
    " " * 40 + "x", "x" + " " * 33, "a \t\n b",
]

SPECIAL = [
    "▁", "▁▁", "▁▁▁", "a▁b", "▁a", "a▁", "▁ ▁", "x▁▁▁y", "▁" * 17, "<0x41>", "<0xFF><0x00>",
    "<unk>", "<s> </s>", "<|endoftext|>", "[INST] hi [/INST]", "<start_of_turn>user",
    "\x00", "\x01\x02\x1f", "\x7f", "a\x00b", "\ufeff", "\ufffd", "\u200b\u200c\u200d",
    "\ue000\uf8ff", "\U000f0000\U0010fffd", "𒀀𒀁𒀂", "𐀀𐀁", "𐌀𐌁𐌂", "𖿠", "\U0001e900",
    "\U00020000\U0002a6d6", "\U0003134a", "🀄🃏", "Ꭰ", "ꙮ", "ᚠᚢᚦ", "ⰀⰁ", "𓀀𓀁", "\u0600\u06dd",
]

EMOJI = [
    "😀", "👍🏽", "❤️", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈", "🇺🇸🇯🇵", "1️⃣", "🎉🔥🙏🏿", "🧑‍🤝‍🧑",
    "🤷🏻‍♂️", "🐈‍⬛", "lol 😂😂😂 ok", "✨🚀🥲🫠", "emoji between words 🍕 and 🍔.",
]


def _random_texts(rng: random.Random, count: int) -> list[str]:
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x52F), (0x590, 0x6FF), (0x900, 0xDFF),
              (0x1100, 0x11FF), (0x2000, 0x2BFF), (0x3000, 0x30FF), (0x4E00, 0x9FFF),
              (0xAC00, 0xD7A3), (0xE000, 0xF8FF), (0xFB00, 0xFFFD), (0x10000, 0x1FFFF),
              (0x20000, 0x2FFFF), (0xE0000, 0xE01EF), (0xF0000, 0x10FFFD)]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 30)):
            lo, hi = rng.choice(ranges)
            parts.append(chr(rng.randint(lo, hi)))
            if rng.random() < 0.25:
                parts.append(" " * rng.randint(1, 3))
        out.append("".join(parts))
    return out


def _documents(rng: random.Random, count: int) -> list[str]:
    pool = PROSE + CODE + WHITESPACE + SPECIAL + EMOJI
    return ["".join(rng.choice(pool) + rng.choice(["", " ", "\n", "  "])
                    for _ in range(rng.randint(20, 80))) for _ in range(count)]


def raw_texts() -> list[str]:
    rng = random.Random(30)
    mixes = [a + " " + b for a, b in zip(PROSE, reversed(CODE + EMOJI))]
    return (PROSE + CODE + WHITESPACE + SPECIAL + EMOJI + mixes + _random_texts(rng, 150)
            + _documents(rng, 8))


def hostile_texts(n: int) -> dict[str, str]:
    rng = random.Random(n)
    emoji = [chr(c) for c in range(0x1F600, 0x1F650)] + [chr(c) for c in range(0x1F300, 0x1F3F0)]
    return {
        "one letter": "a" * n,
        "random lowercase": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n)),
        "random CJK": "".join(rng.choices([chr(c) for c in range(0x4E00, 0x9FA6)], k=n)),
        "random emoji": "".join(rng.choices(emoji, k=n)),
        "spaces": "▁" * n,
        "space pairs": "a▁" * (n // 2),
    }


def model_dict(name: str) -> tuple[dict, Path]:
    """The "model" object of ../shared/artifacts/<name>/tokenizer.json, and the path."""
    path: Path = shared_file(f"artifacts/{name}/tokenizer.json")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["model"], path


def load_pair(name: str, **options) -> tuple[PieceBpeModel, object]:
    """(ours, the reference ``tokenizers.Tokenizer``) for ../shared/artifacts/<name>/."""
    import tokenizers

    model, path = model_dict(name)
    return from_model(model, path, **options), tokenizers.Tokenizer.from_file(str(path))


def normalized(reference, texts: list[str]) -> list[str]:
    norm = reference.normalizer
    return [norm.normalize_str(t) if norm is not None else t for t in texts]


def mismatches(ours: PieceBpeModel, reference, texts: list[str]) -> list[str]:
    """The texts (already normalized) whose ids or spans differ from ``model.tokenize``;
    ``encode`` and ``count`` must agree with ``encode_with_spans``."""
    bad = []
    for text in texts:
        data = text.encode("utf-8")
        tokens = reference.model.tokenize(text)
        expected_ids = [t.id for t in tokens]
        expected_spans = [x for t in tokens for x in t.offsets]  # byte offsets there
        ids, spans = ours.encode_with_spans(data)
        if (ids, spans) != (expected_ids, expected_spans) or ours.encode(data) != ids \
                or ours.count(data) != len(ids):
            bad.append(text)
    return bad
