"""The text-embeddings-inference base: ``/compat/tei/tokenize`` and ``/decode`` in TEI's
request and response shapes (router/src/http/types.rs: ``TokenizeRequest``,
``SimpleToken``, ``DecodeRequest``; core/src/tokenization.rs ``into_tokens``).

TEI tokenizes with Hugging Face ``tokenizers`` (``Tokenizer::encode``: byte offsets) and
builds each token from the encoding: a token in the special-tokens mask has its token
string as text and no offsets, every other token the input's bytes between its offsets.
The reference here is the same library on the artifact's tokenizer.json.
"""

from __future__ import annotations

import pytest
from shared_files import shared_file


@pytest.fixture(scope="module")
def hf():
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(shared_file("artifacts/deepseek-v4/tokenizer.json")))


def _tei_tokens(hf, text: str, add_special_tokens: bool) -> list[dict]:
    """What TEI's ``into_tokens`` makes of ``hf``'s encoding (its offsets in bytes)."""
    enc = hf.encode(text, add_special_tokens=add_special_tokens)
    byte_at = [0]
    for ch in text:
        byte_at.append(byte_at[-1] + len(ch.encode()))
    data = text.encode()
    out = []
    for i, (start, stop), special, token in zip(enc.ids, enc.offsets,
                                                enc.special_tokens_mask, enc.tokens):
        if special:
            out.append({"id": i, "text": token, "special": True, "start": None, "stop": None})
        else:
            a, b = byte_at[start], byte_at[stop]
            out.append({"id": i, "text": data[a:b].decode("utf-8", "replace"),
                        "special": False, "start": a, "stop": b})
    return out


TEXTS = ["test", "Hello world! 東京 🗼 héllo", "a <｜end▁of▁sentence｜> b", "  spaced\n\nout  "]


def test_tokenize_is_teis_answer(client, hf):
    for text in TEXTS:
        for add in (True, False):
            r = client.post("/compat/tei/tokenize", json={
                "inputs": text, "add_special_tokens": add, "model": "deepseek-v4"})
            assert r.status_code == 200, r.text
            assert r.json() == [_tei_tokens(hf, text, add)], text
    batch = client.post("/compat/tei/models/deepseek-v4/tokenize", json={"inputs": TEXTS})
    assert batch.json() == [_tei_tokens(hf, t, True) for t in TEXTS]


def test_added_special_tokens_are_special_without_offsets(live_server, bundled,
                                                          tmp_path_factory):
    from tokserve.authoring.importers import import_tiktoken
    from tokserve.service.runtime.settings import Settings

    root = tmp_path_factory.mktemp("bos")
    import_tiktoken(bundled("cl100k_base") / "cl100k_base.tiktoken", root, "withbos", "1",
                    preset="cl100k_base", bos_token="<|fim_prefix|>", eos_token=None,
                    add_bos_token=True)
    with live_server(Settings(_env_file=None, artifacts=[root])) as srv:
        tokens = srv.client.post("/compat/tei/models/withbos/tokenize",
                                 json={"inputs": "héllo"}).json()[0]
        plain = srv.client.post("/compat/tei/models/withbos/tokenize",
                                json={"inputs": "héllo", "add_special_tokens": False}).json()[0]
    assert tokens[0] == {"id": 100258, "text": "<|fim_prefix|>", "special": True,
                         "start": None, "stop": None}
    assert tokens[1:] == plain and plain[-1]["stop"] == len("héllo".encode())
    assert not any(t["special"] for t in plain)


def test_decode_is_teis_answer(client, hf):
    ids = hf.encode("a <｜end▁of▁sentence｜> b 東京", add_special_tokens=False).ids
    r = client.post("/compat/tei/models/deepseek-v4/decode", json={"ids": ids})
    assert r.json() == [hf.decode(ids, skip_special_tokens=True)]  # default: skip
    r = client.post("/compat/tei/models/deepseek-v4/decode", json={
        "ids": [ids, ids[:1], []], "skip_special_tokens": False})
    assert r.json() == [hf.decode(ids, skip_special_tokens=False), hf.decode(ids[:1]), ""]
    assert client.post("/compat/tei/decode", json={"ids": []}).json() == [""]


@pytest.mark.parametrize("path,body,status,error_type", [
    ("tokenize", {"inputs": []}, 400, "Empty"),
    ("tokenize", {"inputs": 5}, 422, "Validation"),
    ("tokenize", {}, 422, "Validation"),
    ("tokenize", {"inputs": "x", "prompt_name": "query"}, 422, "Validation"),
    ("tokenize", {"inputs": "x", "model": "nope"}, 404, "Validation"),
    ("decode", {"ids": [-1]}, 422, "Validation"),
    ("decode", {"ids": [10**9]}, 422, "Tokenizer"),
    ("decode", {"ids": "x"}, 422, "Validation"),
])
def test_errors_are_teis_error_response(client, path, body, status, error_type):
    r = client.post(f"/compat/tei/{path}", json=body)
    assert r.status_code == status, r.text
    assert r.json()["error_type"] == error_type and set(r.json()) == {"error", "error_type"}
