"""Ours vs tiktoken (cl100k_base, o200k_base, Llama 3, Qwen with its pattern): 0 mismatches.

The reference is ``tiktoken.Encoding`` built from the same rank file with the pattern and
special tokens of ../shared/artifacts/README.md. Every check runs the whole corpus
(TOKSERVE_CORPUS_MB, default 2 MB) plus this tokenizer's literal texts; a failure lists
minimal inputs with expected and actual ids.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from conformance import checks
from conformance.diff import ours_outcome, ref_outcome
from conformance.references import POLICIES

HYPOTHESIS = settings(max_examples=checks.MAX_EXAMPLES, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.function_scoped_fixture,
                                             HealthCheck.too_slow])


@pytest.mark.parametrize("policy", POLICIES)
def test_corpus_ids_equal(tiktoken_pair, policy):
    report = checks.check_corpus(tiktoken_pair, policy)
    report.check()


@pytest.mark.parametrize("policy", POLICIES)
def test_add_special_tokens(tiktoken_pair, policy):
    report = checks.check_add_special_tokens(tiktoken_pair, policy)
    report.check()


def test_decode_roundtrip(tiktoken_pair):
    report = checks.check_roundtrip(tiktoken_pair)
    report.check()


def test_decode_matches_reference(tiktoken_pair):
    report = checks.check_decode_vs_reference(tiktoken_pair)
    report.check()


def test_reject_raises_like_tiktoken(tiktoken_pair):
    """tiktoken's default encode raises on any special literal; ours names each literal."""
    literals = sorted(tiktoken_pair.ref.literals)
    text = f"a {literals[0]} b {literals[-1]}{literals[0]}"
    assert ref_outcome(tiktoken_pair, text, "reject") == ("reject", frozenset({literals[0], literals[-1]}))
    assert ours_outcome(tiktoken_pair, text, "reject") == ref_outcome(tiktoken_pair, text, "reject")


def test_surrogate_pair_joined_like_tiktoken(tiktoken_pair):
    """A high+low surrogate pair in a str: tiktoken re-decodes through UTF-16 and gets one
    astral character; lone surrogates become U+FFFD."""
    for text in ["a\ud83d\ude00b", "\ud83d\ude00", "x\ud800", "\udc00y\ud800"]:
        assert ours_outcome(tiktoken_pair, text, "text") == ref_outcome(tiktoken_pair, text, "text"), text


@HYPOTHESIS
@given(text=checks.any_text)
def test_hypothesis_any_text(tiktoken_pair, text):
    for policy in ("text", "allow"):
        assert ours_outcome(tiktoken_pair, text, policy) == ref_outcome(tiktoken_pair, text, policy)


@HYPOTHESIS
@given(text=checks.tricky_text)
def test_hypothesis_tricky_text(tiktoken_pair, text):
    assert ours_outcome(tiktoken_pair, text, "text") == ref_outcome(tiktoken_pair, text, "text")
    assert tiktoken_pair.ours.decode(tiktoken_pair.ours.encode(text, special_tokens="text")) == text


@HYPOTHESIS
@given(data=checks.st.data())
def test_hypothesis_literals_all_policies(tiktoken_pair, data):
    text = data.draw(checks.literal_text(list(tiktoken_pair.ref.literals)))
    for policy in POLICIES:
        for add in (False, True):
            assert ours_outcome(tiktoken_pair, text, policy, add) == ref_outcome(
                tiktoken_pair, text, policy, add), (policy, add)


@HYPOTHESIS
@given(text=checks.valid_text)
def test_hypothesis_roundtrip(tiktoken_pair, text):
    assert tiktoken_pair.ours.decode(tiktoken_pair.ours.encode(text, special_tokens="text")) == text
