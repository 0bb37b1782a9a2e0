"""``tokserve.Encoding(pat_str=...)`` with a pattern no compiled scanner knows, against
tiktoken: either the ``regex`` fallback gives tiktoken's ids (tiktoken_exactness.py proves the
pattern inside the subset where it does) or the constructor refuses, naming the
construct. Never silently different ids.

Under the tiktoken shim this is ``tiktoken.Encoding`` (tests/engine/test_tiktoken_shim.py).
"""

from __future__ import annotations

import base64
import re

import pytest
import tiktoken

import tokserve
from corpus import build_corpus
from tokserve.errors import UnsupportedArtifact
from tokserve.pre_tokenizers.tiktoken_exactness import check_tiktoken_pattern
from tokserve.patterns import PATTERNS

_EXACT = [
    r"\p{L}+|\p{N}+|[^\p{L}\p{N}]+",
    r"\S+|\s+",
    r"(?i:[a-z]+)|[^a-zA-Z]+|[A-Z]+",
    r"(?i:ks|s)+|\p{Lu}?\p{Ll}+|\p{L}+|\p{N}{1,3}+|[^\p{L}\p{N}]++",
    r"\s++$|\s+(?!\S)|\s|\p{L}++|[^\s\p{L}]++",
    r"(?>\p{L}+)|\p{N}|.|\n",
    r"(?P<word>\p{Lu}\p{Ll}*)|\p{L}+?|[\x00-\x7f]|\P{L}",
    r"(?<=a)b|[^b]|b",
    r"[a-z]?[a-z]|[^a-z]",  # greedy: gives the letter back
    r""" ?[\p{L}\p{M}]+|'(?:s|re)|[0-9]|\d+|[^\s\p{L}\p{M}\d]+|\s""",
]


@pytest.fixture(scope="module")
def r50k_ranks():
    data = (tokserve.bundled_root() / "r50k_base" / "1" / "r50k_base.tiktoken").read_bytes()
    return {base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)}


def _texts() -> list[str]:
    """A quarter of the corpus' aimed families (every script, whitespace runs, digits,
    emoji, controls, recent Unicode; no code files), and what case folding reaches."""
    cases = [case.text for case in build_corpus(0)
             if not case.label.startswith(("code/", "long/"))]
    return cases[::4] + ["KS ks ſ K ſs 'S 'RE", "end \n", "tab\t\x0b\x0c\x85\u2028 x"]


@pytest.mark.parametrize("pattern", _EXACT)
def test_a_pattern_no_scanner_knows_gives_tiktokens_ids_on_the_fallback(pattern, r50k_ranks):
    specials = {"<|endoftext|>": 50256}
    ours = tokserve.Encoding("custom", pat_str=pattern, mergeable_ranks=r50k_ranks,
                             special_tokens=specials)
    theirs = tiktoken.Encoding("custom", pat_str=pattern, mergeable_ranks=r50k_ranks,
                               special_tokens=specials)
    assert ours.tokenizer.pre_tokenizer_backend == "regex"
    texts = _texts()
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)


_REFUSED = [
    (r"\w+|\W+", r"\w"),
    (r"\p{Han}+|\P{Han}", r"\p{Han}"),
    (r"[\p{L}&&\p{Lu}]+|.|\n", "set operations"),
    (r"(?x) a | . | \n", "(?x"),
    (r"[^\P{L}]|.|\n", "negated property inside a class"),
    (r"(?i:é)|.|\n", "non-ASCII"),
    (r"a*|.|\n", "empty string"),
    (r"\p{L}+|\p{N}+", "may not match every character"),
    (r"\S+", "may not match every character"),
    (r"[a-z]?+[a-z]|[^a-z]", "may not match every character"),  # possessive: keeps it
]


@pytest.mark.parametrize(("pattern", "named"), _REFUSED)
def test_a_pattern_the_fallback_cannot_reproduce_is_refused_by_name(pattern, named, r50k_ranks):
    with pytest.raises(UnsupportedArtifact, match=re.escape(named)):
        tokserve.Encoding("custom", pat_str=pattern, mergeable_ranks=r50k_ranks,
                          special_tokens={})


def test_why_a_pattern_must_match_everything_tiktoken_drops_the_rest(r50k_ranks):
    theirs = tiktoken.Encoding("t", pat_str=r"\p{L}+|\p{N}+", mergeable_ranks=r50k_ranks,
                               special_tokens={})
    assert theirs.decode(theirs.encode("one, two 3")) == "onetwo3"  # the engine keeps ", "
    theirs = tiktoken.Encoding("t", pat_str=r"[a-z]?+[a-z]|[^a-z]", mergeable_ranks=r50k_ranks,
                               special_tokens={})
    assert theirs.decode(theirs.encode("ab c!")) == "ab !"  # a lone letter has no match


def test_every_known_pattern_is_inside_the_checked_subset():
    for pattern in PATTERNS:
        check_tiktoken_pattern(pattern.text)
