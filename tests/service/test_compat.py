"""The serving stacks' tokenizer routes (/compat/vllm|sglang|llamacpp|tgi/) over HTTP.

Each route is called with the examples its project documents (request bodies quoted
from the project's docs and tests), with the project's defaults, and the ids are checked
against the reference tokenizer of the artifact (Hugging Face ``tokenizers`` for
DeepSeek-V4's tokenizer.json, tiktoken for o200k_base); errors come back in each
project's shape and status.
"""

from __future__ import annotations

import copy
import logging

import pytest
from conformance.references import get_pair
from shared_files import shared_file

CHAT = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"},
        {"role": "user", "content": "How are you?"}]


@pytest.fixture(scope="module")
def deepseek():
    return get_pair("deepseek-v4")


@pytest.fixture(scope="module")
def o200k():
    return get_pair("o200k_base")


@pytest.fixture(scope="module")
def hf():
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(shared_file("artifacts/deepseek-v4/tokenizer.json")))


@pytest.fixture(scope="module")
def transformers_ref(hf):
    transformers = pytest.importorskip("transformers")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=copy.deepcopy(hf), bos_token="<｜begin▁of▁sentence｜>",
        eos_token="<｜end▁of▁sentence｜>")


def _source(client) -> str:
    from tokserve import bundled_root

    return (bundled_root() / "deepseek-v4/1/chat_template.jinja").read_text(encoding="utf-8")


def _headers_name(r, tokenizer: str, template: bool = False) -> None:
    assert r.headers["x-tokenizer"] == f"{tokenizer}@1"
    assert r.headers["x-tokenizer-hash"].startswith("sha256:")
    assert ("x-template-hash" in r.headers) == template


# ==== vLLM ==================================================================================


def test_vllm_tokenize_prompt_as_its_tests_call_it(client, deepseek, hf):
    prompt = "vllm1 This is a test prompt. 東京 😀"
    r = client.post("/compat/vllm/tokenize", json={
        "prompt": prompt, "model": "deepseek-ai/DeepSeek-V4-Pro", "return_token_strs": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == ["count", "max_model_len", "tokens", "token_strs"]
    expected = hf.encode(prompt, add_special_tokens=True).ids  # vLLM's default: true
    assert body["tokens"] == expected == deepseek.ref.encode(prompt, policy="allow",
                                                             add_special_tokens=True)
    assert body["count"] == len(expected) and body["max_model_len"] == 1048576
    assert body["token_strs"] == [hf.id_to_token(i) for i in expected]
    _headers_name(r, "deepseek-v4")
    plain = client.post("/compat/vllm/tokenize", json={"prompt": "hello world"}).json()
    assert plain["tokens"] == [24912, 2375] and plain["token_strs"] is None  # default model


def test_vllm_tokenize_chat_form_and_render(client, deepseek, transformers_ref):
    r = client.post("/compat/vllm/tokenize", json={"model": "deepseek-v4", "messages": CHAT})
    body = r.json()
    text = transformers_ref.apply_chat_template(copy.deepcopy(CHAT), chat_template=_source(client),
                                                tokenize=False, add_generation_prompt=True)
    # chat defaults: add_generation_prompt true, add_special_tokens false
    assert body["tokens"] == deepseek.ref.encode(text, policy="allow")
    _headers_name(r, "deepseek-v4", template=True)
    rendered = client.post("/compat/vllm/v1/chat/completions/render", json={
        "model": "deepseek-v4", "messages": CHAT, "temperature": 0.2, "max_tokens": 16,
        "return_token_offsets": True}).json()
    assert rendered["token_ids"] == body["tokens"]
    assert rendered["request_id"].startswith("chatcmpl-")
    assert rendered["sampling_params"] == {"temperature": 0.2, "max_tokens": 16}
    assert len(rendered["token_offsets"]) == len(body["tokens"])


def test_vllm_detokenize(client, hf):
    ids = hf.encode("vllm1 This is a test prompt.", add_special_tokens=True).ids
    r = client.post("/compat/vllm/detokenize", json={"model": "deepseek-v4", "tokens": ids})
    assert r.json() == {"prompt": hf.decode(ids, skip_special_tokens=False)}


@pytest.mark.parametrize("path,body,status", [
    ("tokenize", {"model": "no-such-model", "prompt": "x"}, 404),
    ("tokenize", {"prompt": 5}, 400),  # vLLM answers schema errors 400, not 422
    ("tokenize", {"prompt": "x", "messages": CHAT}, 400),
    ("tokenize", {"messages": CHAT, "model": "deepseek-v4", "chat_template": "{{ 1 }}"}, 400),
    ("detokenize", {"tokens": [-1]}, 400),
    ("v1/chat/completions/render", {"model": "no-such-model", "messages": CHAT}, 404),
])
def test_vllm_errors_are_its_error_response(client, path, body, status):
    r = client.post(f"/compat/vllm/{path}", json=body)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == status


# ==== SGLang =================================================================================


def test_sglang_native_api_example(client, deepseek):
    """docs/basic_usage/native_api.ipynb: tokenize with add_special_tokens false, then
    detokenize with skip_special_tokens true."""
    input_text = "What is the capital of France?"
    tok = client.post("/compat/sglang/tokenize", json={
        "model": "deepseek-v4", "prompt": input_text, "add_special_tokens": False}).json()
    assert tok["tokens"] == deepseek.ref.encode(input_text, policy="allow")
    assert tok["count"] == len(tok["tokens"]) and tok["max_model_len"] == 1048576
    text = client.post("/compat/sglang/detokenize", json={
        "model": "deepseek-v4", "tokens": tok["tokens"], "skip_special_tokens": True}).json()
    assert text == {"text": input_text}


def test_sglang_batches_defaults_and_v1_paths(client, o200k):
    prompts = ["a b", "<|endoftext|> c", "東京"]
    for path in ("/compat/sglang/tokenize", "/compat/sglang/v1/tokenize"):
        body = client.post(path, json={"prompt": prompts, "model": "default"}).json()
        assert body["tokens"] == [o200k.ref.encode(p, policy="allow") for p in prompts]
        assert body["count"] == [len(t) for t in body["tokens"]]
    ids = body["tokens"]
    texts = client.post("/compat/sglang/v1/detokenize", json={"tokens": ids}).json()["text"]
    assert texts == ["a b", " c", "東京"]  # skip_special_tokens defaults to true
    kept = client.post("/compat/sglang/detokenize", json={
        "tokens": ids[1], "skip_special_tokens": False}).json()["text"]
    assert kept == "<|endoftext|> c"
    chat = client.post("/compat/sglang/tokenize", json={"model": "deepseek-v4",
                                                        "messages": CHAT}).json()
    vllm = client.post("/compat/vllm/tokenize", json={"model": "deepseek-v4",
                                                      "messages": CHAT}).json()
    assert chat["tokens"] == vllm["tokens"]


def test_sglang_errors_are_flat(client):
    for body in ({}, {"prompt": "x", "messages": CHAT}, {"prompt": 1}):
        r = client.post("/compat/sglang/tokenize", json=body)
        assert r.status_code == 400
        err = r.json()
        assert err["object"] == "error" and err["code"] == 400 and set(err) == {
            "object", "message", "type", "param", "code"}
    r = client.post("/compat/sglang/detokenize", json={"tokens": [10**9]})
    assert r.status_code == 400 and r.json()["type"] == "DecodeError"


# ==== llama.cpp ==============================================================================


def test_llamacpp_tokenize_with_pieces_and_defaults(client, deepseek, hf):
    content = "Hello world! 東京 🗼 <｜end▁of▁sentence｜>"
    r = client.post("/compat/llamacpp/tokenize", json={"model": "deepseek-v4",
                                                       "content": content, "with_pieces": True})
    pieces = r.json()["tokens"]
    ids = [p["id"] for p in pieces]
    # add_special false, parse_special true: the literal is its special id
    assert ids == deepseek.ref.encode(content, policy="allow")
    from tokserve import load

    tok = load("deepseek-v4")
    for p in pieces:
        data = tok.decode_bytes([p["id"]])
        try:
            assert p["piece"] == data.decode("utf-8")
        except UnicodeDecodeError:
            assert p["piece"] == list(data)  # README: bytes when not valid UTF-8
    assert any(isinstance(p["piece"], list) for p in pieces)
    plain = client.post("/compat/llamacpp/tokenize", json={
        "model": "deepseek-v4", "content": content, "parse_special": False}).json()["tokens"]
    assert plain == deepseek.ref.encode(content, policy="text")
    mixed = client.post("/compat/llamacpp/tokenize", json={
        "model": "deepseek-v4", "content": ["Hello", 12, " world"]}).json()["tokens"]
    assert mixed == hf.encode("Hello", add_special_tokens=False).ids + [12] + \
        hf.encode(" world", add_special_tokens=False).ids
    assert client.post("/compat/llamacpp/tokenize", json={}).json() == {"tokens": []}


def test_llamacpp_detokenize_and_apply_template(client, hf, transformers_ref):
    ids = hf.encode("Hello world!", add_special_tokens=False).ids + [1]
    r = client.post("/compat/llamacpp/detokenize", json={"model": "deepseek-v4", "tokens": ids})
    assert r.json() == {"content": hf.decode(ids, skip_special_tokens=False)}
    messages = [{"role": "user", "content": "What is today?"}]
    for generation in (True, False):
        prompt = client.post("/compat/llamacpp/apply-template", json={
            "model": "deepseek-v4", "messages": messages,
            "add_generation_prompt": generation}).json()["prompt"]
        assert prompt == transformers_ref.apply_chat_template(
            copy.deepcopy(messages), chat_template=_source(client), tokenize=False,
            add_generation_prompt=generation)


def test_llamacpp_errors(client):
    for path, body, status in (("apply-template", {}, 400),
                               ("tokenize", {"model": "nope", "content": "x"}, 404),
                               ("detokenize", {"tokens": [10**9]}, 400),
                               ("apply-template", {"messages": CHAT}, 404)):  # no template
        r = client.post(f"/compat/llamacpp/{path}", json=body)
        assert r.status_code == status, (path, r.text)
        err = r.json()["error"]
        assert set(err) == {"code", "message", "type"} and err["code"] == status


# ==== TGI ====================================================================================


def test_tgi_tokenize_openapi_example(client, o200k):
    inputs = "My name is Olivier and I"
    tokens = client.post("/compat/tgi/tokenize", json={"inputs": inputs}).json()
    assert [t["id"] for t in tokens] == o200k.ref.encode(inputs, policy="allow")
    data = inputs.encode()
    for t in tokens:
        assert set(t) == {"id", "text", "start", "stop"}
        assert t["text"] == data[t["start"]:t["stop"]].decode()
    assert "".join(t["text"] for t in tokens) == inputs


def test_tgi_tokenize_offsets_are_bytes_and_specials_have_none(client, live_server, bundled,
                                                               tmp_path_factory):
    from tokserve.authoring.importers import import_tiktoken
    from tokserve.service.runtime.settings import Settings

    root = tmp_path_factory.mktemp("bos")
    import_tiktoken(bundled("cl100k_base") / "cl100k_base.tiktoken", root, "withbos", "1",
                    preset="cl100k_base", bos_token="<|fim_prefix|>", eos_token=None,
                    add_bos_token=True)
    with live_server(Settings(_env_file=None, artifacts=[root],
                              default_tokenizer="withbos")) as srv:
        tokens = srv.client.post("/compat/tgi/tokenize", json={"inputs": "héllo 東京"}).json()
    assert tokens[0] == {"id": 100258, "text": "", "start": 0, "stop": 0}  # always added
    assert tokens[-1]["stop"] == len("héllo 東京".encode())


def test_tgi_chat_tokenize(client, deepseek, transformers_ref):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
    body = client.post("/compat/tgi/chat_tokenize", json={"model": "deepseek-v4",
                                                          "messages": messages}).json()
    text = transformers_ref.apply_chat_template(copy.deepcopy(messages),
                                                chat_template=_source(client), tokenize=False,
                                                add_generation_prompt=True)
    assert body["templated_text"] == text
    assert [t["id"] for t in body["tokenize_response"]] == deepseek.ref.encode(text,
                                                                               policy="allow")
    data = text.encode()
    assert all(t["text"] == data[t["start"]:t["stop"]].decode()
               for t in body["tokenize_response"])


def test_tgi_errors(client):
    for path, body in (("tokenize", {"input": "x"}), ("chat_tokenize", {"messages": []}),
                       ("chat_tokenize", {"messages": CHAT})):  # o200k_base: no template
        r = client.post(f"/compat/tgi/{path}", json=body)
        assert r.status_code == 422, r.text
        assert set(r.json()) == {"error", "error_type"}


def test_compat_refusals_speak_the_projects_shapes(client):
    """The front door's own refusals (415 here) use each route's error shape too."""
    for path, key in (("vllm/tokenize", "error"), ("sglang/tokenize", "object"),
                      ("llamacpp/tokenize", "error"), ("tgi/tokenize", "error_type")):
        r = client.post(f"/compat/{path}", content=b'{"prompt": "x"}',
                        headers={"content-type": "text/plain"})
        assert r.status_code in (400, 415, 422) and key in r.json(), (path, r.text)
