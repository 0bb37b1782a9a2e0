"""Per-model base URLs and one model semantics on every compat base (issue 32, point 2).

* ``/compat/<stack>/models/{name}/...`` serves ``name`` (a model, a tokenizer,
  ``name@version``; URL-encoded or not) on every route of every stack, for clients that
  send no ``model`` (llama.cpp's, TGI's, TEI's).
* An unknown model, in the body or in the path, is 404 in the stack's error shape on
  every stack (it was the default tokenizer with 200 on SGLang and TGI, 400 on llama.cpp).
* A request's own ``chat_template`` is refused on every chat route.
* The OpenAPI document's request schemas and the routes agree about which bodies are
  valid (a compat body has no ``tokenizer`` field, so ``tokenizer`` with ``model`` is an
  ignored field, not a schema violation).
"""

from __future__ import annotations

import jsonschema
import pytest

from tokserve.service.operations.compat import llamacpp, sglang, tei, tgi, vllm

CHAT = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"},
        {"role": "user", "content": "How are you?"}]

#: (stack module, POST route, a body without `model`, the ids in its answer)
ROUTES = [
    (vllm, "tokenize", {"prompt": "hello world"}, lambda b: b["tokens"]),
    (vllm, "detokenize", {"tokens": [24912, 2375]}, lambda b: b["prompt"]),
    (sglang, "tokenize", {"prompt": "hello world"}, lambda b: b["tokens"]),
    (sglang, "v1/tokenize", {"prompt": ["hello", "world"]}, lambda b: b["tokens"]),
    (sglang, "detokenize", {"tokens": [24912, 2375]}, lambda b: b["text"]),
    (sglang, "v1/detokenize", {"tokens": [[24912], [2375]]}, lambda b: b["text"]),
    (llamacpp, "tokenize", {"content": "hello world"}, lambda b: b["tokens"]),
    (llamacpp, "detokenize", {"tokens": [24912, 2375]}, lambda b: b["content"]),
    (tgi, "tokenize", {"inputs": "hello world"}, lambda b: [t["id"] for t in b]),
    (tei, "tokenize", {"inputs": "hello world"}, lambda b: [t["id"] for t in b[0]]),
    (tei, "decode", {"ids": [24912, 2375]}, lambda b: b),
]
CHAT_ROUTES = [
    (vllm, "tokenize", {"messages": CHAT}),
    (vllm, "v1/chat/completions/render", {"messages": CHAT}),
    (sglang, "tokenize", {"messages": CHAT}),
    (sglang, "v1/tokenize", {"messages": CHAT}),
    (llamacpp, "apply-template", {"messages": CHAT}),
    (tgi, "chat_tokenize", {"messages": CHAT}),
]
GETS = [(vllm, "tokenizer_info"), (vllm, "v1/models"), (vllm, "health"),
        (sglang, "get_model_info"), (sglang, "v1/models"), (sglang, "health"),
        (llamacpp, "props"), (llamacpp, "health"), (tgi, "info"), (tgi, "health")]

NAMES = {  # a base URL's name, as a client writes it -> the tokenizer that serves it
    "gpt-4o": "o200k_base@1", "o200k_base@1": "o200k_base@1", "gpt-4": "cl100k_base@1",
    "openai%2Fgpt-oss-20b": "o200k_harmony@1", "openai/gpt-oss-120b": "o200k_harmony@1",
    "deepseek-ai%2FDeepSeek-V4-Pro": "deepseek-v4@1",
}


def _id(case) -> str:
    return f"{case[0].DIALECT.name}-{case[1]}"


def _shape(stack, r) -> None:
    stack.DIALECT.error_model.model_validate_json(r.content)


@pytest.mark.parametrize("case", ROUTES, ids=_id)
def test_a_base_url_per_model_serves_every_route(client, case):
    stack, route, body, answer = case
    for name, tokenizer in NAMES.items():
        path = f"/compat/{stack.DIALECT.name}/models/{name}/{route}"
        r = client.post(path, json=body)
        assert r.status_code == 200, (path, r.text[:300])
        assert r.headers["x-tokenizer"] == tokenizer
        model = name.replace("%2F", "/")
        same = client.post(f"/compat/{stack.DIALECT.name}/{route}", json={**body, "model": model})
        assert answer(r.json()) == answer(same.json()), path
        # the body may name the same tokenizer again (another of its names too)
        again = client.post(path, json={**body, "model": tokenizer})
        assert again.status_code == 200 and answer(again.json()) == answer(r.json())


@pytest.mark.parametrize("case", CHAT_ROUTES, ids=_id)
def test_chat_routes_under_a_base_url_render_its_template(client, case):
    stack, route, body = case
    plain = client.post(f"/compat/{stack.DIALECT.name}/{route}",
                        json={**body, "model": "deepseek-v4"})
    pinned = client.post(f"/compat/{stack.DIALECT.name}/models/deepseek-ai%2FDeepSeek-V4-Flash/"
                         f"{route}", json=body)
    assert plain.status_code == pinned.status_code == 200, pinned.text[:300]
    assert pinned.headers["x-template-hash"] == plain.headers["x-template-hash"]
    for key in ("tokens", "token_ids", "prompt", "templated_text"):
        if key in plain.json():
            assert pinned.json()[key] == plain.json()[key]


@pytest.mark.parametrize("case", ROUTES + [c + (None,) for c in CHAT_ROUTES], ids=_id)
def test_an_unknown_model_is_404_in_the_stacks_shape(client, case):
    stack, route, body = case[:3]
    base = f"/compat/{stack.DIALECT.name}"
    for path, extra in ((f"{base}/{route}", {"model": "no-such-model"}),
                        (f"{base}/models/no-such-model/{route}", {}),
                        (f"{base}/models/no%2Fsuch/{route}", {}),
                        (f"{base}/models/gpt-4o/{route}", {"model": "gpt-4oo"}),
                        (f"{base}/models/o200k_base@9/{route}", {})):
        r = client.post(path, json={**body, **extra})
        assert r.status_code == 404, (path, r.text[:300])
        _shape(stack, r)


@pytest.mark.parametrize("case", GETS, ids=_id)
def test_discovery_routes_under_an_unknown_name_are_404(client, case):
    stack, route = case
    r = client.get(f"/compat/{stack.DIALECT.name}/models/no-such-model/{route}")
    assert r.status_code == 404, r.text[:300]
    _shape(stack, r)
    assert client.get(f"/compat/{stack.DIALECT.name}/models/gpt-4o/{route}").status_code == 200


def test_a_body_model_for_another_tokenizer_than_the_paths_is_refused(client):
    r = client.post("/compat/vllm/models/gpt-4o/tokenize",
                    json={"prompt": "x", "model": "deepseek-v4"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "model"
    r = client.post("/compat/tgi/models/gpt-4o/tokenize",
                    json={"inputs": "x", "model": "deepseek-v4"})
    assert r.status_code == 422 and r.json()["error_type"] == "validation"


def test_the_stacks_own_default_names_are_the_default_tokenizer(client):
    """SGLang's client sends ``model: "default"``; huggingface_hub's sends ``"tgi"``."""
    r = client.post("/compat/sglang/tokenize", json={"prompt": "hello world",
                                                     "model": "default"})
    assert r.status_code == 200 and r.headers["x-tokenizer"] == "o200k_base@1"
    r = client.post("/compat/tgi/tokenize", json={"inputs": "hello world", "model": "tgi"})
    assert r.status_code == 200 and r.headers["x-tokenizer"] == "o200k_base@1"


@pytest.mark.parametrize("case", CHAT_ROUTES, ids=_id)
def test_a_requests_chat_template_is_refused_on_every_chat_route(client, case):
    stack, route, body = case
    path = f"/compat/{stack.DIALECT.name}/{route}"
    body = {**body, "model": "deepseek-v4"}
    assert client.post(path, json=body).status_code == 200
    r = client.post(path, json={**body, "chat_template": "{{ messages[0].content }}"})
    assert r.status_code in (400, 422), r.text[:300]
    _shape(stack, r)
    assert "chat_template" in r.text


def test_request_schemas_and_routes_agree(client):
    """Bodies the document's schema accepts are served (or refused for their content,
    never as malformed); bodies it refuses are refused."""
    document = client.get("/openapi.json").json()
    cases = [
        ("/compat/sglang/detokenize", {"tokens": [1], "model": "gpt-4o", "tokenizer": "x"}),
        ("/compat/vllm/tokenize", {"prompt": "a", "model": "gpt-4o", "tokenizer": "x"}),
        ("/compat/vllm/detokenize", {"tokens": [1], "model": "gpt-4o", "tokenizer": "x"}),
        ("/compat/tgi/tokenize", {"inputs": "a", "model": "gpt-4o", "tokenizer": "x"}),
        ("/compat/tei/tokenize", {"inputs": ["a", "b"], "tokenizer": "x"}),
        ("/compat/tei/decode", {"ids": [[1], [2, 3]]}),
        ("/compat/tei/decode", {"ids": [1, [2]]}),
        ("/compat/tei/tokenize", {"inputs": 1}),
        ("/compat/sglang/detokenize", {"tokens": "x"}),
        ("/compat/vllm/tokenize", {"prompt": 1}),
    ]
    for path, body in cases:
        schema = document["paths"][path]["post"]["requestBody"]["content"][
            "application/json"]["schema"]
        accepted = jsonschema.Draft202012Validator({**document, **schema}).is_valid(body)
        r = client.post(path, json=body)
        assert accepted == (r.status_code == 200), (path, body, r.status_code, r.text[:200])


def test_per_model_requests_are_counted_under_their_route_template(client):
    client.post("/compat/vllm/models/openai%2Fgpt-oss-20b/tokenize", json={"prompt": "hi"})
    metrics = client.get("/metrics").text
    assert 'endpoint="/compat/vllm/models/{name}/tokenize"' in metrics
    assert "gpt-oss-20b/tokenize" not in metrics
