"""The shared Llama 2 and Mistral ``tokenizer.model`` files, converted to tokenizer.json
dicts: ``tokenizers`` running them gives ``sentencepiece``'s ids (with and without BOS)
and decoded text on several hundred ordinary texts, and the dicts equal the published
tokenizer.json files made from the same models. Each case skips, naming the file, when
../shared is absent.
"""

from __future__ import annotations

import json

import pytest
from sentencepiece_inputs import texts
from shared_files import find_shared, shared_file

from tokserve.sentencepiece_files import read_model_proto
from tokserve.sentencepiece_json import (sentencepiece_tokenizer_json,
                                         tokenizer_json_from_proto)

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")

SHARED_MODELS = ["llama2", "mistral-v0.1", "mistral-v0.3"]


@pytest.mark.parametrize("name", SHARED_MODELS)
def test_shared_models_give_sentencepieces_ids_and_text(name):
    path = shared_file(f"artifacts/{name}/tokenizer.model")
    proto, data = read_model_proto(path)
    sp = spm.SentencePieceProcessor(model_proto=data)
    tok = tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json_from_proto(proto, str(path))))
    cases = list(texts())
    ours = tok.encode_batch(cases, add_special_tokens=False)
    for text, encoding in zip(cases, ours):
        ids = sp.encode(text)
        assert encoding.ids == ids, text
        assert tok.decode(ids) == sp.decode(ids), text
    for text in cases[:60]:
        assert tok.encode(text).ids == sp.encode(text, add_bos=True), text


def test_llama2_converts_to_the_published_tokenizer_json():
    """Vocabulary, all 61,249 merges in order, normalizer, decoder, post-processor and
    added tokens equal llama2/tokenizer.json (made with transformers' LlamaConverter),
    except that our specials are ``normalized: false``, as in Mistral's and TinyLlama's
    files (sentencepiece never matches them in text; tokenizers' ``normalized: true``
    would match ``<s>`` only after a space)."""
    model = shared_file("artifacts/llama2/tokenizer.model")
    published = json.loads(shared_file("artifacts/llama2/tokenizer.json").read_text("utf-8"))
    ours = sentencepiece_tokenizer_json(model)
    for stage in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        assert ours[stage] == published[stage], stage
    assert ours["model"]["vocab"] == published["model"]["vocab"]
    assert ours["model"]["merges"] == [m.split(" ", 1) if isinstance(m, str) else m
                                       for m in published["model"]["merges"]]
    for key in ("type", "unk_token", "fuse_unk", "byte_fallback", "ignore_merges", "dropout"):
        assert ours["model"][key] == published["model"][key], key
    assert [{**t, "normalized": True} for t in ours["added_tokens"]] == published["added_tokens"]


@pytest.mark.parametrize("name", ["mistral-v0.1", "mistral-v0.3"])
def test_mistral_converts_to_its_tokenizer_json(name):
    path = find_shared(f"artifacts/{name}/tokenizer.json")
    if path is None:
        pytest.skip(f"needs ../shared/artifacts/{name}/tokenizer.json")
    published = json.loads(path.read_text("utf-8"))
    ours = sentencepiece_tokenizer_json(shared_file(f"artifacts/{name}/tokenizer.model"))
    for stage in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "added_tokens"):
        assert ours[stage] == published[stage], stage
    assert ours["model"]["vocab"] == published["model"]["vocab"]
    assert ours["model"]["merges"] == [m.split(" ", 1) if isinstance(m, str) else m
                                       for m in published["model"]["merges"]]
