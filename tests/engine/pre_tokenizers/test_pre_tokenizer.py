"""Differential tests of the compiled pre-tokenizer scanners (engine/_native/pretok_scan.h).

Why: ids are only right if pieces are right, and the references do not expose pieces
(tiktoken) or apply several splits in sequence (tokenizers). So each family is checked
three ways on a seeded corpus built here (every major script, whitespace runs of every
kind, contractions in every case incl. U+017F, digits of many scripts, emoji/ZWJ,
combining marks, NFD, characters from Unicode 15.0/15.1/16.0/17.0, random code points):

1. pieces == the ``regex`` module's ``findall`` with ``adapt_pattern(pattern, reference)``
   (tiktoken families), or == ``tokenizers``' own ``pre_tokenize_str`` pieces
   (DeepSeek-V4 and the Split families);
2. ids: encoding each piece alone with the reference's BPE and concatenating equals the
   reference's encoding of the whole text (tiktoken ``_encode_single_piece``;
   tokenizers ``model.tokenize`` over the ByteLevel-mapped piece);
3. the property tables equal what each reference library reports for every code point.

Corpus size per family: ``TOKSERVE_PRETOK_CHARS`` (default 400,000 characters).
Needs ../shared/artifacts; each case skips naming the missing file.
"""

from __future__ import annotations

import base64
import json
import os
import random
import unicodedata
import zlib
from functools import lru_cache
from pathlib import Path

import pytest
from shared_files import find_shared, shared_file
import regex

_scan = pytest.importorskip("tokserve.pre_tokenizers._scan",
                            reason="tokserve.pre_tokenizers._scan is not built")
from tokserve import patterns  # noqa: E402
from tokserve.unicode_compat import adapt_pattern, category_ranges  # noqa: E402

CORPUS_CHARS = int(os.environ.get("TOKSERVE_PRETOK_CHARS", "400000"))

TIKTOKEN_FAMILIES = {
    "cl100k_base": (_scan.CL100K, patterns.CL100K.text, "openai/cl100k_base.tiktoken"),
    "o200k_base": (_scan.O200K, patterns.O200K.text, "openai/o200k_base.tiktoken"),
    "llama3": (_scan.LLAMA3, patterns.LLAMA3.text, "meta-llama3/tokenizer.model"),
    "qwen": (_scan.QWEN, patterns.QWEN.text, "qwen/qwen.tiktoken"),
    "tekken": (_scan.TEKKEN, patterns.TEKKEN.text, "mistral-tekken/tekken_240718.json"),
}


def _need(rel: str) -> Path:
    return shared_file(f"artifacts/{rel}")


# ---------------------------------------------------------------- corpus

SCRIPTS = [
    "The quick brown fox jumps over the lazy dog. Don't stop; we'll see.",
    "Ελληνικά: Σίσυφος ΣΊΣΥΦΟΣ ς σ.", "Русский текст: Съешь же ещё этих мягких булок!",
    "العربية: مرحبا بالعالم ١٢٣٤٥٦ ۱۲۳۴", "עברית: שָׁלוֹם עוֹלָם", "हिन्दी: नमस्ते दुनिया १२३४",
    "বাংলা: ০১২৩৪৫ আমার", "தமிழ்: வணக்கம் ௧௨௩", "ไทย: สวัสดีชาวโลก ๑๒๓", "ລາວ ສະບາຍດີ",
    "ქართული ენა", "Հայերեն լեզու", "ᐃᓄᒃᑎᑐᑦ", "ትግርኛ ኣማርኛ", "ᠮᠣᠩᠭᠣᠯ", "ཀ་ཁ་ག་",
    "中文：你好，世界！我们在2024年。", "日本語：こんにちは、世界。カタカナ・ひらがな゛゜ー〇",
    "한국어: 안녕하세요 세계 ㄱㄴㄷ", "Tiếng Việt: Xin chào thế giới", "Ǆǅǆ ǈ ᾈ ᾼ ʰʲ ˀ ª º",
    "Ⅻ ⅻ ½ ¾ ² ³ ① ⑳ 𝟘𝟙 ꧑꧒ ᠑᠒ 𐒠𐒡 𑁦𑁧", "math: ∑∫√∞ ≤≥ ≠ → ⇒ ∀x∈ℝ", "$100 €20 £3 ¥4 ₹5 ₿",
    "emoji: 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷 #️⃣ 🧑🏿‍💻", "def f(x):\n    return x**2  # comment\n\n",
    "if (a && b) { c->d[i] = 0x1F; }\r\n", "# Title\n\n* item **bold** _it_ `code`\n> quote\n",
    "https://example.com/path?q=1&r=2#frag /usr/bin/env", "e\u0301 a\u0308 \u1100\u1161\u11a8 n\u0303",
    "\u00adsoft\u200bzw\u200cnj\u200dj\u2060wj\ufeffbom", "\U0001d400\U0001d41a \U00010400\U00010428",
]
NEW_CHARS = {  # characters added in each version (letters, digits, marks, symbols)
    "15.0": "\U0001e4d0\U0001e4d1\U0001e4f0\U0001e4eb\U00011f04\U00011f50\U0001e030\U0001fa75\U00031350",
    "15.1": "\U0002ebf0\U0002ebf1\U0002ee5d\u2ffc\u31ef",
    "16.0": "\U00010d4a\U00010d50\U00010d40\U00016100\U00016130\U0001e5d0\U0001e5f1\U000105c0\U0001cc00\U00011bc0\U0001fa89",
    "17.0": "\U000323b0\U000323b1\U00010ec5\U0001e6c0\U00016ea0\U00011db0\U0001faea\u0295",
}
WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000"
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'rE", "'M",
                "'LL", "'lL", "'D", "'ſ", "'x", "'", "''", "'ss", "'\u212a", "\u2019s", "'ﬅ", "'Ss"]
DIGITS = "0123456789٠١٢٣٤٥٦٧٨٩۰۱۲०१२३০১২੦੧૦૧୦୧௦௧౦౧೦೧൦൧๐๑໐໑༠༡၀၁០១᠐᠑０１２𝟎𝟏ⅠⅡ²³¼⑴"
MARKS = "\u0300\u0301\u0308\u0327\u0345\u064b\u0903\u093f\u0e31\u20dd\u20e3\u3099\u309a\ufe0f\U0001f3fb"


def _random_cp(rng: random.Random) -> str:
    while True:
        c = rng.choice([rng.randrange(0x80, 0x800), rng.randrange(0x800, 0x10000),
                        rng.randrange(0x10000, 0x40000), rng.randrange(0xE0000, 0xE0080),
                        rng.randrange(0, 0x80)])
        if not 0xD800 <= c < 0xE000:
            return chr(c)


def _fragment(rng: random.Random) -> str:
    kind = rng.randrange(12)
    if kind == 0:
        return rng.choice(SCRIPTS)
    if kind == 1:
        return "".join(rng.choice(WHITESPACE) for _ in range(rng.choice([1, 2, 3, 5, 17, 80])))
    if kind == 2:
        word = "".join(rng.choice("abcXYZ") for _ in range(rng.randint(0, 4)))
        return word + rng.choice(CONTRACTIONS) + rng.choice(["", " ", "x", "X", "ÿ", "1", "\n"])
    if kind == 3:
        return "".join(rng.choice(DIGITS) for _ in range(rng.randint(1, 9)))
    if kind == 4:
        return rng.choice("aAéÉ ") + "".join(rng.choice(MARKS) for _ in range(rng.randint(1, 3)))
    if kind == 5:
        return "".join(rng.choice(rng.choice(list(NEW_CHARS.values()))) for _ in range(rng.randint(1, 4)))
    if kind == 6:
        return "".join(_random_cp(rng) for _ in range(rng.randint(1, 12)))
    if kind == 7:
        return unicodedata.normalize(rng.choice(["NFD", "NFKD"]), rng.choice(SCRIPTS))
    if kind == 8:
        return "".join(rng.choice("!?.,;:/\\\"'()[]{}<>@#$%^&*-_=+~`|") for _ in range(rng.randint(1, 5)))
    if kind == 9:  # camel case, all caps, title case mixes (o200k's two word alternatives)
        return "".join(rng.choice(["Camel", "CASE", "word", "ǅx", "ʰa", "Aʰ", "A\u0301", "日本",
                                   "É", "ß", "İ", "x"]) for _ in range(rng.randint(1, 4)))
    if kind == 10:
        return base64.b64encode(rng.randbytes(rng.randint(1, 40))).decode()
    return "".join(rng.choice(WHITESPACE + "ab1.'日\u0301") for _ in range(rng.randint(1, 10)))


def build_corpus(seed: int, chars: int) -> list[str]:
    """Seeded documents of 1..~600 characters, ``chars`` characters in all."""
    rng = random.Random(seed)
    docs, total = [], 0
    while total < chars:
        doc = "".join(_fragment(rng) for _ in range(rng.randint(1, 30)))
        docs.append(doc)
        total += len(doc)
    return docs


# ---------------------------------------------------------------- references


@lru_cache(maxsize=None)
def _ranks(name: str) -> dict[bytes, int]:
    path = _need(TIKTOKEN_FAMILIES[name][2])
    if path.suffix == ".json":  # tekken: the vocab list with base64 bytes and ranks
        vocab = json.loads(path.read_text())["vocab"]
        return {base64.b64decode(v["token_bytes"]): v["rank"] for v in vocab}
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    return ranks


@lru_cache(maxsize=None)
def _tiktoken(name: str):
    tiktoken = pytest.importorskip("tiktoken")
    _, pattern, _ = TIKTOKEN_FAMILIES[name]
    return tiktoken.Encoding(f"test-{name}", pat_str=pattern, mergeable_ranks=_ranks(name),
                             special_tokens={})


@lru_cache(maxsize=None)
def _deepseek():
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(_need("deepseek-v4/tokenizer.json")))


def _ref_pieces(pre_tokenizer, text: str) -> list[str]:
    return [text[a:b] for _, (a, b) in pre_tokenizer.pre_tokenize_str(text)]


# ---------------------------------------------------------------- tests


def test_reference_unicode_tables():
    """Our property bits equal what tiktoken and tokenizers report for every code point."""
    tiktoken = pytest.importorskip("tiktoken")
    tokenizers = pytest.importorskip("tokenizers")
    scalars = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    text = "".join(map(chr, scalars))
    enc_ranks = {bytes([i]): i for i in range(256)}
    checks = {r"\p{L}": 7, r"\p{Ll}": 2, r"\p{M}": 8, r"\p{N}": 16, r"\s": 32, r"\p{P}": 64,
              r"\p{S}": 128}
    for reference in ("tiktoken", "tokenizers"):
        bits = _scan.property_bits(reference)
        for prop, mask in checks.items():
            if reference == "tiktoken":
                enc = tiktoken.Encoding("probe", pat_str=prop, mergeable_ranks=enc_ranks,
                                        special_tokens={})
                got = set(map(ord, bytes(enc.encode_ordinary(text)).decode()))
            else:
                split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(prop), "removed")
                rest = "".join(p for p, _ in split.pre_tokenize_str(text))
                got = set(scalars) - set(map(ord, rest))
            want = {c for c in scalars if bits[c] & mask}
            assert got == want, (reference, prop, sorted(got ^ want)[:10])


def test_unicode_versions_are_16():
    """Unicode 16 characters are letters to both references, Unicode 17 ones are not."""
    bits = _scan.property_bits("tiktoken")
    assert bits[0x10D4A] & 7 and bits[0x16100] & 7  # Garay, Gurung Khema: 16.0
    assert not bits[0x323B0] & 7  # CJK Extension J: 17.0
    assert bits[0x0295] == 2  # Ll until Unicode 17
    assert category_ranges("Lo", "tiktoken")[0][0] == 0xAA


@pytest.mark.parametrize("name", sorted(TIKTOKEN_FAMILIES))
def test_family_detection(name):
    family, pattern, _ = TIKTOKEN_FAMILIES[name]
    assert patterns.family_for_pattern(pattern, "tiktoken") == family
    assert patterns.family_for_pre_tokenizer({"type": "Pattern", "pattern": pattern}, "tiktoken") == family
    assert patterns.family_for_pattern(pattern + "|x", "tiktoken") == -1


def test_family_detection_real_files():
    tekken = json.loads(_need("mistral-tekken/tekken_240718.json").read_text())
    assert patterns.family_for_pattern(tekken["config"]["pattern"], "tiktoken") == _scan.TEKKEN
    spec = json.loads(_need("deepseek-v4/tokenizer.json").read_text())["pre_tokenizer"]
    assert patterns.family_for_pre_tokenizer(spec, "tokenizers") == _scan.DEEPSEEK_V4
    assert patterns.family_for_pre_tokenizer(spec, "tiktoken") == -1
    changed = json.loads(json.dumps(spec))
    changed["pretokenizers"][2]["behavior"] = "Removed"
    assert patterns.family_for_pre_tokenizer(changed, "tokenizers") == -1
    # cl100k's `$` means end of line to Oniguruma: not the tiktoken scanner
    assert patterns.family_for_pattern(patterns.CL100K.text, "tokenizers") == -1


@pytest.mark.parametrize("name", sorted(TIKTOKEN_FAMILIES))
def test_pieces_match_adapted_regex(name):
    family, pattern, _ = TIKTOKEN_FAMILIES[name]
    rx = regex.compile(adapt_pattern(pattern, "tiktoken"))
    for doc in build_corpus(zlib.crc32(name.encode()), CORPUS_CHARS // 2):
        assert _scan.split_pieces(family, doc) == rx.findall(doc), doc


@pytest.mark.parametrize("name", sorted(TIKTOKEN_FAMILIES))
def test_ids_match_tiktoken(name):
    family, _, _ = TIKTOKEN_FAMILIES[name]
    enc = _tiktoken(name)
    cache: dict[str, list[int]] = {}
    for doc in build_corpus(1000 + (zlib.crc32(name.encode())), CORPUS_CHARS):
        ours: list[int] = []
        for piece in _scan.split_pieces(family, doc):
            ids = cache.get(piece)
            if ids is None:
                ids = cache[piece] = enc._encode_single_piece(piece)
            ours += ids
        assert ours == enc.encode_ordinary(doc), doc


@pytest.mark.parametrize("name", ["llama3", "qwen", "o200k_base", "tekken"])
def test_split_families_match_tokenizers(name):
    """The same patterns as a tokenizers Split(Isolated) (Oniguruma) give the same pieces."""
    tokenizers = pytest.importorskip("tokenizers")
    family, pattern, _ = TIKTOKEN_FAMILIES[name]
    assert patterns.family_for_pattern(pattern, "tokenizers") == family
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), "isolated")
    for doc in build_corpus(2000 + (zlib.crc32(name.encode())), CORPUS_CHARS // 4):
        assert _scan.split_pieces(family, doc) == _ref_pieces(split, doc), doc


def test_deepseek_v4_pieces_match_tokenizers():
    tok = _deepseek()
    for doc in build_corpus(31337, CORPUS_CHARS):
        assert _scan.split_pieces(_scan.DEEPSEEK_V4, doc) == _ref_pieces(tok.pre_tokenizer, doc), doc


def test_deepseek_v4_ids_match_tokenizers():
    """Each piece through ByteLevel + the BPE model alone, concatenated == the full encode."""
    tok = _deepseek()
    byte_level = _byte_level_map()
    cache: dict[str, list[int]] = {}
    for doc in build_corpus(4242, CORPUS_CHARS // 2):
        ours: list[int] = []
        for piece in _scan.split_pieces(_scan.DEEPSEEK_V4, doc):
            ids = cache.get(piece)
            if ids is None:
                mapped = "".join(byte_level[b] for b in piece.encode())
                ids = cache[piece] = [t.id for t in tok.model.tokenize(mapped)]
            ours += ids
        assert ours == tok.encode(doc, add_special_tokens=False).ids, doc


def _byte_level_map() -> list[str]:
    """GPT-2's byte -> printable character table (a fact of the ByteLevel format)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


@pytest.mark.parametrize("family", range(6))
@pytest.mark.parametrize("text", [" " * 100_000, "a" * 100_000, "A\u0301" * 30_000,
                                  "\n \n" * 30_000, "1" * 100_000, "日" * 50_000,
                                  "\u0301" * 50_000, "'" * 100_000])
def test_pathological_inputs_cover_text(family, text):
    """Long runs split into pieces that cover the text (linear-time by construction)."""
    ends = _scan.piece_ends(family, text.encode())
    assert ends[-1] == len(text.encode()) and all(b > a for a, b in zip([0, *ends], ends))


@pytest.mark.parametrize("family", range(6))
def test_invalid_utf8_never_overruns(family):
    for data in [b"\xff", b"a\xc3", b"\xe6\x97", b" \xf0\x9f\x98", b"\x80\x80 x", b"'\xc5"]:
        ends = _scan.piece_ends(family, data)
        assert ends[-1] == len(data)


def test_adapt_pattern_anchors_and_classes():
    assert adapt_pattern(r"\s+$", "tiktoken").endswith(r"\Z")
    assert adapt_pattern(r"^a$", "tokenizers") == "(?m:^)a(?m:$)"
    assert adapt_pattern(r"[$]", "tiktoken") == "[$]"
    rx = regex.compile(adapt_pattern(r"\p{L}+", "tiktoken"))
    assert rx.fullmatch("\U00010d4a") and not rx.fullmatch("\U000323b0")
    assert regex.compile(adapt_pattern(r"[^\p{L}]", "tokenizers")).fullmatch("\U000323b0")
    assert regex.compile(adapt_pattern(r"\P{N}", "tiktoken")).fullmatch("a")
    assert regex.compile(adapt_pattern(r"\p{Ll}", "tiktoken")).fullmatch("\u0295")
    assert not regex.compile(adapt_pattern(r"\p{Lo}", "tiktoken")).fullmatch("\u0295")


_TRICKY = ("aZé ſK'sStTlLrReEvVmMdD\t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000!/.,1٣²Ⅻ\u0301\u0300"
           "ʰǅ日の・ー゛\u3040\u0295\U000323b0\U00010d4a\u200d\U0001f600\x00\x01\ue000")


def test_hypothesis_tricky_alphabet():
    """Short texts over the characters where the alternatives interact."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    rxs = {family: regex.compile(adapt_pattern(pattern, "tiktoken"))
           for family, pattern, _ in TIKTOKEN_FAMILIES.values()}
    ds = _deepseek().pre_tokenizer if find_shared("artifacts/deepseek-v4/tokenizer.json") else None

    @hypothesis.settings(max_examples=int(os.environ.get("TOKSERVE_HYPOTHESIS_MAX_EXAMPLES", "300")),
                         deadline=None)
    @hypothesis.given(st.text(alphabet=st.sampled_from(_TRICKY), max_size=24))
    def check(text):
        for family, rx in rxs.items():
            assert _scan.split_pieces(family, text) == rx.findall(text)
        if ds is not None:
            assert _scan.split_pieces(_scan.DEEPSEEK_V4, text) == _ref_pieces(ds, text)

    check()


# Letters weighted six to one against their ASCII neighbours (@ [ ` {), non-ASCII letters,
# a combining mark and the characters that end a word run.
_LETTER_RUNS = list("azAZmQ" * 6 + "@[`{\x7f\x80éÉʰǅ日 1'\u0301\n")


def test_hypothesis_long_letter_runs():
    """Word runs longer than eight bytes, which the scanners test eight ASCII bytes at a
    time: a run must stop exactly where the regex stops, at an ASCII neighbour of the
    letter ranges or at a non-ASCII character it does or does not take."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    rxs = {family: regex.compile(adapt_pattern(pattern, "tiktoken"))
           for family, pattern, _ in TIKTOKEN_FAMILIES.values()}

    @hypothesis.settings(max_examples=int(os.environ.get("TOKSERVE_HYPOTHESIS_MAX_EXAMPLES", "300")),
                         deadline=None)
    @hypothesis.given(st.text(alphabet=st.sampled_from(_LETTER_RUNS), max_size=80))
    def check(text):
        for family, rx in rxs.items():
            assert _scan.split_pieces(family, text) == rx.findall(text)

    check()


def test_every_preset_runs_on_the_scanner_its_pattern_defines():
    """Each preset's pattern is a definition of patterns.py, and a tokenizer built from
    it gets exactly the scanner family that definition names (the regex fallback when
    it names none); so do the bundled artifacts."""
    import tokserve
    from tokserve.pre_tokenizers.pre_tokenizer import PreTokenizer
    from tokserve.presets import PRESETS

    by_text = {p.text: p for p in patterns.PATTERNS}
    for name, preset in PRESETS.items():
        definition = by_text[preset.pattern]
        pre = PreTokenizer({"type": "Pattern", "pattern": preset.pattern}, "tiktoken")
        assert pre.family == definition.family, name
        assert definition.family < 0 or "tiktoken" in definition.references
    compiled = set()
    for name in tokserve.bundled_names():
        tok = tokserve.load(name)
        if tok.artifact.is_pieces:  # SentencePiece family: no pattern scanner at all
            assert tok.pre_tokenizer_backend == "pieces", name
            continue
        preset = PRESETS.get(tok.artifact.manifest.get("preset") or "")
        family = by_text[preset.pattern].family if preset else 0  # tokenizer.json: compiled
        assert tok.pre_tokenizer_backend == ("compiled" if family >= 0 else "regex"), name
        if family >= 0:
            compiled.add(name)
    # what is billed today runs on the compiled scanners (the GPT-2-era ones on `regex`)
    assert {"o200k_base", "cl100k_base", "o200k_harmony", "deepseek-v4"} <= compiled


@pytest.mark.parametrize("spec", [
    None, "Pattern", {}, {"type": 3}, {"type": "Pattern"}, {"type": "Pattern", "pattern": 1},
    {"type": "Sequence"}, {"type": "Sequence", "pretokenizers": [1]},
    {"type": "Sequence", "pretokenizers": [{"type": "Split"}]},
    {"type": "Split", "pattern": "x"}, {"type": "Split", "pattern": {"Regex": 1}},
    {"type": "Split", "pattern": {"Regex": "a", "String": "b"}},
])
def test_malformed_pre_tokenizer_spec_raises(spec):
    import tokserve
    from tokserve.pre_tokenizers.pre_tokenizer import PreTokenizer

    with pytest.raises(tokserve.ArtifactError, match="pre_tokenizer"):
        PreTokenizer(spec, "tokenizers")
