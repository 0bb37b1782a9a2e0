"""Ours vs Hugging Face ``tokenizers`` on DeepSeek-V4's tokenizer.json: 0 mismatches.

Policies: ``allow`` is tokenizers' default (every added token, special or not, matched);
``text`` is a tokenizers instance built from the same JSON with ``added_tokens`` emptied;
``reject`` expects exactly the literals the ``allow`` reference turned into added ids.
Lone surrogates are given to the reference as U+FFFD (it cannot take them at all), which
is the engine's documented policy. Every check runs the whole corpus plus this
tokenizer's literal texts (1,283 added tokens, incl. non-special ones like <think>).
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
def test_corpus_ids_equal(deepseek_pair, policy):
    report = checks.check_corpus(deepseek_pair, policy)
    report.check()


@pytest.mark.parametrize("policy", POLICIES)
def test_add_special_tokens(deepseek_pair, policy):
    report = checks.check_add_special_tokens(deepseek_pair, policy)
    report.check()


def test_decode_roundtrip(deepseek_pair):
    report = checks.check_roundtrip(deepseek_pair)
    report.check()


def test_decode_matches_reference(deepseek_pair):
    report = checks.check_decode_vs_reference(deepseek_pair)
    report.check()


def test_non_special_added_tokens_follow_policy(deepseek_pair):
    """<think> and <｜User｜> are added but not special: "allow" matches them, "text" not."""
    text = "<｜User｜>hi <think>x</think>"
    for policy in POLICIES:
        assert ours_outcome(deepseek_pair, text, policy) == ref_outcome(deepseek_pair, text, policy)
    assert ours_outcome(deepseek_pair, text, "reject")[0] == "reject"


@HYPOTHESIS
@given(text=checks.any_text)
def test_hypothesis_any_text(deepseek_pair, text):
    for policy in ("text", "allow"):
        assert ours_outcome(deepseek_pair, text, policy) == ref_outcome(deepseek_pair, text, policy)


@HYPOTHESIS
@given(text=checks.tricky_text)
def test_hypothesis_tricky_text(deepseek_pair, text):
    assert ours_outcome(deepseek_pair, text, "text") == ref_outcome(deepseek_pair, text, "text")
    assert deepseek_pair.ours.decode(deepseek_pair.ours.encode(text, special_tokens="text")) == text


@HYPOTHESIS
@given(data=checks.st.data())
def test_hypothesis_literals_all_policies(deepseek_pair, data):
    text = data.draw(checks.literal_text(list(deepseek_pair.ref.literals)))
    for policy in POLICIES:
        for add in (False, True):
            assert ours_outcome(deepseek_pair, text, policy, add) == ref_outcome(
                deepseek_pair, text, policy, add), (policy, add)


@HYPOTHESIS
@given(text=checks.valid_text)
def test_hypothesis_roundtrip(deepseek_pair, text):
    assert deepseek_pair.ours.decode(deepseek_pair.ours.encode(text, special_tokens="text")) == text
