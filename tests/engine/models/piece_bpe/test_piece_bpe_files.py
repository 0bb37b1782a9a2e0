"""The piece BPE model against tokenizers' own BPE model on the real small-vocabulary files.

Llama 2, TinyLlama, Phi-3-mini, Mistral v0.1 and v0.3, Yi (../shared/artifacts; each
test skips, naming the file, when it is absent). For every text of piece_bpe_texts, as
the file's own normalizer makes it, ids and spans must equal ``model.tokenize``'s (its
offsets are byte offsets into the normalized string), on a cold cache and again warm,
and with chunking and the short-chunk scan turned off (the plain heap path).
Gemma and Gemma 3 (large files) have their own test files. Llama 2, TinyLlama and
Phi-3-mini share one vocabulary and merges list (their files differ elsewhere).
"""

from __future__ import annotations

import pytest

from piece_bpe_texts import (hostile_texts, load_pair, mismatches, model_dict, normalized,
                             raw_texts)

from tokserve.models.piece_bpe._piece_bpe import from_model

NAMES = ["llama2", "tinyllama", "phi3-mini", "mistral-v0.1", "mistral-v0.3", "yi"]


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    return load_pair(request.param)


def test_texts_equal_reference(pair):
    ours, reference = pair
    texts = normalized(reference, raw_texts())
    assert ours.chunking
    assert mismatches(ours, reference, texts) == []
    assert mismatches(ours, reference, texts) == []  # warm: chunks from the cache


def test_hostile_equal_reference(pair):
    ours, reference = pair
    texts = list(hostile_texts(3000).values()) + ["▁" + "ab" * 1500, "x▁" * 700 + "▁" * 50]
    assert mismatches(ours, reference, texts) == []


@pytest.mark.parametrize("name", ["llama2", "mistral-v0.3", "yi"])  # distinct vocabularies
def test_every_path_equal_reference(name):
    _, reference = load_pair(name)
    model, _ = model_dict(name)
    texts = normalized(reference, raw_texts()[::3])
    for options in ({"chunking": False}, {"short_merge_limit": 0}, {"cache_capacity": 0},
                    {"chunking": False, "short_merge_limit": 0, "cache_capacity": 0}):
        ours = from_model(model, **options)
        assert mismatches(ours, reference, texts) == [], options
