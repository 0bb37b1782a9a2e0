"""The corpus for the SentencePiece-family ("piece") tokenizers: seeded, in memory.

Llama 2, TinyLlama, Phi-3, Mistral, Gemma, Yi (byte-fallback BPE over pieces) and T5
(Unigram) fail in other places than byte-level BPE does, so their corpus aims elsewhere:

* the normalizer turns every space into ``▁`` and (Llama, Mistral, Phi-3) prepends one,
  so spaces at the start, the end, doubled, next to newlines and tabs, and ``▁`` itself
  in the text (alone, in runs, beside spaces) are where ids and offsets go wrong;
* with no pre-tokenizer the whole text between two special tokens is ONE merge
  sequence, so long texts and long runs matter;
* characters with no piece become ``<0xNN>`` byte tokens (rare and recent scripts,
  astral planes, private use, controls), or ``<unk>`` for T5; decode joins the bytes back;
* T5's ``Precompiled`` normalizer is NFKC plus SentencePiece's own rules: fullwidth forms,
  ligatures, combining sequences, control and format characters;
* special-token literals are matched before or after normalization depending on the
  token's ``normalized``/``lstrip``/``rstrip`` flags: every family's literals appear at
  the start, middle and end of texts, with and without spaces around, in every
  tokenizer's corpus (a tokenizer that lacks a literal must read it as plain text).

``build_piece_corpus()`` returns ``Case(label, text)`` tuples (several hundred texts, a
few of them tens of KB); labels are unique and every text is valid UTF-8. Texts whose
label starts with ``literal/`` are built around ``LITERALS``; ``ordinary(cases,
literals)`` keeps the others that hold none of the given literals (what sentencepiece,
which never matches special tokens in text, is compared on). The same seed gives the
same corpus.
"""

from __future__ import annotations

import functools
import random

from . import Case, utf8_size
from .builders import (
    WORDS,
    code_cases,
    control_cases,
    digit_cases,
    emoji_cases,
    literal_cases,
    markdown_cases,
    normalization_cases,
)
from .scripts import SCRIPTS, SENTENCES, script_text
from .unicode_ranges import RECENT

__all__ = ["CORE_LITERALS", "LITERALS", "build_piece_corpus", "ordinary", "own_literal_cases"]

DEFAULT_SEED = 20250301
META = "\u2581"  # ▁, SentencePiece's space

#: the literals the acceptance names, one per family at least (matched by every template)
CORE_LITERALS = ["<s>", "</s>", "<unk>", "[INST]", "[/INST]", "<|user|>", "<|endoftext|>",
                 "<start_of_turn>", "<extra_id_0>", "<table>"]

#: every family's special and added literals worth a text of their own
LITERALS = CORE_LITERALS + [
    "<pad>", "<bos>", "<eos>", "<mask>", "[multimodal]", "<unused0>", "<unused98>",
    "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>",
    "</table>", "<tr>", "<td>", "</td>", "<b>", "</b>", "<code>", "<div>",
    "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[control_8]", "[control_768]",
    "<|assistant|>", "<|system|>", "<|end|>", "<|placeholder1|>", "<|startoftext|>",
    "<extra_id_1>", "<extra_id_50>", "<extra_id_99>", "<extra_id_100>",
]

#: where a literal sits in a text: start, middle, end, with and without spaces around
TEMPLATES = ["{L}", "{L}hello", "hello{L}", "hello {L} world", "hello{L}world", " {L} ", "{L} ",
             " {L}", "{L}{L}", "{L} {L}", "{L}\n", "\n{L}", "a{L}  b", "a  {L}b", "{L}  two",
             META + "{L}" + META, "x" + META + "{L}", "{L}\t\tindented", "日本{L}語", "{L}" * 3 + " ",
             "{L}\n\n\n{L}", "  {L}  "]

#: conversations in each family's instruct format (the literals in real use)
CHATS = [
    "<s>[INST] What is 2+2? [/INST] 4</s>[INST] And 3+3? [/INST]",
    "[INST] Bonjour ! [/INST] Salut.</s> [INST]  two spaces [/INST]",
    ("[AVAILABLE_TOOLS] [{\"type\": \"function\"}][/AVAILABLE_TOOLS][INST] go [/INST]"
     "[TOOL_CALLS] [{\"name\": \"f\"}]</s>[TOOL_RESULTS] {\"x\": 1}[/TOOL_RESULTS]"),
    "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi!<|end|>\n",
    "<|user|>  spaces after<|end|><|assistant|>\n\nok<|endoftext|>",
    ("<bos><start_of_turn>user\nWrite a table<end_of_turn>\n<start_of_turn>model\n"
     "<table><tr><td>1</td></tr></table><end_of_turn>\n"),
    "<start_of_turn>user\n<start_of_image><image_soft_token><end_of_image>what?<end_of_turn>",
    "<|startoftext|>Hi there<|endoftext|><|startoftext|> again",
    "The <extra_id_0> walks in <extra_id_1> park.</s>",
    "<extra_id_0> cute dog <extra_id_1> the <extra_id_2></s>",
]

#: whitespace that matters to Metaspace, Replace and Strip
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\n ", "\t ", " \t", "\u3000",
          "\xa0", "\u2009", "\u200b", "\x0b", "\x0c"]


def _space_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = [("space/empty", ""), ("space/one", " "), ("space/two", "  "), ("space/a", "a"),
             ("space/lead", " a"), ("space/trail", "a "), ("space/both", " a "),
             ("space/lead2", "  a"), ("space/trail2", "a  "), ("space/double", "a  b"),
             ("space/triple", "a   b"), ("space/words", "a b c d e"),
             ("space/lone-between-punct", ". , ; : ! ?"), ("space/crlf", "a\r\nb\r\n\r\nc\r\n"),
             ("space/cr", "a\rb\r"), ("space/tab-only", "\t"), ("space/newline-only", "\n"),
             ("space/indent", "def f():\n    return 1\n\n\tx = 2\n"),
             ("space/trailing-lines", "line one   \nline two\t\n  \nend  ")]
    for n in (1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 64):
        cases.append((f"space/x{n}/lead", " " * n + "word"))
        cases.append((f"space/x{n}/trail", "word" + " " * n))
        cases.append((f"space/x{n}/between", "left" + " " * n + "right"))
        cases.append((f"space/x{n}/alone", " " * n))
    for ws, name in (("\n", "nl"), ("\t", "tab"), ("\r\n", "crlf")):
        for n in (1, 2, 3, 7, 30, 31, 32, 33, 40):
            run = ws * n
            cases.append((f"space/{name}{n}", f"a{run}b {run} c{run}"))
            cases.append((f"space/{name}{n}/edges", f"{run}x{run}"))
    for k in range(40):
        run = "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 12)))
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        text = [f"{a}{run}{b}", f"{run}{a}", f"{a}{run}", run, f"{run}{a} {b}{run}"][k % 5]
        cases.append((f"space/mixed/{k}", text))
    return cases


def _meta_cases(rng: random.Random) -> list[tuple[str, str]]:
    m = META
    cases = [("meta/one", m), ("meta/two", m * 2), ("meta/word", m + "Hello"),
             ("meta/after", "Hello" + m), ("meta/inside", f"hello{m}world"),
             ("meta/space-then", f" {m}"), ("meta/then-space", f"{m} "),
             ("meta/spaced", f"a {m} b"), ("meta/runs-spaces", f"{m}{m} {m}{m}  {m}"),
             ("meta/newline", f"{m}\n{m}"), ("meta/fullwidth-lowline", "＿ _ __ ▁_▁"),
             ("meta/lookalikes", "▁ ▂ ▃ _ ‗ ⁀ ︳ ﹍ ＿"), ("meta/in-code", f"x = '{m}'  # {m}{m}")]
    for n in (3, 4, 7, 16, 30, 31, 32, 33, 100):
        cases.append((f"meta/x{n}", m * n))
        cases.append((f"meta/x{n}/word", f"{m * n}word{m * n}"))
    for k in range(20):
        text = "".join(rng.choice([m, " ", "a", "▁a", "\n", "ab", "日"]) for _ in range(rng.randint(2, 30)))
        cases.append((f"meta/rand/{k}", text))
    return cases


def _script_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = [(f"script/sentence/{i}", s) for i, s in enumerate(SENTENCES)]
    for script in SCRIPTS:
        cases.append((f"script/{script}", script_text(rng, script, rng.randint(5, 60))))
    names = list(SCRIPTS)
    for k in range(10):
        parts = [script_text(rng, rng.choice(names), rng.randint(1, 6)) for _ in range(6)]
        cases.append((f"script/mixed/{k}", rng.choice(["", " ", "\n", "  "]).join(parts)))
    return cases


def _fallback_text(rng: random.Random, ranges: list[tuple[int, int]], n: int) -> str:
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(n))


#: code points the vocabularies lack: byte fallback (<0xNN>) or <unk> (T5)
RARE = {
    "recent": list(RECENT.values()),
    "historic": [(0x10330, 0x1034A), (0x10000, 0x1004D), (0x12000, 0x12399), (0x13000, 0x1342E),
                 (0x10A00, 0x10A03), (0x11000, 0x1104D), (0x1E800, 0x1E8C4)],
    "astral": [(0x1D400, 0x1D6A5), (0x1F300, 0x1F5FF), (0x20000, 0x2A6DF), (0x1F0A0, 0x1F0F5)],
    "private": [(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)],
    "unassigned": [(0x0378, 0x0379), (0x2FE0, 0x2FEF), (0x1FFFE, 0x1FFFF), (0xFDD0, 0xFDEF),
                   (0x2FFFE, 0x2FFFF), (0xE0080, 0xE00FF)],
    "specials": [(0xFFF9, 0xFFFD), (0xFEFF, 0xFEFF), (0xE0001, 0xE007F), (0xFE00, 0xFE0F)],
}


def _fallback_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = []
    for kind, ranges in RARE.items():
        for k in range(6):
            run = _fallback_text(rng, ranges, rng.randint(1, 12))
            shape = [run, f"a{run}b", f" {run} ", f"{run}{run}", f"word {run}\n{run}word",
                     f"{META}{run}{META}"][k]
            cases.append((f"fallback/{kind}/{k}", shape))
        cases.append((f"fallback/{kind}/run", _fallback_text(rng, ranges, 300)))
    for k in range(15):  # rare characters among ordinary words, as in real text
        parts = []
        for _ in range(rng.randint(3, 20)):
            parts.append(rng.choice(WORDS) if rng.random() < 0.6 else
                         _fallback_text(rng, rng.choice(list(RARE.values())), rng.randint(1, 4)))
        cases.append((f"fallback/mixed/{k}", rng.choice([" ", "", "\n"]).join(parts)))
    return cases


def _combining_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = [("combining/stack", "e" + "\u0301\u0300\u0302\u0308" * 5 + " o\u0338"),
             ("combining/alone-start", "\u0301abc \u0308"), ("combining/after-space", "a \u0301b"),
             ("combining/hangul-jamo", "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af"),
             ("combining/devanagari", "क्षत्रिय स्त्री ज्ञ"),
             ("combining/arabic-harakat", "بِسْمِ ٱللَّٰهِ"),
             ("combining/emoji-keycap", "1\ufe0f\u20e3 #\u20e3 a\u20dd")]
    cases += rng.sample(normalization_cases(rng), 20)
    return cases


def _fullwidth_cases(rng: random.Random) -> list[tuple[str, str]]:
    full = "".join(chr(c) for c in range(0xFF01, 0xFF5F))
    half_kana = "".join(chr(c) for c in range(0xFF61, 0xFFA0))
    cases = [("fullwidth/ascii", full), ("fullwidth/halfwidth-kana", half_kana),
             ("fullwidth/sentence", "Ｈｅｌｌｏ，　ｗｏｒｌｄ！　１２３　ＡＢＣ"),
             ("fullwidth/compat", "ﬁ ﬂ ﬀ ﬃ ① ⑳ ㍿ ㌀ ㎏ ™ ℡ Ⅻ ½ ² ³ ᵃ ₐ ﹏ ︵ ｶﾞｷﾞ"),
             ("fullwidth/ideographic-space", "日本\u3000語\u3000\u3000です"),
             ("fullwidth/mixed-digits", "ＩＤ：１２３４５　ｖ２．０ １２3４")]
    for k in range(8):
        cases.append((f"fullwidth/rand/{k}", "".join(
            chr(rng.randint(0xFF01, 0xFFEE)) if rng.random() < 0.7 else rng.choice(" a1")
            for _ in range(rng.randint(5, 60)))))
    return cases


def _literal_cases(rng: random.Random) -> list[tuple[str, str]]:
    cases = []
    for lit in LITERALS:
        chosen = TEMPLATES if lit in CORE_LITERALS else rng.sample(TEMPLATES, 6)
        for i, template in enumerate(chosen):
            cases.append((f"literal/{lit}/{i}", template.replace("{L}", lit)))
    cases += [(f"literal/chat/{i}", c) for i, c in enumerate(CHATS)]
    cases += [(label.replace("literal/", "literal/rand/", 1), text)
              for label, text in literal_cases(rng, LITERALS, 60)]
    # Gemma 3's added runs of \n, \t and ▁ (1-31; 32 and more split)
    for unit, name in (("\n", "nl"), ("\t", "tab"), (META, "meta")):
        for n in (1, 2, 31, 32, 63):
            cases.append((f"literal/run-{name}{n}", f"a{unit * n}b<table>{unit * n}"))
    return cases


def _sampled(rng: random.Random, cases: list[tuple[str, str]], k: int) -> list[tuple[str, str]]:
    return rng.sample(cases, min(k, len(cases)))


def _long_cases(rng: random.Random, pool: list[str]) -> list[tuple[str, str]]:
    """Tens of KB each: one merge sequence of thousands of symbols for the Llama files."""
    prose = " ".join(rng.choice(SENTENCES) for _ in range(300))
    cjk = "".join(chr(rng.randint(0x4E00, 0x9FFF)) if rng.random() < 0.9 else rng.choice("，。 ")
                  for _ in range(8000))
    fallback = " ".join(_fallback_text(rng, rng.choice(list(RARE.values())), rng.randint(1, 8))
                        for _ in range(2500))
    spaced = "".join(rng.choice(WORDS) + " " * rng.randint(0, 6) + rng.choice(["", "\n", "\t"])
                     for _ in range(4000))
    literal = " ".join(rng.choice(LITERALS) if rng.random() < 0.1 else rng.choice(WORDS)
                       for _ in range(5000))
    mixed = "\n".join(rng.sample(pool, 60))
    return [("long/prose", prose), ("long/cjk", cjk), ("long/fallback", fallback),
            ("long/spaced", spaced), ("long/literals", literal), ("long/mixed", mixed[:40000]),
            ("long/no-space-lowercase", "".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                                                for _ in range(12000))),
            ("long/one-letter", "a" * 20000), ("long/spaces", " " * 10000 + "x" + " " * 10000)]


@functools.lru_cache(maxsize=2)
def build_piece_corpus(seed: int = DEFAULT_SEED) -> tuple[Case, ...]:
    """The corpus (several hundred texts, ~0.5 MB): aimed families, mixes, long texts."""
    rng = random.Random(seed)
    cases: list[tuple[str, str]] = []
    cases += _script_cases(rng)
    cases += _space_cases(rng)
    cases += _meta_cases(rng)
    cases += _fallback_cases(rng)
    cases += _combining_cases(rng)
    cases += _fullwidth_cases(rng)
    code = code_cases(rng, max_bytes=10**9)  # all of it: the other languages come last
    cases += [c for c in code if c[0].startswith("code/snippet/")]
    cases += _sampled(rng, [c for c in code if not c[0].startswith("code/snippet/")], 8)
    cases += _sampled(rng, markdown_cases(rng), 16)
    cases += _sampled(rng, digit_cases(rng), 30)
    cases += _sampled(rng, [c for c in emoji_cases(rng) if not c[0].endswith("long")], 30)
    cases += _sampled(rng, control_cases(rng), 20)
    cases += _literal_cases(rng)
    pool = [text for label, text in cases if text and not label.startswith("literal/")]
    for k in range(40):  # documents stitched from the families, as text mixes them
        parts = rng.sample(pool, rng.randint(2, 8))
        sep = rng.choice(["", " ", "\n", "\n\n", "\t", ". ", "\r\n", "  "])
        cases.append((f"mixed/{k}", sep.join(p[: rng.randint(1, 800)] for p in parts)))
    cases += _long_cases(rng, pool)
    out, seen = [], set()
    for label, text in cases:
        if label in seen:
            raise AssertionError(f"duplicate corpus label {label!r}")
        seen.add(label)
        text.encode("utf-8")  # valid UTF-8 only: the references cannot take surrogates
        out.append(Case(label, text))
    return tuple(out)


def ordinary(cases: tuple[Case, ...] | list[Case], literals: list[str] | set[str] = ()
             ) -> list[Case]:
    """The cases that are not built around literals and hold none of ``literals``."""
    lits = [lit for lit in literals if lit]
    return [c for c in cases
            if not c.label.startswith("literal/") and not any(lit in c.text for lit in lits)]


def own_literal_cases(literals: list[str], seed: int = DEFAULT_SEED, count: int = 40
                      ) -> list[Case]:
    """Texts around ONE tokenizer's own added literals (Gemma 3's 6,406, Mistral v0.3's
    control tokens...), whole, partial, doubled, in other case (builders.literal_cases)."""
    rng = random.Random(seed)
    return [Case(f"own-{label}", text) for label, text in literal_cases(rng, literals, count)]


def corpus_size(cases: tuple[Case, ...] | list[Case]) -> int:
    """UTF-8 bytes of ``cases``."""
    return sum(utf8_size(c.text) for c in cases)
