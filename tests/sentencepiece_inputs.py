"""What the SentencePiece tests share: texts, tiny trained models, hand-built protos.

* ``texts()``: several hundred texts (every family of the differential corpus, code,
  whitespace runs at the start, the end and doubled, newlines and tabs, ``▁`` itself,
  digits, emoji, rare scripts that need byte fallback), none holding a control literal;
* ``train(**options)``: a SentencePiece model trained in memory on a small multilingual
  corpus (well under a second), as the bytes of its ``.model``;
* ``model_proto(...)``: a ``.model`` written field by field (a protobuf encoder of a few
  lines), for the shapes no trainer makes (UNUSED pieces, denormalizer rules, ...).
"""

from __future__ import annotations

import functools
import io
import random
import struct

from corpus import _families, is_valid_text  # the seeded families build_corpus starts from
from corpus.builders import code_cases, markdown_cases
from corpus.scripts import SENTENCES

SPACE = "\u2581"
#: texts aimed at the normalizer: the dummy prefix, whitespace handling, ``▁`` itself
EDGES = ["", " ", "  ", "\n", "\t", "a", " a", "a ", " a ", "  a  b  ", "a  b", "a\tb",
         "a\nb", "a \n b", "a\n\nb", "\n a", "a \n", " \t\n x \t\n ", SPACE, SPACE * 3,
         f"{SPACE}a", f"a{SPACE}", f"a {SPACE}b", f" {SPACE} ", f"{SPACE} {SPACE}",
         f"x{SPACE}{SPACE}y", "Hello world", "Hello  world ", "  Hello world",
         "12345 6789 0", "3.14159", "👍🏽 e\u0301", "東京タワー", "x\u0085y", "a\u3000\u3000b",
         "\u3000a", "a\u00a0", "ｆｕｌｌｗｉｄｔｈ", "ﬁne", "Ⅻ", "𐐷𐑌", "\U000e0041", "\x00x",
         "def f(x):\n    return x ** 2\n", "    indented\n\tand tabs\t\n"]
LITERAL_MARKERS = ("<s>", "</s>", "<unk>", "<pad>", "[INST]", "[/INST]", "<0x", "[TOOL",
                   "[AVAILABLE", "[control", "<ctl>", "[X]")


@functools.lru_cache(maxsize=1)
def texts() -> tuple[str, ...]:
    """Several hundred texts, each under 3,000 characters (the corpus' long cases are cut)."""
    rng = random.Random(30)
    picked = list(EDGES)
    for label, text in _families(random.Random(20240531)):
        family = label.split("/")[0]
        keep = family in ("sentence", "script", "code", "markdown", "long") or rng.random() < 0.06
        if keep and is_valid_text(text):
            picked.append(text[:3000])
    return tuple(t for t in picked if not any(m in t for m in LITERAL_MARKERS))


def training_lines() -> list[str]:
    rng = random.Random(5)
    lines = list(SENTENCES)
    for _, text in code_cases(rng, max_bytes=60_000) + markdown_cases(rng):
        lines += [line for line in text.split("\n") if line.strip()][:40]
    return lines[:900]


@functools.cache
def _train(options: tuple[tuple[str, object], ...]) -> bytes:
    import sentencepiece as spm

    kw = dict(vocab_size=800, character_coverage=0.995, num_threads=1, minloglevel=2)
    kw.update((k, ",".join(v) if isinstance(v, tuple) else v) for k, v in options)
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(training_lines()), model_writer=out,
                                   **kw)
    return out.getvalue()


def train(**options: object) -> bytes:
    """A model trained on ``training_lines()`` with these trainer options (cached)."""
    return _train(tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                               for k, v in options.items())))


# ---------------------------------------------------------------- a protobuf encoder


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: float | bytes | str) -> bytes:
    """One field: an int as a varint, a float as fixed32, bytes/str length-delimited."""
    if isinstance(value, (bool, int)):
        return varint(number << 3) + varint(int(value))
    if isinstance(value, float):
        return varint(number << 3 | 5) + struct.pack("<f", value)
    data = value.encode("utf-8") if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def piece(text: str, score: float = 0.0, kind: int | None = None) -> bytes:
    body = field(1, text) + field(2, float(score)) + (field(3, kind) if kind else b"")
    return field(1, body)


def model_proto(pieces: list[tuple[str, float, int]], *, model_type: int = 2,
                byte_fallback: bool = False, normalizer: bytes | None = None,
                extra: bytes = b"") -> bytes:
    """A ``.model``: ``pieces`` as (text, score, type), a trainer spec, an identity
    normalizer (dummy prefix, no whitespace removal) unless ``normalizer`` is given."""
    trainer = field(3, model_type) + (field(35, True) if byte_fallback else b"")
    if normalizer is None:
        normalizer = field(1, "identity") + field(3, True) + field(4, False)
    return (b"".join(piece(t, s, k) for t, s, k in pieces) + field(2, trainer)
            + field(3, normalizer) + extra)


def bpe_pieces(words: list[str]) -> list[tuple[str, float, int]]:
    """<unk>, <s>, </s>, then every character of ``words`` and the words' prefixes as
    NORMAL pieces, longer ones scoring lower (as BPE training leaves them)."""
    out = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    seen = {t for t, _, _ in out}
    chars = sorted({c for w in words for c in w})
    grams = [w[:k] for w in words for k in range(2, len(w) + 1)]
    for i, text in enumerate(dict.fromkeys(grams)):
        if text not in seen:
            out.append((text, -float(i), 1))
            seen.add(text)
    out += [(c, -1000.0 - i, 1) for i, c in enumerate(chars) if c not in seen]
    return out
