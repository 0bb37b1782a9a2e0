"""Custom pre-tokenizer patterns are checked before they are trusted (issue 33, point 4):
catastrophic constructs refused by name, time bounded, whole patterns covering every
character; the known patterns pass untouched (pattern_check.py, regex_shape.py)."""

from __future__ import annotations

import re
import time
import unicodedata

import pytest
from corpus.scripts import SCRIPTS

import tokserve
from tokserve.formats import tiktoken_artifact
from tokserve.patterns import DEEPSEEK_V4_SPLITS, PATTERN_NAMES, PATTERNS, resolve_pattern
from tokserve.pre_tokenizers import pattern_check
from tokserve.pre_tokenizers.pre_tokenizer import PreTokenizer
from tokserve.pre_tokenizers.probe_text import CATEGORY_SAMPLES, SCRIPT_SAMPLES
from tokserve.pre_tokenizers.regex_shape import catastrophic_construct
from tokserve.presets import PRESETS

CATASTROPHIC = {  # pattern -> the construct the refusal must name
    r"(a|a)+b|[^a]+|a": "'a' and 'a'",
    r"(a+)+": "'a+'",
    r"(a*)*": "'a*'",
    r"(\w+\s?)+$": r"'\\w+'",
    r"(x+x+)+y": "'x+'",
    r"(\w|\d)+x": r"'\\w' and '\\d'",
    r"( ?\p{L}+)+!": r"'\\p{L}+'",
    r"(?:a|ab)+c": "'a' and 'ab'",
    r"(?i:(A+)+)": "'A+'",
    r"((?:\d{1,3})+)x": r"'\\d{1,3}'",
}
# custom patterns that are fine: each covers every character and runs in linear time
GOOD = [r"\S+|\s+", r"[a-z]+|[^a-z]", r"(?:,\s*\w+)+|[\s\S]", r"(?:a++)+|[\s\S]",
        r"(?:\r?\n)+|[^\n]+", r"(?:a++b?)+|[\s\S]",
        r"\p{L}+|\p{N}{1,3}|\s+(?!\S)|\s+|[^\s\p{L}\p{N}]+",
        PATTERNS[1].text + "|x"]  # o200k_base's, changed: the regex fallback checks it


@pytest.mark.parametrize("pattern, construct", CATASTROPHIC.items())
def test_catastrophic_constructs_are_named(pattern, construct):
    found = catastrophic_construct(pattern)
    assert found is not None and construct in found, found


@pytest.mark.parametrize("pattern", [p.text for p in PATTERNS] + list(DEEPSEEK_V4_SPLITS) + GOOD)
def test_known_and_linear_patterns_have_no_catastrophic_construct(pattern):
    assert catastrophic_construct(pattern) is None


@pytest.mark.parametrize("pattern", GOOD)
def test_linear_covering_patterns_pass_every_check(pattern):
    pattern_check._verdict.cache_clear()
    pattern_check.check_pattern(pattern, "tiktoken", whole=True)


def test_the_issue_pattern_is_refused_at_load_in_well_under_a_second():
    pattern = r"(a|a)+b|[^a]+|a"
    data = (tokserve.bundled_root() / "gpt2" / "1" / "r50k_base.tiktoken").read_bytes()
    start = time.monotonic()
    with pytest.raises(tokserve.ArtifactError, match=r"catastrophically.*'\(a\|a\)\+'"):
        tokserve.Tokenizer(tiktoken_artifact(data, name="x", pattern=pattern,
                                             special_tokens={}))
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("pattern, reason", [
    (r"a*a*a*b|[^b]|b", "cannot run in linear time"),  # cubic: past the time bound
    (r"a*b|a|[^a]", "cannot run in linear time"),       # quadratic: 8x text, ~30x time
    (r"\s++$|\s|\S+", "cannot run in linear time"),     # each space scans to the run's end
    (r"(?:a+b)+|[\s\S]", "cannot run in linear time"),  # each 'a' scans to the run's end
])
def test_polynomial_patterns_are_refused_by_the_time_bound(pattern, reason):
    pattern_check._verdict.cache_clear()
    with pytest.raises(tokserve.ArtifactError, match=reason):
        pattern_check.check_pattern(pattern, "tiktoken", whole=False)


@pytest.mark.parametrize("pattern, missed", [
    ("o200k_base", "U+0041"),             # a name taken as a literal regex
    (r"[a-z]+", "U+0041"),
    (r"\p{L}+|\p{N}+|\p{M}+|\s+", "U+005F"),  # no punctuation
    (r"\S+| ", "U+00A0"),                 # other spaces dropped
    (r"[\x00-\uffff]+", "U+1D400"),        # nothing beyond the BMP
    (r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}\p{M}]+", "U+0301"),  # combining marks
])
def test_a_whole_pattern_must_cover_every_probe_character(pattern, missed):
    with pytest.raises(tokserve.ArtifactError, match=f"does not match {re.escape(missed)}"):
        pattern_check.check_pattern(pattern, "tiktoken", whole=True)


def test_a_split_pattern_need_not_cover_but_must_be_valid_and_linear():
    pattern_check.check_pattern(r"\p{N}{1,3}", "tokenizers", whole=False)
    with pytest.raises(tokserve.ArtifactError, match="not a valid regex: missing \\)"):
        PreTokenizer({"type": "Split", "pattern": {"Regex": "(unclosed"}}, "tokenizers")
    with pytest.raises(tokserve.ArtifactError, match="catastrophically"):
        PreTokenizer({"type": "Split", "pattern": {"Regex": "(a+)+"}}, "tokenizers")


def test_refusals_are_one_line_and_cached():
    with pytest.raises(tokserve.ArtifactError) as first:
        pattern_check.check_pattern("(a|a)+b\n|x", "tiktoken", whole=True)
    assert "\n" not in first.value.message
    start = time.monotonic()
    for _ in range(100):
        with pytest.raises(tokserve.ArtifactError):
            pattern_check.check_pattern("(a|a)+b\n|x", "tiktoken", whole=True)
    assert time.monotonic() - start < 0.5


def test_pattern_names_are_one_table_agreeing_with_the_presets():
    for name, preset in PRESETS.items():
        assert resolve_pattern(name) == preset.pattern, name
    for pattern in PATTERNS:
        assert PATTERN_NAMES[pattern.name] is pattern
    assert resolve_pattern(r"\S+|\s+") == r"\S+|\s+"
    with pytest.raises(tokserve.ArtifactError, match="unknown pattern name 'o200k'"):
        resolve_pattern("o200k")


def test_probe_texts_cover_every_category_and_every_corpus_script():
    for category, chars in CATEGORY_SAMPLES.items():
        assert chars and {unicodedata.category(c) for c in chars} == {category}, category
    assert set(CATEGORY_SAMPLES) == {a + b for a, bs in (
        ("L", "ultmo"), ("M", "nce"), ("N", "dlo"), ("P", "cdseifo"), ("S", "mcko"),
        ("Z", "slp"), ("C", "cfon")) for b in bs}  # every category but Cs (surrogates)
    assert set(SCRIPT_SAMPLES) == set(SCRIPTS)
    for script, (letters, marks, punct) in SCRIPTS.items():
        sample = SCRIPT_SAMPLES[script]
        assert any(a <= ord(sample[0]) <= b for a, b in letters), script
        if marks:
            assert any(a <= ord(sample[1]) <= b for a, b in marks), script


def test_a_pattern_with_capture_groups_keeps_whole_matches():
    """findall gives groups, not matches, for a pattern with groups: the fast path must
    not take their lengths for piece lengths."""
    pre = PreTokenizer({"type": "Pattern", "pattern": r"(\p{L})\p{L}*|\s+|[^\s\p{L}]+"},
                       "tiktoken")
    data, ends, _ = pre.encode_input("hello big world!")
    assert data == b"hello big world!"
    assert ends == [5, 6, 9, 10, 15, 16]
