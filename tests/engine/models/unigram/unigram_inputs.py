"""Inputs shared by the Unigram model tests: T5's file, its reference model, and words.

The words are what the model sees in the T5 pipeline: tokenizers' own normalizer and
pre-tokenizer (Precompiled, WhitespaceSplit, Metaspace) applied to texts from the
differential corpus's hand-aimed families (every script, emoji, normalization, long
words, random Unicode, and markdown, contractions, digits and code for ordinary words),
plus hand-made words that reach the unknown-character rules.
"""

from __future__ import annotations

import functools
import json
import random

from corpus.builders import (code_cases, contraction_cases, digit_cases, emoji_cases,
                             long_word_cases, markdown_cases, normalization_cases,
                             random_unicode_cases)
from corpus.scripts import script_cases
from shared_files import shared_file

T5 = "artifacts/t5-small/tokenizer.json"

#: words that reach <unk> (emoji, CJK, fused runs, the literal "<unk>"), ties and edges
CRAFTED = ["▁", "▁▁", "▁the", "▁Hello", "▁héllo😀😀x世界", "😀", "▁😀", "😀▁", "x😀y",
           "<unk>", "▁<unk>", "x<unk>😀", "😀<unk>😀", "<unk><unk>", "<pad></s>", "▁-------",
           "▁-------------", "▁" + "-" * 40, "▁" + "a" * 300, "世界世界", "▁世a界",
           "▁👨‍👩‍👧‍👦", "▁𝔾𝕠𝕠𝕕", "\u0301", "▁e\u0301", "▁\ufffd", "▁<extra_id_0>",
           "<extra_id_99>x", "▁" + "😀" * 100 + "a", "▁" + "ab" * 200]


@functools.lru_cache(maxsize=1)
def t5_file() -> str:
    return str(shared_file(T5))


@functools.lru_cache(maxsize=1)
def t5_model_dict() -> dict:
    with open(t5_file(), encoding="utf-8") as fh:
        return json.load(fh)["model"]


@functools.lru_cache(maxsize=1)
def t5_reference():
    import tokenizers

    return tokenizers.Tokenizer.from_file(t5_file())


@functools.lru_cache(maxsize=1)
def t5_words() -> tuple[str, ...]:
    """Distinct words, in a fixed order: crafted ones, then the corpus's."""
    ref = t5_reference()
    rng = random.Random(30)
    texts = [text for _, text in script_cases(rng)[:120]]
    texts += [text for _, text in emoji_cases(rng)[:60]]
    texts += [text for _, text in normalization_cases(rng)]
    texts += [text for _, text in random_unicode_cases(rng, count=60)]
    texts += [text[:3000] for _, text in long_word_cases(rng)]
    texts += [text for _, text in markdown_cases(rng)]  # ordinary words: most are known
    texts += [text for _, text in contraction_cases(rng) + digit_cases(rng)]
    texts += [text for _, text in code_cases(rng, max_bytes=60_000)]
    seen = dict.fromkeys(CRAFTED)
    for text in texts:
        normalized = ref.normalizer.normalize_str(text)
        for word, _ in ref.pre_tokenizer.pre_tokenize_str(normalized):
            seen.setdefault(word)
    return tuple(seen)


def reference_tokens(model, word: str) -> tuple[list[int], list[int]]:
    """tokenizers' model.tokenize(word) as (ids, flat byte spans)."""
    tokens = model.tokenize(word)
    return [t.id for t in tokens], [o for t in tokens for o in t.offsets]
