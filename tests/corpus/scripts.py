"""Text in every major script, generated from code point ranges (no files, no network).

Real prose is not needed to find disagreements: the pre-tokenizers split on Unicode
categories (letters, marks, numbers, punctuation, whitespace), so what matters is that
every script's letters, combining marks, digits and punctuation appear in word-like runs,
next to spaces, ASCII, apostrophes and newlines. A few hand-written sentences are added
for the scripts where word shape matters most (no spaces in CJK and Thai, RTL, Hangul).
"""

from __future__ import annotations

import random

#: script -> (letter ranges, combining-mark ranges, script punctuation)
SCRIPTS: dict[str, tuple[list[tuple[int, int]], list[tuple[int, int]], str]] = {
    "latin": ([(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xFF), (0x100, 0x17F), (0x180, 0x24F),
               (0x1E00, 0x1EFF)], [(0x300, 0x36F)], ".,;:!?"),
    "ipa": ([(0x250, 0x2AF), (0x1D00, 0x1D7F)], [(0x300, 0x36F)], "."),
    "greek": ([(0x391, 0x3A9), (0x3B1, 0x3C9), (0x1F00, 0x1FBC)], [(0x300, 0x301)], ".,;·"),
    "cyrillic": ([(0x410, 0x44F), (0x400, 0x40F), (0x450, 0x45F), (0x460, 0x481),
                  (0x48A, 0x52F)], [(0x483, 0x487)], ".,;:!?—«»"),
    "armenian": ([(0x531, 0x556), (0x561, 0x587)], [], "։՝՞,"),
    "hebrew": ([(0x5D0, 0x5EA)], [(0x591, 0x5BD), (0x5C1, 0x5C2)], ".,־׃"),
    "arabic": ([(0x621, 0x64A), (0x671, 0x6D3), (0x6FA, 0x6FC)], [(0x64B, 0x65F), (0x670, 0x670)],
               "،؛؟.٪"),
    "syriac": ([(0x710, 0x72F)], [(0x730, 0x74A)], "܀܁"),
    "thaana": ([(0x780, 0x7A5)], [(0x7A6, 0x7B0)], "،"),
    "nko": ([(0x7CA, 0x7EA)], [(0x7EB, 0x7F3)], "߸߹"),
    "devanagari": ([(0x904, 0x939), (0x958, 0x961)], [(0x900, 0x903), (0x93A, 0x94F)], "।॥"),
    "bengali": ([(0x985, 0x9B9)], [(0x981, 0x983), (0x9BC, 0x9CD)], "।"),
    "gurmukhi": ([(0xA05, 0xA39)], [(0xA01, 0xA03), (0xA3C, 0xA4D)], "।"),
    "gujarati": ([(0xA85, 0xAB9)], [(0xA81, 0xA83), (0xABC, 0xACD)], "।"),
    "oriya": ([(0xB05, 0xB39)], [(0xB01, 0xB03), (0xB3C, 0xB4D)], "।"),
    "tamil": ([(0xB85, 0xBB9)], [(0xBBE, 0xBCD)], "."),
    "telugu": ([(0xC05, 0xC39)], [(0xC00, 0xC03), (0xC3E, 0xC4D)], "."),
    "kannada": ([(0xC85, 0xCB9)], [(0xC81, 0xC83), (0xCBC, 0xCCD)], "."),
    "malayalam": ([(0xD05, 0xD3A)], [(0xD00, 0xD03), (0xD3E, 0xD4D)], "."),
    "sinhala": ([(0xD85, 0xDC6)], [(0xDCA, 0xDDF)], "෴"),
    "thai": ([(0xE01, 0xE30), (0xE40, 0xE46)], [(0xE31, 0xE31), (0xE34, 0xE3A), (0xE47, 0xE4E)],
             "ฯ๚"),
    "lao": ([(0xE81, 0xEB0)], [(0xEB1, 0xEB1), (0xEB4, 0xEBC)], "ໆ"),
    "tibetan": ([(0xF40, 0xF6C)], [(0xF71, 0xF84)], "་།"),
    "myanmar": ([(0x1000, 0x102A)], [(0x102B, 0x103E)], "၊။"),
    "georgian": ([(0x10D0, 0x10FA), (0x10A0, 0x10C5), (0x1C90, 0x1CBA)], [], "."),
    "hangul": ([(0xAC00, 0xD7A3)], [], ".,"),
    "hangul_jamo": ([(0x1100, 0x1112), (0x1161, 0x1175), (0x11A8, 0x11C2), (0x3131, 0x318E)],
                    [], "."),
    "ethiopic": ([(0x1200, 0x1248), (0x1250, 0x1256)], [(0x135D, 0x135F)], "።፣፤"),
    "cherokee": ([(0x13A0, 0x13F5), (0xAB70, 0xABBF)], [], "."),
    "canadian": ([(0x1401, 0x166C)], [], "᙮"),
    "ogham_runic": ([(0x1681, 0x169A), (0x16A0, 0x16EA)], [], "᛫᛬"),
    "khmer": ([(0x1780, 0x17B3)], [(0x17B6, 0x17D3)], "។៕"),
    "mongolian": ([(0x1820, 0x1878)], [(0x18A9, 0x18A9)], "᠂᠃"),
    "hiragana": ([(0x3041, 0x3096)], [(0x3099, 0x309A)], "。、「」"),
    "katakana": ([(0x30A1, 0x30FA), (0x31F0, 0x31FF), (0xFF66, 0xFF9D)], [], "。・ー"),
    "cjk": ([(0x4E00, 0x9FFF)], [], "。，、：；！？「」『』（）"),
    "cjk_ext": ([(0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B739), (0x2B740, 0x2B81D),
                 (0x2B820, 0x2CEA1), (0x2CEB0, 0x2EBE0), (0x30000, 0x3134A), (0xF900, 0xFAD9)],
                [], "。"),
    "bopomofo": ([(0x3105, 0x312F), (0x31A0, 0x31BF)], [], "。"),
    "yi_vai": ([(0xA000, 0xA48C), (0xA500, 0xA60B)], [], "꓾꓿"),
    "tifinagh_glagolitic_coptic": ([(0x2D30, 0x2D67), (0x2C00, 0x2C5F), (0x2C80, 0x2CE4)], [], "."),
    "javanese_balinese": ([(0xA984, 0xA9B2), (0x1B05, 0x1B33)], [(0xA9B3, 0xA9C0), (0x1B34, 0x1B44)],
                          "꧈꧉"),
    "gothic_linearb_cuneiform": ([(0x10330, 0x1034A), (0x10000, 0x1004D), (0x12000, 0x12399)],
                                 [], "."),
    "math_alnum": ([(0x1D400, 0x1D6A5), (0x1D7CE, 0x1D7FF)], [], "∑∫≤≥"),
    "fullwidth": ([(0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0xFF10, 0xFF19)], [], "！？，．"),
    "letterlike_enclosed": ([(0x2100, 0x214F), (0x2460, 0x24FF), (0x3200, 0x32FF)], [], "."),
}

SENTENCES = [
    "The quick brown fox jumps over the lazy dog; it's 9:45 and we've 3 dogs.",
    "Voilà l'été : où êtes-vous ? Ça coûte 12,50 € à Saint-Étienne.",
    "Größere Übungen fördern Änderungen – straße, STRASSE, Maß.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Γαζέες καὶ μυρτιὲς δὲν θὰ βρῶ πιὰ στὸ χρυσαφὶ ξέφωτο.",
    "نص عربي للاختبار مع أرقام ١٢٣ و 456 وعلامات؟ «نعم».",
    "עברית עם ניקוד: שָׁלוֹם עוֹלָם, 2024.",
    "हिन्दी में एक वाक्य: नमस्ते दुनिया! संख्या १२३४।",
    "বাংলা ভাষায় একটি বাক্য। তামিল: தமிழ் மொழி. తెలుగు భాష.",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำแต่มีระหว่างประโยค ทดสอบ๑๒๓",
    "日本語の文章です。東京は晴れ、気温は２５度でした。カタカナとひらがな。",
    "中文句子没有空格，这是一个测试：人工智能、机器学习和自然语言处理。",
    "繁體中文：臺灣的鳳梨酥很好吃！香港、澳門。",
    "한국어 문장입니다. 안녕하세요, 세계! 숫자 123과 함께.",
    "Tiếng Việt có nhiều dấu: Người ta thường nói rằng ăn quả nhớ kẻ trồng cây.",
    "Türkçe: İstanbul'da ılık bir gün; IĞDIR, ığdır, İi Iı.",
    "ქართული ენა, Հայերեն լեզու, ትግርኛ ቋንቋ, ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ.",
    "Myanmar မြန်မာဘာသာ, Khmer ភាសាខ្មែរ, Lao ພາສາລາວ, Tibetan བོད་སྐད་.",
    "Polski: zażółć gęślą jaźń. Čeština: příliš žluťoučký kůň.",
    "Ελληνικά και English mixed with 中文 and العربية in one line.",
]


def _pick(rng: random.Random, ranges: list[tuple[int, int]]) -> str:
    lo, hi = rng.choice(ranges)
    return chr(rng.randint(lo, hi))


def script_text(rng: random.Random, script: str, n_words: int) -> str:
    """Pseudo-sentences: words of a script's letters (with marks), spaces, punctuation."""
    letters, marks, punct = SCRIPTS[script]
    no_spaces = script in ("cjk", "cjk_ext", "hiragana", "katakana", "thai", "lao", "khmer",
                           "myanmar", "tibetan")
    out: list[str] = []
    for w in range(n_words):
        word = []
        for _ in range(rng.randint(1, 9)):
            word.append(_pick(rng, letters))
            if marks and rng.random() < 0.3:
                word.append(_pick(rng, marks))
        out.append("".join(word))
        r = rng.random()
        if r < 0.12:
            out.append(rng.choice(punct))
        elif r < 0.16:
            out.append(rng.choice(["'s", "’", "-", "'", "\"", "(", ")", "1", "42", "\n"]))
        if not no_spaces or rng.random() < 0.1:
            out.append(" ")
    return "".join(out)


def script_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = [(f"sentence/{i}", s) for i, s in enumerate(SENTENCES)]
    for script in SCRIPTS:
        for k in range(3):
            cases.append((f"script/{script}/{k}", script_text(rng, script, rng.randint(5, 120))))
    # scripts mixed inside one text, without spaces between them
    names = list(SCRIPTS)
    for k in range(20):
        parts = [script_text(rng, rng.choice(names), rng.randint(1, 6)) for _ in range(8)]
        cases.append((f"script/mixed/{k}", rng.choice(["", " ", "\n"]).join(parts)))
    return cases
