"""The discovery and metadata routes each stack's clients call first, on every compat
base, in that stack's shape, with real values (issue 32, point 1).

The field sets are the stacks' own, read from their source: vLLM
``entrypoints/serve/tokenize/serving.py`` (``TokenizerInfo``) and ``openai/protocol.py``
(``ModelCard``, ``ModelPermission``), llama.cpp ``tools/server`` ``get_props``, TGI
``router/src/lib.rs`` ``Info``, SGLang ``entrypoints/http_server.py``
``get_model_info`` and ``protocol.py`` ``ModelCard``. Context lengths are checked for
every model name the server lists (``GET /models``) and against the published values.

lm-evaluation-harness's ``RemoteTokenizer``: ``lm-eval`` from PyPI pulls datasets,
pandas, pyarrow, scipy and scikit-learn, so it is not a test dependency. The exact HTTP
calls it makes (``lm_eval/utils.py`` 0.4.13: ``RemoteTokenizer`` and
``check_remote_tokenizer_support``) are replayed here always; when ``lm_eval`` is
importable (``pip install --no-deps lm-eval``: ``lm_eval.utils`` needs only numpy,
requests, pyyaml and jinja2), the real class is constructed against the vLLM base too.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

VLLM_CARD = {"id", "object", "created", "owned_by", "root", "parent", "max_model_len",
             "permission"}
VLLM_PERMISSION = {"id", "object", "created", "allow_create_engine", "allow_sampling",
                   "allow_logprobs", "allow_search_indices", "allow_view", "allow_fine_tuning",
                   "organization", "group", "is_blocking"}
SGLANG_CARD = {"id", "object", "created", "owned_by", "root", "parent", "max_model_len"}
SGLANG_MODEL_INFO = {"model_path", "tokenizer_path", "is_generation",
                     "preferred_sampling_params", "weight_version", "has_image_understanding",
                     "has_audio_understanding"}
LLAMACPP_PROPS = {"default_generation_settings", "total_slots", "model_alias", "model_path",
                  "modalities", "endpoint_slots", "endpoint_props", "endpoint_metrics", "webui",
                  "chat_template", "bos_token", "eos_token", "build_info"}
TGI_INFO = {"model_id", "model_sha", "model_pipeline_tag", "max_concurrent_requests",
            "max_best_of", "max_stop_sequences", "max_input_tokens", "max_total_tokens",
            "validation_workers", "max_client_batch_size", "router", "version", "sha",
            "docker_label"}

#: published context windows (the one table: service/operations/compat/context.py)
KNOWN = {"gpt-4o": 128000, "gpt-4o-mini": 128000, "gpt-4": 8192, "gpt-3.5-turbo": 16385,
         "openai/gpt-oss-20b": 131072, "openai/gpt-oss-120b": 131072,
         "deepseek-v4": 1048576, "deepseek-ai/DeepSeek-V4-Pro": 1048576,
         "gpt-4o-2024-08-06": 128000, "o200k_base": 128000, "o200k_harmony@1": 131072}


def _base(stack: str, name: str | None = None) -> str:
    return f"/compat/{stack}" + (f"/models/{quote(name, safe='')}" if name else "")


@pytest.fixture(scope="module")
def model_names(client):
    names = [row["model"] for row in client.get("/models").json()["models"] if row["served"]]
    assert len(names) > 40  # tiktoken's table and the manifests' names
    return names


def _lengths(client, name: str | None) -> dict[str, int]:
    """The context length each discovery route reports for ``name`` (a base URL's)."""
    out = {
        "vllm tokenizer_info": client.get(_base("vllm", name) + "/tokenizer_info").json()[
            "model_max_length"],
        "vllm tokenize": client.post(_base("vllm", name) + "/tokenize",
                                     json={"prompt": "x"}).json()["max_model_len"],
        "sglang tokenize": client.post(_base("sglang", name) + "/tokenize",
                                       json={"prompt": "x"}).json()["max_model_len"],
        "llamacpp props": client.get(_base("llamacpp", name) + "/props").json()[
            "default_generation_settings"]["n_ctx"],
        "tgi info": client.get(_base("tgi", name) + "/info").json()["max_total_tokens"],
    }
    for stack in ("vllm", "sglang"):
        (card,) = client.get(_base(stack, name) + "/v1/models").json()["data"]
        out[f"{stack} v1/models"] = card["max_model_len"]
    return out


def test_every_served_model_has_a_positive_context_length_everywhere(client, model_names):
    for name in model_names:
        lengths = _lengths(client, name)
        assert len(set(lengths.values())) == 1 and min(lengths.values()) > 0, (name, lengths)
    for name, expected in KNOWN.items():
        assert set(_lengths(client, name).values()) == {expected}, name
    # a request's own `model` gets its model's length, as a base URL's name does
    r = client.post("/compat/vllm/tokenize", json={"prompt": "x", "model": "gpt-4"})
    assert r.json()["max_model_len"] == 8192
    r = client.post("/compat/sglang/tokenize", json={"prompt": "x", "model": "gpt-3.5-turbo"})
    assert r.json()["max_model_len"] == 16385


def test_models_lists_put_the_default_first_with_each_length(client, model_names):
    for stack, card_keys, owner in (("vllm", VLLM_CARD, "vllm"),
                                    ("sglang", SGLANG_CARD, "sglang")):
        body = client.get(f"/compat/{stack}/v1/models").json()
        assert body["object"] == "list"
        cards = body["data"]
        assert cards[0]["id"] == "o200k_base"  # the default: data[0] is what clients take
        assert {c["id"] for c in cards} >= set(model_names) | {"deepseek-v4", "cl100k_base"}
        for card in cards:
            assert set(card) == card_keys and card["object"] == "model"
            assert card["owned_by"] == owner and card["max_model_len"] > 0
            assert card["root"].endswith("@1")
        if stack == "vllm":
            (permission,) = cards[0]["permission"]
            assert set(permission) == VLLM_PERMISSION
    one = client.get("/compat/vllm/models/openai%2Fgpt-oss-20b/v1/models")
    assert [c["id"] for c in one.json()["data"]] == ["openai/gpt-oss-20b"]
    assert one.headers["x-tokenizer"] == "o200k_harmony@1"


def test_vllm_tokenizer_info_is_the_tokenizers_config(client, bundled):
    import json

    info = client.get("/compat/vllm/models/deepseek-v4/tokenizer_info").json()
    config = json.loads((bundled("deepseek-v4") / "tokenizer_config.json").read_text())
    assert info["tokenizer_class"] == config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert info["bos_token"] == config["bos_token"]["content"] == "<｜begin▁of▁sentence｜>"
    assert info["eos_token"] == info["pad_token"] == "<｜end▁of▁sentence｜>"
    assert info["legacy"] is True and info["add_bos_token"] is False
    assert info["chat_template"] == (bundled("deepseek-v4") / "chat_template.jinja").read_text()
    harmony = client.get("/compat/vllm/models/openai%2Fgpt-oss-120b/tokenizer_info").json()
    assert harmony["eos_token"] == "<|return|>" and harmony["bos_token"] == "<|startoftext|>"
    assert harmony["name_or_path"] == "openai/gpt-oss-120b" and "chat_template" in harmony
    plain = client.get("/compat/vllm/tokenizer_info").json()  # the default: o200k_base
    assert plain["eos_token"] == "<|endoftext|>" and "chat_template" not in plain


def test_llamacpp_props_tgi_info_and_sglang_model_info(client, bundled):
    props = client.get("/compat/llamacpp/models/deepseek-v4/props").json()
    assert set(props) == LLAMACPP_PROPS
    assert props["bos_token"] == "<｜begin▁of▁sentence｜>"
    assert props["eos_token"] == "<｜end▁of▁sentence｜>"
    assert props["chat_template"] == (bundled("deepseek-v4") / "chat_template.jinja").read_text()
    assert props["model_alias"] == "deepseek-v4" and props["model_path"] == "deepseek-v4@1"
    assert client.get("/compat/llamacpp/props").json()["chat_template"] == ""  # o200k_base
    info = client.get("/compat/tgi/models/gpt-4o-mini/info").json()
    assert set(info) == TGI_INFO and info["model_id"] == "gpt-4o-mini"
    assert info["max_input_tokens"] == 127999 and info["max_total_tokens"] == 128000
    model = client.get("/compat/sglang/models/deepseek-v4@1/get_model_info").json()
    assert set(model) == SGLANG_MODEL_INFO and model["tokenizer_path"] == "deepseek-v4@1"


def test_health_routes_answer_as_each_stack_does(client):
    for stack in ("vllm", "sglang", "tgi"):  # 200 and no body
        for base in (_base(stack), _base(stack, "gpt-4o")):
            r = client.get(base + "/health")
            assert r.status_code == 200 and r.content == b"", (base, r.text)
            assert "content-type" not in r.headers
    for base in ("/compat/llamacpp", "/compat/llamacpp/models/gpt-4o"):
        r = client.get(base + "/health")
        assert r.status_code == 200 and r.json() == {"status": "ok"}
    r = client.head("/compat/vllm/models/openai%2Fgpt-oss-20b/tokenizer_info")
    assert r.status_code == 200 and r.content == b"" and int(r.headers["content-length"]) > 0


def test_per_model_paths_are_refused_in_their_stacks_shape(live_server):
    """The layers before the operation (bearer check, readiness) answer a per-model path
    in its stack's error shape, as they answer its base path."""
    from tokserve.service.runtime.settings import Settings

    with live_server(Settings(_env_file=None, auth_token="t")) as srv:
        r = srv.client.get("/compat/tgi/models/gpt-4o/info")  # no token: 401, TGI's shape
        assert r.status_code == 401 and set(r.json()) == {"error", "error_type"}
        r = srv.client.post("/compat/llamacpp/models/openai%2Fgpt-oss-20b/tokenize",
                            content=b'{"content": "x"}', headers={
                                "Authorization": "Bearer t", "Content-Type": "text/plain"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
        lifecycle = srv.server.config.app.lifecycle
        lifecycle.loaded = False  # as while artifacts load: the readiness layer answers
        try:
            r = srv.client.get("/compat/llamacpp/models/gpt-4o/props",
                               headers={"Authorization": "Bearer t"})
            assert r.status_code == 503 and r.json()["error"]["code"] == 503
            assert r.json()["error"]["type"] == "unavailable_error"
        finally:
            lifecycle.loaded = True
        r = srv.client.get("/compat/llamacpp/models/gpt-4o/props",
                           headers={"Authorization": "Bearer t"})
        assert r.status_code == 200


# ==== lm-evaluation-harness's RemoteTokenizer =================================================


def test_remote_tokenizer_http_calls_round_trip(server):
    """The calls of lm_eval/utils.py (0.4.13), in order, as ``requests`` makes them."""
    import httpx

    text = "Hello world! 東京 ∑ <｜end▁of▁sentence｜>"
    for base_url in (f"{server.url}/compat/vllm/models/deepseek-v4/v1/completions",
                     f"{server.url}/compat/vllm/models/deepseek-ai%2FDeepSeek-V4-Pro"):
        base = (base_url.replace("/v1/completions", "").replace("/v1/chat/completions", "")
                .rstrip("/"))
        with httpx.Client(headers={"Content-Type": "application/json"}) as session:
            # check_remote_tokenizer_support: tokenizer_info with an eos_token, then tokenize
            info = session.get(f"{base}/tokenizer_info")
            assert info.status_code == 200 and "eos_token" in info.json()
            test = session.post(f"{base}/tokenize",
                                json={"prompt": "test", "add_special_tokens": False})
            assert isinstance(test.json().get("tokens"), list)
            # RemoteTokenizer.__init__ (_validate_server), encode, decode, eos_token_id
            assert session.get(f"{base}/tokenizer_info").status_code == 200
            ids = session.post(f"{base}/tokenize", json={
                "prompt": text, "add_special_tokens": False}).json()["tokens"]
            assert session.post(f"{base}/detokenize",
                                json={"tokens": ids}).json()["prompt"] == text
            eos = info.json()["eos_token"]
            eos_ids = session.post(f"{base}/tokenize", json={
                "prompt": eos, "add_special_tokens": False}).json()["tokens"]
            assert eos_ids == [1]  # the literal is the special token, as vLLM's tokenizer has it


def test_remote_tokenizer_itself(server):
    utils = pytest.importorskip("lm_eval.utils")
    assert utils.check_remote_tokenizer_support(f"{server.url}/compat/vllm/models/deepseek-v4")
    tok = utils.RemoteTokenizer(f"{server.url}/compat/vllm/models/deepseek-v4/v1/completions")
    text = "Hello world! 東京 ∑"
    ids = tok.encode(text)
    assert tok.decode(ids) == text and tok(text) == {"input_ids": ids}
    assert tok.eos_token_id == 1 and tok.bos_token_id == 0
    assert tok.batch_decode([ids, ids[:1]]) == [text, "Hello"]
    default = utils.RemoteTokenizer(f"{server.url}/compat/vllm/v1/completions")
    assert default.encode("hello world") == [24912, 2375] and default.eos_token_id == 199999
