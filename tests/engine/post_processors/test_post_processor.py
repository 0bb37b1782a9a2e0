"""Post-processor stage: the ids ``add_special_tokens`` puts around one text, as the
Tokenizer reports them (``special_prefix`` / ``special_suffix``, from the
post-processor's configuration), and truncation to a budget that keeps them."""

from __future__ import annotations

import dataclasses

import pytest

import tokserve
from tokserve.post_processors.post_processor import PostProcessor

TEXT = "The quick brown fox jumps over the lazy dog, twice: the quick brown fox."


@pytest.fixture(scope="module")
def bos_eos() -> tokserve.Tokenizer:
    """cl100k_base with a BOS and an EOS added (flags, as tokenizer_config.json sets)."""
    artifact = tokserve.load("cl100k_base").artifact
    return tokserve.Tokenizer(dataclasses.replace(
        artifact, bos_token="<|endoftext|>", eos_token="<|endofprompt|>",
        add_bos_token=True, add_eos_token=True))


def test_cut_keeps_what_the_post_processor_adds_on_both_sides():
    post = PostProcessor(None, {"<s>": 1, "</s>": 2}, "<s>", "</s>", True, True)
    seq = ["B", 1, 2, 3, 4, "E"]
    assert post.truncate(seq, 4, "right", True) == ["B", 1, 2, "E"]
    assert post.truncate(seq, 4, "left", True) == ["B", 3, 4, "E"]
    assert post.truncate(seq, 2, "left", True) == ["B", "E"]
    assert post.truncate(seq, 1, "right", True) == ["B"]
    assert post.truncate(seq, 1, "left", True) == ["E"]
    assert post.truncate(seq, 0, "right", True) == []


def test_cut_without_added_ids_is_a_plain_cut_and_within_budget_is_untouched():
    post = PostProcessor(None, {"<s>": 1, "</s>": 2}, "<s>", "</s>", True, True)
    seq = [10, 11, 12, 13, 14, 15]
    assert post.truncate(seq, 4, "right", False) == [10, 11, 12, 13]
    assert post.truncate(seq, 4, "left", False) == [12, 13, 14, 15]
    assert post.truncate(seq, 6, "left", True) is seq
    assert post.truncate(seq, 9, "right", True) is seq


def test_template_processing_gives_prefix_and_suffix_from_its_single_template():
    spec = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}},
                       {"SpecialToken": {"id": "</s>"}}, {"SpecialToken": {"id": "</s>"}}],
            "special_tokens": {"<s>": {"ids": [1]}, "</s>": {"ids": [2]}}}
    post = PostProcessor(spec, {}, None, None, False, False)
    assert (post.prefix, post.suffix) == ([1], [2, 2])


def test_tokenizer_reports_its_prefix_and_suffix(bos_eos):
    assert bos_eos.special_prefix == (100257,) and bos_eos.special_suffix == (100276,)
    ids = bos_eos.encode(TEXT, add_special_tokens=True)
    assert ids == [*bos_eos.special_prefix, *bos_eos.encode(TEXT), *bos_eos.special_suffix]
    plain = tokserve.load("cl100k_base")
    assert plain.special_prefix == () and plain.special_suffix == ()


@pytest.mark.parametrize("name", tokserve.bundled_names())
def test_prefix_and_suffix_are_what_encoding_shows(name):
    """What the service used to infer by encoding one character (the added ids have
    empty spans at the start and at the end) is what the tokenizer reports."""
    tok = tokserve.load(name)
    ids, spans = tok.encode_with_offsets("x", units="char", special_tokens="text",
                                         add_special_tokens=True)
    before = next((i for i, sp in enumerate(spans) if tuple(sp) != (0, 0)), len(spans))
    after = sum(1 for sp in spans[before:] if tuple(sp) == (1, 1))
    assert tok.special_prefix == tuple(ids[:before])
    assert tok.special_suffix == tuple(ids[len(ids) - after:])


@pytest.mark.parametrize("side", ["right", "left"])
def test_tokenizer_truncates_ids_and_offsets_alike_keeping_bos_and_eos(bos_eos, side):
    ids, offsets = bos_eos.encode_with_offsets(TEXT, add_special_tokens=True)
    body = bos_eos.encode(TEXT)
    for budget in range(len(ids)):
        cut = bos_eos.truncate(ids, budget, side=side, add_special_tokens=True)
        spans = bos_eos.truncate(offsets, budget, side=side, add_special_tokens=True)
        assert len(cut) == len(spans) == budget
        if budget >= 2:
            kept = body[:budget - 2] if side == "right" else body[len(body) - (budget - 2):]
            assert cut == [100257, *kept, 100276]
            assert spans[0] == offsets[0] and spans[-1] == offsets[-1]
    plain = bos_eos.truncate(body, 3, side=side, add_special_tokens=False)
    assert plain == (body[:3] if side == "right" else body[-3:])
