"""POST /encode and /count over real HTTP against the bundled tokenizers."""

from __future__ import annotations

import tokserve
import pytest

HASH_PREFIX = "sha256:"


def test_encode_default_tokenizer_echoes_name_version_and_hash(client, o200k):
    r = client.post("/encode", json={"text": "hello world"})
    assert r.status_code == 200
    body = r.json()
    assert body["tokenizer"] == "o200k_base@1"
    assert body["tokenizer_hash"] == o200k.hash
    assert body["tokenizer_hash"].startswith(HASH_PREFIX) and len(body["tokenizer_hash"]) == 71
    assert body["ids"] == o200k.encode("hello world")
    assert body["count"] == len(body["ids"])
    assert "offsets" not in body and "tokens" not in body


@pytest.mark.parametrize("spec", ["o200k_base", "o200k_base@1", "cl100k_base", "cl100k_base@1",
                                  "deepseek-v4@1"])
def test_encode_name_and_name_at_version(client, spec):
    r = client.post("/encode", json={"text": "Tokenizers!", "tokenizer": spec})
    assert r.status_code == 200
    name = spec.partition("@")[0]
    assert r.json()["tokenizer"] == f"{name}@1"


def test_encode_special_token_policies(client, o200k):
    text = "hi <|endoftext|> there"
    r = client.post("/encode", json={"text": text})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "special_token_in_text"
    assert err["literals"] == ["<|endoftext|>"]
    assert "special_tokens" in err["message"]

    allow = client.post("/encode", json={"text": text, "special_tokens": "allow"}).json()
    assert 199999 in allow["ids"]
    assert allow["ids"] == o200k.encode(text, special_tokens="allow")

    as_text = client.post("/encode", json={"text": text, "special_tokens": "text"}).json()
    assert 199999 not in as_text["ids"]
    assert as_text["ids"] == o200k.encode(text, special_tokens="text")
    assert o200k.decode(as_text["ids"]) == text


@pytest.mark.parametrize("units,expected", [
    ("char", [[0, 2], [2, 5], [5, 7]]),
    ("utf16", [[0, 2], [2, 5], [5, 8]]),
    ("byte", [[0, 3], [3, 6], [6, 11]]),
])
def test_encode_offsets_in_all_units(client, o200k, units, expected):
    text = "héllo 😀"
    r = client.post("/encode", json={"text": text, "return_offsets": True, "offset_units": units})
    assert r.status_code == 200
    body = r.json()
    _, offsets = o200k.encode_with_offsets(text, units=units)
    assert body["offsets"] == [list(o) for o in offsets] == expected


def test_encode_offsets_default_unit_is_char(client):
    body = client.post("/encode", json={"text": "😀a", "return_offsets": True}).json()
    assert body["offsets"][-1][1] == 2


def test_encode_tokens_decoded_with_replacement(client, o200k):
    body = client.post("/encode", json={"text": "hello 😀", "return_tokens": True}).json()
    expected = [o200k.token_bytes(i).decode("utf-8", "replace") for i in body["ids"]]
    assert body["tokens"] == expected
    assert body["tokens"][0] == "hello"


def test_encode_batch_keeps_input_order(client, o200k):
    texts = [f"item {i} " * (i % 7 + 1) for i in range(40)] + ["", "z"]
    r = client.post("/encode", json={"texts": texts, "return_offsets": True})
    assert r.status_code == 200
    body = r.json()
    assert body["tokenizer"] == "o200k_base@1"
    assert [res["ids"] for res in body["results"]] == [o200k.encode(t) for t in texts]
    assert all(res["count"] == len(res["ids"]) == len(res["offsets"]) for res in body["results"])


def test_encode_batch_error_names_the_index(client):
    r = client.post("/encode", json={"texts": ["fine", "bad <|endoftext|>"]})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "special_token_in_text" and err["index"] == 1


def test_encode_add_special_tokens_matches_engine(client, bundled):
    tok = tokserve.load(str(bundled("deepseek-v4")))
    for flag in (False, True):
        body = client.post("/encode", json={"tokenizer": "deepseek-v4", "text": "Hi there",
                                            "add_special_tokens": flag}).json()
        assert body["ids"] == tok.encode("Hi there", add_special_tokens=flag)


def test_encode_lone_surrogate_is_encoded_as_replacement_char(client, o200k):
    # orjson refuses "\ud800"; the service falls back to the stdlib parser for such bodies.
    raw = b'{"text": "a\\ud800b", "return_offsets": true, "return_tokens": true}'
    r = client.post("/encode", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 200
    body = r.json()
    assert body["ids"] == o200k.encode("a\ufffdb")
    assert body["offsets"] == [[0, 1], [1, 2], [2, 3]]  # one code point in the original
    assert body["tokens"][1] == "\ufffd"


@pytest.mark.parametrize("endpoint", ["/count", "/encode"])
def test_lone_surrogates_never_500(client, endpoint):
    for raw in (b'{"text": "\\udfff"}', b'{"texts": ["\\ud83d", "x\\ude00y"]}',
                b'{"text": "\\ud83d\\ude00"}'):
        r = client.post(endpoint, content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("payload", [
    {"text": "The quick brown fox jumps over the lazy dog. " * 30},
    {"text": "a <|endoftext|> b", "special_tokens": "allow"},
    {"text": "a <|endoftext|> b", "special_tokens": "text"},
    {"text": "", "tokenizer": "cl100k_base"},
    {"text": "Hi", "tokenizer": "deepseek-v4", "add_special_tokens": True},
    {"text": "naïve café 😀\r\n\t 1234567"},
])
def test_count_equals_len_of_encode_ids(client, payload):
    enc = client.post("/encode", json=payload).json()
    cnt = client.post("/count", json=payload).json()
    assert cnt["count"] == len(enc["ids"])
    assert cnt["tokenizer"] == enc["tokenizer"] and cnt["tokenizer_hash"] == enc["tokenizer_hash"]
    # and again, now answered from the cache
    assert client.post("/count", json=payload).json()["count"] == len(enc["ids"])


def test_count_batch_counts_and_total(client):
    texts = ["one", "two words", "", "three whole words"]
    body = client.post("/count", json={"texts": texts}).json()
    enc = client.post("/encode", json={"texts": texts}).json()
    assert body["counts"] == [len(r["ids"]) for r in enc["results"]]
    assert body["total"] == sum(body["counts"])


def test_count_rejects_special_literal_by_default(client):
    r = client.post("/count", json={"text": "<|endoftext|>"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "special_token_in_text"


@pytest.mark.parametrize("endpoint", ["/encode", "/count", "/decode"])
def test_unknown_tokenizer_and_version_are_404(client, endpoint):
    field = {"ids": [1]} if endpoint == "/decode" else {"text": "x"}
    r = client.post(endpoint, json={**field, "tokenizer": "nope"})
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "tokenizer_not_found" and "o200k_base@1" in err["available"]
    r = client.post(endpoint, json={**field, "tokenizer": "o200k_base@999"})
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "tokenizer_not_found"
    assert "999" in r.json()["error"]["message"]


def test_large_text_is_served(client, o200k):
    text = "lorem ipsum dolor sit amet " * 4000  # over the thread-offload threshold
    body = client.post("/count", json={"text": text}).json()
    assert body["count"] == len(o200k.encode(text))
