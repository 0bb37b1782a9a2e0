"""Counting the way users ask: models by name, OpenAI chat counts, truncation.

References: tiktoken's own model table (``tiktoken.model``), the OpenAI Cookbook's
worked figures for its chat accounting ("How to count tokens with tiktoken": an example
conversation counted by the API itself), and the full /encode ids that a truncated
encode must be a prefix or suffix of.
"""

from __future__ import annotations

import json
import shutil

import httpx
import pytest
import tiktoken.model

from tokserve.service.runtime.settings import Settings

# ==== models by name ====================================================================


def test_models_lists_tiktokens_table_exactly(client):
    body = client.get("/models").json()
    rows = {r["model"]: r for r in body["models"]}
    tiktoken_rows = {m: r["tokenizer"] for m, r in rows.items() if r["source"] == "tiktoken"}
    assert tiktoken_rows == tiktoken.model.MODEL_TO_ENCODING
    assert [(p["prefix"], p["tokenizer"]) for p in body["prefixes"]] == \
        list(tiktoken.model.MODEL_PREFIX_TO_ENCODING.items())
    # every encoding tiktoken's table names is bundled, the GPT-2-era ones too
    assert all(rows[m]["served"] for m in tiktoken.model.MODEL_TO_ENCODING)
    manifest_rows = {m: r["tokenizer"] for m, r in rows.items() if r["source"] == "manifest"}
    assert manifest_rows["openai/gpt-oss-120b"] == "o200k_harmony"
    assert manifest_rows["deepseek-ai/DeepSeek-V4-Flash"] == "deepseek-v4"


@pytest.mark.parametrize("model,tokenizer", [
    ("gpt-4o", "o200k_base"), ("gpt-4o-2024-08-06", "o200k_base"), ("gpt-4", "cl100k_base"),
    ("gpt-3.5-turbo-0301", "cl100k_base"), ("gpt-oss-120b", "o200k_harmony"),
    ("openai/gpt-oss-20b", "o200k_harmony"), ("deepseek-ai/DeepSeek-V4-Pro", "deepseek-v4"),
    ("o200k_base", "o200k_base"),  # a tokenizer name is a fine model name too
])
@pytest.mark.parametrize("field", ["model", "tokenizer"])
def test_requests_by_model_name(client, model, tokenizer, field):
    r = client.post("/encode", json={field: model, "text": "hello world"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tokenizer"] == f"{tokenizer}@1"
    if model != tokenizer:
        assert body["model"] == model
    direct = client.post("/encode", json={"tokenizer": tokenizer, "text": "hello world"})
    assert body["ids"] == direct.json()["ids"] and "model" not in direct.json()


def test_every_operation_takes_a_model(client):
    chat = [{"role": "user", "content": "hi"}]
    for path, body in (("/count", {"text": "a"}), ("/decode", {"ids": [64]}),
                       ("/count", {"messages": chat}), ("/render_chat", {"messages": chat})):
        r = client.post(path, json={"model": "openai/gpt-oss-20b", **body})
        assert r.status_code == 200, (path, r.text)
        assert r.json()["model"] == "openai/gpt-oss-20b"
        assert r.json()["tokenizer"] == "o200k_harmony@1"


def test_unknown_model_is_404_with_close_matches(client):
    r = client.post("/encode", json={"model": "gpt4o", "text": "a"})
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "unknown_model" and "gpt-4o" in err["suggestions"]
    assert "gpt-4o" in err["message"]


def test_a_model_whose_tokenizer_is_not_served_names_it(live_server, bundled, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(bundled("o200k_base"), root / "o200k_base" / "1")
    settings = Settings(_env_file=None, bundled_artifacts="", artifacts=[root])
    with live_server(settings) as srv:
        assert not {r["model"]: r for r in srv.client.get("/models").json()["models"]}[
            "text-davinci-003"]["served"]
        r = srv.client.post("/encode", json={"model": "text-davinci-003", "text": "a"})
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "tokenizer_not_found" and err["tokenizer"] == "p50k_base"


def test_gpt2_era_models_are_served(client):
    r = client.post("/encode", json={"model": "text-davinci-003", "text": "hello world"})
    assert r.status_code == 200 and r.json()["ids"] == [31373, 995]  # tiktoken's example
    assert r.json()["tokenizer"] == "p50k_base@1"


def test_unknown_tokenizer_suggests_close_names(client):
    err = client.post("/encode", json={"tokenizer": "o200k_bas", "text": "a"}).json()["error"]
    assert err["code"] == "tokenizer_not_found" and "o200k_base" in err["suggestions"]


def test_tokenizer_and_model_together_are_422(client):
    r = client.post("/encode", json={"tokenizer": "o200k_base", "model": "gpt-4o", "text": "a"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"


# ==== OpenAI chat counts (the Cookbook's worked figures) ================================

COOKBOOK_MESSAGES = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that "
                                  "translates corporate jargon into plain English."},
    {"role": "system", "name": "example_user",
     "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant",
     "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user",
     "content": "Let's circle back when we have more bandwidth to touch base on "
                "opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant",
     "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the "
                                "ocean for the client deliverable."},
]
COOKBOOK_TOOLS = [{"type": "function", "function": {
    "name": "get_current_weather", "description": "Get the current weather in a given location",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string",
                     "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "description": "The unit of temperature to return",
                 "enum": ["celsius", "fahrenheit"]}},
        "required": ["location"]}}}]
COOKBOOK_TOOL_MESSAGES = [
    {"role": "system",
     "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.mark.parametrize("model,expected", [
    ("gpt-3.5-turbo", 129), ("gpt-4-0613", 129), ("gpt-4", 129), ("gpt-3.5-turbo-0301", 127),
    ("gpt-4o", 124), ("gpt-4o-mini", 124)])
def test_openai_chat_count_equals_the_cookbooks_figures(client, model, expected):
    r = client.post("/count", json={"model": model, "messages": COOKBOOK_MESSAGES,
                                    "return_message_counts": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["count"] == expected
    assert body["method"] == "openai-chat-format" and body["exact"] is True
    parts = sum(m["tokens"] for m in body["message_counts"])
    assert parts + body["tools_tokens"] + body["template_tokens"] == expected
    assert body["template_tokens"] == 3 and body["tools_tokens"] == 0
    assert [m["index"] for m in body["message_counts"]] == list(range(6))


@pytest.mark.parametrize("model,expected", [
    ("gpt-3.5-turbo", 105), ("gpt-4", 105), ("gpt-4o", 101), ("gpt-4o-mini", 101)])
def test_openai_chat_count_with_tools_equals_the_cookbooks_figures(client, model, expected):
    r = client.post("/count", json={"model": model, "messages": COOKBOOK_TOOL_MESSAGES,
                                    "tools": COOKBOOK_TOOLS, "return_message_counts": True})
    body = r.json()
    assert body["count"] == expected and body["exact"] is False  # tools: an estimate
    assert body["tools_tokens"] > 0
    assert sum(m["tokens"] for m in body["message_counts"]) + body["tools_tokens"] + \
        body["template_tokens"] == expected


def test_openai_chat_count_flags_images_as_estimates(client):
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]
    body = client.post("/count", json={"model": "gpt-4o", "messages": messages}).json()
    assert body["exact"] is False and body["count"] > 0


def test_openai_chat_count_takes_lone_surrogates_in_structured_values(client):
    """JSON allows lone-surrogate escapes and schemathesis sends them: a structured value
    (counted as its JSON text) holding one is counted like U+FFFD, as in any string;
    it was a 500 (orjson refuses to serialise it)."""
    def count(ch: str) -> httpx.Response:
        messages = [{"role": "user", "content": [{ch: "x"}, {"type": "text", "text": ch}]},
                    {"role": "assistant", "content": None,
                     "tool_calls": [{"function": {"arguments": ch}}]}]
        raw = json.dumps({"model": "gpt-4o", "messages": messages})  # \ud800 escapes
        return client.post("/count", content=raw, headers={"content-type": "application/json"})

    lone = count("\ud800")
    assert lone.status_code == 200, lone.text
    assert lone.json()["count"] == count("\ufffd").json()["count"]


def test_openai_chat_count_refuses_literals_by_default(client):
    messages = [{"role": "user", "content": "<|endoftext|>"}]
    r = client.post("/count", json={"model": "gpt-4o", "messages": messages})
    assert r.status_code == 400 and r.json()["error"]["code"] == "reserved_literal_in_content"
    escaped = client.post("/count", json={"model": "gpt-4o", "messages": messages,
                                          "reserved_literals": "escape"}).json()["count"]
    allowed = client.post("/count", json={"model": "gpt-4o", "messages": messages,
                                          "reserved_literals": "allow"}).json()["count"]
    assert escaped > allowed  # as text the literal is several tokens, as a special one


# ==== truncation ===========================================================================

TEXT = "Truncation keeps ids, offsets and tokens aligned: héllo wörld 😀 東京 " * 5


@pytest.fixture(scope="module")
def bos_eos(live_server, bundled, tmp_path_factory):
    """A server with a tokenizer whose post-processor adds a BOS, as Llama 3's does
    (cl100k's ranks; tiktoken-format artifacts add no EOS)."""
    from tokserve.authoring.importers import import_tiktoken

    root = tmp_path_factory.mktemp("artifacts")
    import_tiktoken(bundled("cl100k_base") / "cl100k_base.tiktoken", root, "wrapped", "1",
                    preset="cl100k_base", bos_token="<|fim_prefix|>",
                    eos_token="<|fim_suffix|>", add_bos_token=True)
    settings = Settings(_env_file=None, artifacts=[root], default_tokenizer="wrapped")
    with live_server(settings) as srv:
        yield srv.client


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("add_special", [False, True])
@pytest.mark.parametrize("units", ["char", "utf16", "byte"])
def test_truncated_encode_is_a_slice_of_the_full_encode(bos_eos, side, add_special, units):
    common = {"text": TEXT, "return_offsets": True, "offset_units": units,
              "return_tokens": True, "add_special_tokens": add_special}
    full = bos_eos.post("/encode", json=common).json()
    n = full["count"]
    before, after = (1, 0) if add_special else (0, 0)
    if add_special:
        assert full["ids"][0] == 100258 and full["ids"][-1] != 100260
    for limit in (0, 1, 2, 7, n - 1, n, n + 5):
        cut = bos_eos.post("/encode", json={**common, "max_tokens": limit,
                                            "truncation": side}).json()
        keep = min(limit, n)
        assert cut["count"] == len(cut["ids"]) == keep
        assert cut["original_count"] == n and cut["truncated"] == (limit < n)
        if limit >= n:
            sel = list(range(n))
        elif keep >= before + after:  # BOS stays; the text's own tokens are cut
            rest = keep - before - after
            text = range(before, n - after)
            kept = text[:rest] if side == "right" else text[len(text) - rest:]
            sel = list(range(before)) + list(kept) + list(range(n - after, n))
        else:
            sel = list(range(keep)) if side == "right" else list(range(n - keep, n))
        assert cut["ids"] == [full["ids"][i] for i in sel]
        assert cut["offsets"] == [full["offsets"][i] for i in sel]  # offsets unchanged
        assert cut["tokens"] == [full["tokens"][i] for i in sel]


def test_truncated_count_and_batches(client):
    full = client.post("/count", json={"texts": [TEXT, "short"]}).json()["counts"]
    r = client.post("/count", json={"texts": [TEXT, "short"], "max_tokens": 3}).json()
    assert r["counts"] == [3, min(3, full[1])] and r["total"] == sum(r["counts"])
    assert r["original_counts"] == full and r["truncated"] == [full[0] > 3, full[1] > 3]
    one = client.post("/count", json={"text": TEXT, "max_tokens": 3}).json()
    assert one["count"] == 3 and one["original_count"] == full[0] and one["truncated"]
    enc = client.post("/encode", json={"texts": [TEXT, "short"], "max_tokens": 3,
                                       "truncation": "left"}).json()["results"]
    assert [e["count"] for e in enc] == r["counts"]
    plain = client.post("/count", json={"text": TEXT}).json()
    assert "truncated" not in plain and "original_count" not in plain
