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
    {"ids": ["1"]}, {"ids": [1.5]}, {"ids": [True]}, {"ids": [None]}, {"ids": 5}, {},
    {"ids": [1], "batch_ids": [[1]]}, {"ids": [1], "errors": "ignore"},
    {"batch_ids": [[1], ["2"]]},
])
def test_decode_schema_errors_are_422(client, payload):
    r = client.post("/decode", json=payload)
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_request"


def test_integral_numbers_are_integers_as_json_says(client):
    """JSON (and the OpenAPI schema's `integer`) has one number 5 however it is written:
    5.0 and 5e0 are ids; fractions, strings and booleans are not."""
    plain = client.post("/decode", json={"ids": [24912, 2375]}).json()["text"]
    for raw in (b'{"ids": [24912.0, 2375]}', b'{"ids": [2.4912e4, 2375.0]}',
                b'{"batch_ids": [[24912.0, 2375]]}'):
        r = client.post("/decode", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text
        assert r.json().get("text", r.json().get("texts", [None])[0]) == plain


def test_many_bad_ids_are_refused_fast_with_a_capped_list(client):
    r = client.post("/decode", json={"ids": [1, 2.5, "x", True] * 50_000})
    err = r.json()["error"]
    assert r.status_code == 422 and err["errors_total"] == 150_000
    assert [e["loc"] for e in err["errors"][:3]] == [["ids", 1], ["ids", 2], ["ids", 3]]
    assert "(and 149999 more)" in err["message"]
