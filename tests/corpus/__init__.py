"""The differential test corpus: seeded, built in memory, no files and no network.

``build_corpus()`` returns ``Case(label, text)`` tuples: first the hand-aimed families
(every major script, whitespace runs, contractions, digit runs, emoji and ZWJ sequences,
NFC/NFD, control characters, code, markdown, very long words, random Unicode including
characters assigned in Unicode 15, 16 and 17), then "mixed documents" stitched from
all of them until the corpus holds ``TOKSERVE_CORPUS_MB`` megabytes of UTF-8 (default 2).

Invariants: the same seed and size give the same corpus; labels are unique; only cases
whose label starts with ``surrogate/`` hold lone surrogates (``is_valid_text``).
``literal_cases(literals)`` builds the texts with special-token literals, per tokenizer.
"""

from __future__ import annotations

import functools
import os
import random
from typing import NamedTuple

from .builders import (
    code_cases,
    contraction_cases,
    control_cases,
    digit_cases,
    emoji_cases,
    is_valid_text,
    literal_cases,
    long_word_cases,
    markdown_cases,
    normalization_cases,
    random_unicode_cases,
    recent_unicode_cases,
    surrogate_cases,
    whitespace_cases,
)
from .scripts import script_cases

__all__ = ["Case", "build_corpus", "corpus_megabytes", "literal_cases", "is_valid_text",
           "utf8_size"]

DEFAULT_SEED = 20240531


class Case(NamedTuple):
    label: str
    text: str


def corpus_megabytes() -> float:
    """``TOKSERVE_CORPUS_MB`` (default 2.0): UTF-8 megabytes per tokenizer."""
    raw = os.environ.get("TOKSERVE_CORPUS_MB", "").strip()
    return float(raw) if raw else 2.0


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _families(rng: random.Random) -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for build in (script_cases, whitespace_cases, contraction_cases, digit_cases, emoji_cases,
                  normalization_cases, control_cases, code_cases, markdown_cases,
                  long_word_cases, random_unicode_cases, recent_unicode_cases, surrogate_cases):
        cases += build(rng)
    return cases


@functools.lru_cache(maxsize=4)
def build_corpus(megabytes: float | None = None, seed: int = DEFAULT_SEED) -> tuple[Case, ...]:
    """The corpus: aimed families first, then mixed documents up to ``megabytes``."""
    target = int((corpus_megabytes() if megabytes is None else megabytes) * 1_000_000)
    rng = random.Random(seed)
    base = _families(rng)
    seen: dict[str, int] = {}
    cases = []
    for label, text in base:
        seen[label] = seen.get(label, 0) + 1
        cases.append(Case(label if seen[label] == 1 else f"{label}#{seen[label]}", text))
    size = sum(utf8_size(c.text) for c in cases)
    valid = [text for label, text in base if not label.startswith(("surrogate/", "long/"))]
    k = 0
    while size < target:
        parts = rng.sample(valid, rng.randint(2, 12))
        sep = rng.choice(["", " ", "\n", "\n\n", "\t", ". ", "\r\n"])
        text = sep.join(p[: rng.randint(1, 3000)] for p in parts)
        cases.append(Case(f"mixed/{k}", text))
        size += utf8_size(text)
        k += 1
    return tuple(cases)
