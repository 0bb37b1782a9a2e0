"""Case builders, one per family of hard input. Each returns ``[(label, text), ...]``.

Every builder is deterministic given its ``random.Random``. Texts here are valid Unicode
(no lone surrogates) unless the label starts with ``surrogate/``: round-trip tests use
``is_valid_text`` to tell them apart.
"""

from __future__ import annotations

import base64
import inspect
import itertools
import random
import unicodedata

from .unicode_ranges import POOLS, RECENT

WHITESPACE = [" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f",
              "\x85", "\xa0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004",
              "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029",
              "\u202f", "\u205f", "\u3000",
              # not whitespace to \s, but look like it
              "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e"]
WORDS = ["hello", "world", "The", "quick", "BROWN", "fox", "naïve", "café", "Straße", "über",
         "мир", "日本", "x", "a", "I", "don", "it", "12", "3.14", "foo_bar", "camelCase", "!", "?!",
         "...", "--", "$", "@user", "#tag", "é", "ß", "ǅ", "ﬁ", "Ⅻ", "½"]


def is_valid_text(text: str) -> bool:
    """True when ``text`` is encodable as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def whitespace_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = []
    for ws in WHITESPACE:
        for n in (1, 2, 3, 4, 7, 8, 15, 16, 17, 33, 64, 100):
            run = ws * n
            cases.append((f"ws/{ord(ws[0]):04x}x{n}", f"a{run}b{run}\n{run}"))
            cases.append((f"ws/{ord(ws[0]):04x}x{n}/end", "word" + run))
            cases.append((f"ws/{ord(ws[0]):04x}x{n}/start", run + "word"))
    for n in (1000, 4097, 20000):
        cases.append((f"ws/spaces{n}", " " * n + "x" + " " * n))
        cases.append((f"ws/newlines{n}", "\n" * n + "x"))
    for k in range(300):
        run = "".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 40)))
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        shape = rng.randrange(5)
        text = [f"{a}{run}{b}", f"{run}{a}", f"{a}{run}", run, f"{a} {run}\n{b}"][shape]
        cases.append((f"ws/mixed/{k}", text))
    # trailing whitespace before newlines and at the very end (cl100k's \s++$, \s*[\r\n])
    for k in range(60):
        lines = [rng.choice(WORDS) + " " * rng.randint(0, 5) + "\t" * rng.randint(0, 2)
                 for _ in range(rng.randint(1, 6))]
        cases.append((f"ws/lines/{k}", rng.choice(["\n", "\r\n", "\n\n", " \n "]).join(lines)
                       + " " * rng.randint(0, 3)))
    return cases


def contraction_cases(rng: random.Random) -> list[tuple[str, str]]:
    suffixes = ["s", "t", "re", "ve", "m", "ll", "d"]
    cases = []
    for suf in suffixes:
        for casing in itertools.product(*[(c.lower(), c.upper()) for c in suf]):
            s = "".join(casing)
            for apo in ("'", "’", "‘", "ʼ", "`"):
                for before in ("it", "IT", "I", "don", "we", "y", "1", " ", "", "é", "日", "\n", "''"):
                    cases.append((f"contraction/{s}/{ord(apo):x}", f"{before}{apo}{s} {before}{apo}{s}x"))
    # Unicode case folding around the (?i:...) groups: long s, Kelvin sign, dotless i
    for odd in ("ſ", "K", "ı", "İ", "ſt", "ﬅ", "ß", "Ｓ", "ʟʟ"):
        cases.append((f"contraction/fold/{odd}", f"it'{odd} IT'{odd}'{odd}"))
    for k in range(200):
        w = "".join(rng.choice("aAbBsStTmMdDlLvVrReE'’ ") for _ in range(rng.randint(1, 30)))
        cases.append((f"contraction/rand/{k}", w))
    return cases


def digit_cases(rng: random.Random) -> list[tuple[str, str]]:
    digit_sets = ["0123456789", "٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "०१२३४५६७८९", "০১২৩৪৫৬৭৮৯",
                  "０１２３４５６７８９", "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗", "๐๑๒๓๔๕๖๗๘๙", "²³¹⁰⁴⁵", "½¼¾⅓⅞",
                  "ⅠⅡⅢⅣⅫⅰⅱ", "①②③⑳", "〇一二三"]
    cases = []
    for ds in digit_sets:
        for n in range(1, 31):
            run = "".join(rng.choice(ds) for _ in range(n))
            cases.append((f"digits/{ord(ds[0]):x}/{n}", f"{run} a{run}b {run}.{run}"))
    for k in range(200):
        n = rng.randint(1, 10 ** rng.randint(1, 12))
        fmt = rng.choice(["{:,}", "{:.3f}", "{:e}", "-{}", "+{}", "#{:x}", "0x{:X}", "{}%",
                          "${:,.2f}", "{}px", "v{}.0.1", "{}th", "1e{}"])
        cases.append((f"digits/fmt/{k}", fmt.format(n) + rng.choice([" ", "", "\n", "abc"])
                       + fmt.format(n // 3)))
    cases.append(("digits/long", "".join(rng.choice("0123456789") for _ in range(5000))))
    cases.append(("digits/dates", "2024-01-31T23:59:59.999Z 31/12/1999 12:00 +1 (555) 123-4567"))
    return cases


def emoji_cases(rng: random.Random) -> list[tuple[str, str]]:
    zwj = "\u200d"
    seqs = ["😀", "👍", "👍🏽", "👍🏿", "❤️", "❤︎", "☺", "☺️", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈",
            "🏳️‍⚧️", "🧑‍🤝‍🧑", "👁️‍🗨️", "🇺🇸", "🇯🇵🇫🇷", "🇦", "1️⃣", "#️⃣", "*️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿",
            "🫠", "🫶🏼", "🪿", "🫎", "🐈‍⬛", "🐦‍🔥", "🍋‍🟩", "🧔‍♀️", "🙂‍↔️", "😶‍🌫️", "❤️‍🔥",
            "👩‍❤️‍💋‍👨", "🤷🏻‍♂️", "🏃🏾‍➡️"]
    singles = [chr(c) for c in list(range(0x1F600, 0x1F650)) + list(range(0x1F900, 0x1F9FF))
               + list(range(0x2600, 0x26FF))]
    cases = [(f"emoji/seq/{i}", f"{s} {s}{s}a{s}\n{s}") for i, s in enumerate(seqs)]
    for k in range(150):
        parts = []
        for _ in range(rng.randint(1, 25)):
            r = rng.random()
            if r < 0.35:
                parts.append(rng.choice(seqs))
            elif r < 0.6:
                parts.append(rng.choice(singles) + rng.choice(["", "\ufe0f", "\ufe0e", "🏻", "🏾"]))
            elif r < 0.7:
                parts.append(zwj.join(rng.choice(singles) for _ in range(rng.randint(2, 5))))
            else:
                parts.append(rng.choice(WORDS) + rng.choice(["", " ", "!", "\n"]))
        cases.append((f"emoji/mix/{k}", "".join(parts)))
    cases.append(("emoji/long", "🎉" * 3000))
    cases.append(("emoji/long-zwj", zwj.join(["👩"] * 2000)))
    return cases


def normalization_cases(rng: random.Random) -> list[tuple[str, str]]:
    base = ["Ǆemal café naïve Å Ω ﬁ ﬀ ² ½ ℌ ℍ ① ㍿ Ⅻ ｶﾞ ｱ", "Tiếng Việt: người, trồng, nhớ, quả",
            "한국어 안녕하세요 갑각", "Ελληνικά ῼ ᾯ ΐ", "Åström Ñandú Øre ǖǘǚǜ", "é̀ ḗ ǭ ự ậ",
            "ḁ̶̢̛̤̩̞̲͂̿̊̌̈́͑͊̓̕͠ z̸̡̛̘̞̺̈́ͅa̵̡̧̝̓l̷̛̤̥̈g̴͎̐o̸͙̥̿"]
    cases = []
    for i, text in enumerate(base):
        for form in ("NFC", "NFD", "NFKC", "NFKD"):
            cases.append((f"norm/{form}/{i}", unicodedata.normalize(form, text)))
    for k in range(100):
        letters = "".join(rng.choice("aeiouAEIOUnNcCsSzZyYwW") for _ in range(rng.randint(1, 12)))
        marks = "".join(chr(rng.randint(0x300, 0x36F)) for _ in range(rng.randint(0, 6)))
        text = letters + marks + " " + letters[::-1] + marks[::-1]
        cases.append((f"norm/marks/{k}", unicodedata.normalize(rng.choice(["NFC", "NFD"]), text)))
    cases.append(("norm/long-marks", "a" + "\u0301" * 3000 + " b" + "\u0308\u0323" * 1000))
    return cases


def control_cases(rng: random.Random) -> list[tuple[str, str]]:
    controls = [chr(c) for c in list(range(0, 32)) + [127] + list(range(0x80, 0xA0))]
    formats = ["\u00ad", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
               "\u2066", "\u2067", "\u2068", "\u2069", "\u2061", "\u2062", "\u2063", "\u2064",
               "\ufeff", "\ufff9", "\ufffa", "\ufffb", "\ufffc", "\ufffd", "\uffff", "\ufffe",
               "\U000e0001", "\U000e0041", "\U0010ffff", "\U000fffff", "\ue000", "\uf8ff",
               "\U0001d173", "\u0600", "\u06dd", "\u070f", "\u08e2", "\U000110bd"]
    cases = [("control/all", "".join(controls)), ("control/formats", "".join(formats)),
             ("control/nul", "a\x00b\x00\x00 c\x00")]
    for k in range(150):
        pool = controls + formats + WORDS + [" ", "\n"]
        cases.append((f"control/mix/{k}", "".join(rng.choice(pool) for _ in range(rng.randint(1, 60)))))
    return cases


_STDLIB_MODULES = ["json.decoder", "textwrap", "string", "heapq", "bisect", "shlex", "fnmatch",
                   "colorsys", "base64", "html.parser", "argparse", "dataclasses", "csv",
                   "difflib", "functools"]


def code_cases(rng: random.Random, max_bytes: int = 400_000) -> list[tuple[str, str]]:
    """Python source from the standard library (always on disk), plus other languages."""
    import importlib

    cases = []
    total = 0
    for name in _STDLIB_MODULES:
        try:
            source = inspect.getsource(importlib.import_module(name))
        except (OSError, TypeError, ImportError):
            continue
        for k in range(0, len(source), 6000):
            chunk = source[k:k + 6000]
            cases.append((f"code/py/{name}/{k}", chunk))
            total += len(chunk)
            if total > max_bytes:
                return cases
    snippets = [
        'function f(a, b) {\n\treturn a.map(x => x * 2).filter(Boolean);\n}\nconst s = `${a}\\n`;',
        '#include <stdio.h>\nint main(void) {\n    printf("%d\\n", 0x7fffffff >> 3);\n    return 0;\n}',
        'SELECT u.id, COUNT(*) AS n FROM users u LEFT JOIN orders o ON o.uid=u.id GROUP BY 1;',
        '{"key": [1, 2.5e-3, null, true], "nested": {"a\\u00e9": "\\ud83d\\ude00"}}',
        '<div class="x" data-y=\'1\'>&amp; &lt;b&gt;</div>\n<!-- comment -->\n<br/>',
        'fn main() -> Result<(), Box<dyn Error>> {\n    let v: Vec<u8> = vec![0; 1 << 20];\n    Ok(())\n}',
        '    if (x != y && y >= 0 || !z) { i++; j--; k <<= 2; m ||= n; } // ok\n\t\t\t/* tabs */',
        'a=$(ls -la | grep -v "^d" | awk \'{print $9}\') && echo "${a:-none}" >&2',
        'def f(*args, **kwargs) -> dict[str, int]:\n    """Doc."""\n    return {k: v for k, v in kwargs.items()}\n',
    ]
    for i, s in enumerate(snippets):
        cases.append((f"code/snippet/{i}", s))
        cases.append((f"code/snippet/{i}/indented", "\n".join("    " * rng.randint(0, 4) + line
                                                                for line in s.splitlines())))
    return cases


def markdown_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = []
    for k in range(80):
        parts = [f"{'#' * rng.randint(1, 6)} Heading {k}: {rng.choice(WORDS)}\n"]
        for _ in range(rng.randint(2, 10)):
            r = rng.randrange(9)
            w = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
            parts.append([
                f"- item **{w}** and _{w}_\n",
                f"  1. nested `code {w}` [link](https://example.com/{k}?q={w}&x=1#a)\n",
                f"> quote: {w}\n>\n> > deeper\n",
                f"| a | b |\n|---|:-:|\n| {w} | {k} |\n",
                f"```python\nprint({w!r})\n```\n",
                f"$$\\frac{{a_{k}}}{{\\sqrt{{b^2}}}} \\sum_{{i=0}}^{{n}}$$ and $x^2$\n",
                f"<details><summary>{w}</summary>\n\n***\n</details>\n",
                f"![img](./a_{k}.png) ~~{w}~~ <kbd>Ctrl</kbd>+<kbd>C</kbd>\n",
                f"{w}  \n{w}\\\n\n---\n",
            ][r])
        cases.append((f"markdown/{k}", "".join(parts)))
    return cases


def long_word_cases(rng: random.Random) -> list[tuple[str, str]]:
    b64 = base64.b64encode(bytes(rng.randrange(256) for _ in range(15000))).decode()
    return [
        ("long/a5000", "a" * 5000),
        ("long/A-a", "aA" * 3000),
        ("long/word-repeat", "supercalifragilisticexpialidocious" * 200),
        ("long/base64", b64),
        ("long/hex", "".join(rng.choice("0123456789abcdef") for _ in range(8000))),
        ("long/url", "https://example.com/" + "/".join(rng.choice(WORDS) for _ in range(800))),
        ("long/cjk", "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(6000))),
        ("long/thai", "".join(chr(rng.randint(0xE01, 0xE30)) for _ in range(5000))),
        ("long/punct", "!" * 3000 + "?" * 1000 + "-=" * 1500 + "." * 2000),
        ("long/underscores", "_" * 4000 + "a" + "/" * 3000),
        ("long/mixed-letters", "".join(rng.choice("aeiouxyzAEIOUXYZ") for _ in range(10000))),
        ("long/cyrillic", "ы" * 4000),
        ("long/latin1", "é" * 4000 + "ß" * 1000),
        ("long/dots-newlines", ".\n" * 3000),
    ]


def random_unicode_cases(rng: random.Random, count: int = 300) -> list[tuple[str, str]]:
    lows, highs, weights = zip(*POOLS)
    cases = []
    for k in range(count):
        n = rng.randint(1, 200)
        chosen = rng.choices(range(len(POOLS)), weights=weights, k=n)
        chars = []
        for i in chosen:
            c = rng.randint(lows[i], highs[i])
            if 0xD800 <= c <= 0xDFFF:
                c = 0xFFFD
            chars.append(chr(c))
        cases.append((f"random/{k}", "".join(chars)))
    return cases


def recent_unicode_cases(rng: random.Random) -> list[tuple[str, str]]:
    """Characters from Unicode 15, 16 and 17, alone and among ASCII letters and digits."""
    cases = []
    for block, (lo, hi) in RECENT.items():
        every = "".join(chr(c) for c in range(lo, min(hi, lo + 400) + 1))
        cases.append((f"recent/{block}/all", every))
        for k in range(6):
            parts = []
            for _ in range(rng.randint(3, 30)):
                new = "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 6)))
                parts.append(rng.choice([new, f" {new}", f"a{new}", f"{new}b", f"'{new}", f"1{new}",
                                         f"{new}'s", f"A{new}z", f"\n{new}", f"é{new}"]))
            cases.append((f"recent/{block}/{k}", "".join(parts)))
    return cases


def surrogate_cases(rng: random.Random) -> list[tuple[str, str]]:
    """Lone surrogates (JSON can carry them), never an adjacent high+low pair."""
    cases = []
    for k in range(60):
        parts = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.3:
                parts.append(chr(rng.randint(0xD800, 0xDBFF)))  # high alone
            elif r < 0.5:
                parts.append(chr(rng.randint(0xDC00, 0xDFFF)))  # low alone
            elif r < 0.6:  # low then high: not a pair
                parts.append(chr(rng.randint(0xDC00, 0xDFFF)) + chr(rng.randint(0xD800, 0xDBFF)))
            else:
                parts.append(rng.choice(WORDS) + rng.choice(["", " ", "\n"]))
        text = "".join(parts)
        # break any accidental high+low pair by inserting a letter between them
        fixed = []
        for ch in text:
            if fixed and 0xDC00 <= ord(ch) <= 0xDFFF and 0xD800 <= ord(fixed[-1]) <= 0xDBFF:
                fixed.append("x")
            fixed.append(ch)
        cases.append((f"surrogate/{k}", "".join(fixed)))
    return cases


def literal_cases(rng: random.Random, literals: list[str], count: int = 200) -> list[tuple[str, str]]:
    """Texts holding special/added-token literals, whole, partial, adjacent and nested."""
    if not literals:
        return []
    lits = sorted(literals)
    cases = [("literal/all", " ".join(lits[:300])), ("literal/all-adjacent", "".join(lits[:300]))]
    for k in range(count):
        parts = []
        for _ in range(rng.randint(1, 10)):
            lit = rng.choice(lits)
            r = rng.random()
            if r < 0.35:
                parts.append(lit)
            elif r < 0.45:
                parts.append(lit[: rng.randint(1, max(1, len(lit) - 1))])  # prefix only
            elif r < 0.5:
                parts.append(lit[rng.randint(1, max(1, len(lit) - 1)):])  # suffix only
            elif r < 0.55:
                parts.append(lit[:2] + lit + lit[-2:])  # nested in its own delimiters
            elif r < 0.6:
                parts.append(lit.upper() if lit != lit.upper() else lit.lower())
            elif r < 0.65:
                parts.append(lit + lit)
            else:
                parts.append(rng.choice(WORDS) + rng.choice(["", " ", "\n", "  "]))
        cases.append((f"literal/{k}", "".join(parts)))
    return cases
