"""The conformance checks, written once and run per tokenizer by the two test modules.

Each check builds its cases (the shared corpus plus this tokenizer's literal texts),
compares ours with the reference through ``diff.compare`` and returns the report; the
test asserts ``report.total_mismatches == 0`` and prints the minimal failing inputs.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from corpus import build_corpus, is_valid_text, literal_cases

from .diff import Report, compare, compare_encode
from .references import Pair, env_int

MAX_EXAMPLES = env_int("TOKSERVE_HYPOTHESIS_MAX_EXAMPLES", 200)


def corpus_with_literals(pair: Pair) -> list[tuple[str, str]]:
    literals = list(pair.ref.literals)
    return list(build_corpus()) + literal_cases(random.Random(7), literals)


def sample(cases: list[tuple[str, str]], every: int) -> list[tuple[str, str]]:
    """Every ``every``-th case plus all literal cases (the ones policies act on)."""
    return [c for i, c in enumerate(cases) if i % every == 0 or c[0].startswith("literal/")]


def check_corpus(pair: Pair, policy: str) -> Report:
    return compare_encode(pair, corpus_with_literals(pair), policy)


def check_add_special_tokens(pair: Pair, policy: str) -> Report:
    return compare_encode(pair, sample(corpus_with_literals(pair), 7), policy,
                          add_special_tokens=True)


def check_roundtrip(pair: Pair) -> Report:
    """decode(encode(x)) == x for valid text, under "text" and "allow"."""
    cases = [c for c in corpus_with_literals(pair) if is_valid_text(c[1])]

    def ours(text: str) -> str:
        return "|".join(pair.ours.decode(pair.ours.encode(text, special_tokens=p))
                        for p in ("text", "allow"))

    return compare(pair.name, "decode(encode(x)) == x", cases,
                   lambda text: f"{text}|{text}", ours)


def check_decode_vs_reference(pair: Pair) -> Report:
    """Ours and the reference decode the same ids (incl. specials) to the same text."""
    cases = sample(corpus_with_literals(pair), 3)

    def ids_of(text: str) -> list[int]:
        return pair.ref.encode(text, "allow")

    def ref(text: str) -> tuple[str, str]:
        ids = ids_of(text)
        return (pair.ref.decode(ids, False), pair.ref.decode(ids, True))

    def ours(text: str) -> tuple[str, str]:
        ids = ids_of(text)
        return (pair.ours.decode(ids), pair.ours.decode(ids, skip_special_tokens=True))

    return compare(pair.name, "decode(ids) and skip_special_tokens", cases, ref, ours)


# ============================================================================ strategies

TRICKY = (
    list(" \t\n\r\x0b\x0c\x85\xa0\u2000\u2028\u3000\u200b\u200d\ufeff")
    + list("'’sStTmMdDlLvVrReEaAzZ")
    + list("0123456789٣३１²½Ⅻ")
    + list(".,;:!?-_/\\\"()[]{}<>|#@$%^&*=+~`")
    + list("éÉßſKıİǅﬁ\u0301\u0308\u093f")
    + list("日本語中文한국어ไทยعربيעבריתрусский")
    + ["😀", "👍🏽", "👨‍👩‍👧", "🇺🇸", "\ufe0f", "\U00031350", "\U000323b0", "\U00010d40", "\U0001e5d0",
       "\U0001fa70", "\U000e0041", "\uffff", "\U0010ffff", "\x00", "\x7f"]
)


def _break_surrogate_pairs(text: str) -> str:
    """Keep lone surrogates lone: a high surrogate directly before a low one would be a
    pair, which tiktoken joins into one astral character (tested on its own)."""
    out: list[str] = []
    for ch in text:
        if out and 0xDC00 <= ord(ch) <= 0xDFFF and 0xD800 <= ord(out[-1]) <= 0xDBFF:
            out.append("x")
        out.append(ch)
    return "".join(out)


any_text = st.text(st.characters(exclude_categories=()), max_size=80).map(_break_surrogate_pairs)
valid_text = st.text(st.characters(), max_size=80)
tricky_text = st.lists(st.sampled_from(TRICKY), max_size=60).map("".join)


def literal_text(literals: list[str]) -> st.SearchStrategy[str]:
    pieces = st.one_of(
        st.sampled_from(sorted(literals)),
        st.sampled_from(sorted(literals)).map(lambda s: s[: len(s) // 2]),
        st.sampled_from(sorted(literals)).map(lambda s: s[len(s) // 2:]),
        st.lists(st.sampled_from(TRICKY), max_size=6).map("".join),
    )
    return st.lists(pieces, max_size=8).map("".join)
