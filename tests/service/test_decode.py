"""POST /decode over real HTTP."""

from __future__ import annotations

import pytest


def test_decode_roundtrip(client):
    ids = client.post("/encode", json={"text": "hello wörld 😀"}).json()["ids"]
    body = client.post("/decode", json={"ids": ids}).json()
    assert body["text"] == "hello wörld 😀"
    assert body["tokenizer"] == "o200k_base@1"


def test_decode_batch_in_order(client):
    texts = ["first", "second one", ""]
    rows = [r["ids"] for r in client.post("/encode", json={"texts": texts}).json()["results"]]
    body = client.post("/decode", json={"batch_ids": rows}).json()
    assert body["texts"] == texts


def test_decode_skip_special_tokens(client):
    ids = client.post("/encode", json={"text": "a<|endoftext|>", "special_tokens": "allow"}).json()
    with_special = client.post("/decode", json={"ids": ids["ids"]}).json()["text"]
    without = client.post("/decode", json={"ids": ids["ids"], "skip_special_tokens": True}).json()
    assert with_special == "a<|endoftext|>" and without["text"] == "a"


@pytest.mark.parametrize("ids", [[10**7], [-1], [5, 199998], [2**64], [-(2**70)], [2**70, 5],
                                 [-(10**19) + 1], [-(2**63) - 1], [2**64 - 1]])
def test_decode_unknown_ids_are_400(client, ids):
    r = client.post("/decode", json={"ids": ids})
    assert r.status_code == 400, r.text  # integers beyond 64 bits too (orjson floats them)
    err = r.json()["error"]
    assert err["code"] == "unknown_token_id"
    assert set(err["ids"]) == {i for i in ids if i not in (5,)}


def test_decode_batch_unknown_id_names_the_row(client):
    r = client.post("/decode", json={"batch_ids": [[1, 2], [3, 10**8]]})
    assert r.status_code == 400
    assert r.json()["error"]["index"] == 1


def test_decode_strict_and_replace(client):
    partial = [94]  # o200k token 94 is the lone byte 0xA1: not valid UTF-8 on its own
    r = client.post("/decode", json={"ids": partial, "errors": "strict"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_utf8"
    r = client.post("/decode", json={"ids": partial})
    assert r.status_code == 200 and r.json()["text"] == "\ufffd"


@pytest.mark.parametrize("payload", [
    {"ids": ["1"]}, {"ids": [1.0]}, {"ids": [True]}, {"ids": 5}, {},
    {"ids": [1], "batch_ids": [[1]]}, {"ids": [1], "errors": "ignore"},
])
def test_decode_schema_errors_are_422(client, payload):
    r = client.post("/decode", json=payload)
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_request"
