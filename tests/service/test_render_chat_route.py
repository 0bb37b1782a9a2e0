"""/render_chat and /count-with-messages: template selection and wiring over HTTP.

The renderer itself (service.chat) is tested by its own files; here: 404s for templates,
the response shape, and /count == len(/render_chat ids).
"""

from __future__ import annotations

import importlib.util

import pytest

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
HAVE_CHAT = importlib.util.find_spec("tokserve.service.operations.chat") is not None
needs_chat = pytest.mark.skipif(not HAVE_CHAT, reason="service/operations/chat/__init__.py is missing")


def test_tokenizer_without_template_is_404_for_render_chat(client):
    r = client.post("/render_chat", json={"messages": MSGS})  # o200k_base has no template
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "template_not_found" and err["available"] == []


def test_openai_encoding_counts_chat_by_openai_accounting(client):
    """o200k_base and cl100k_base have no template: chat /count follows OpenAI's rule."""
    r = client.post("/count", json={"messages": MSGS})
    assert r.status_code == 200
    body = r.json()
    assert body["method"] == "openai-chat-format" and body["exact"] is True
    assert "template_hash" not in body


@pytest.mark.parametrize("endpoint", ["/render_chat", "/count"])
def test_unknown_template_name_is_404_listing_available(client, endpoint):
    r = client.post(endpoint, json={"tokenizer": "deepseek-v4", "messages": MSGS,
                                    "template": "nope"})
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "template_not_found" and "default" in err["available"]


def test_render_chat_schema_errors_are_422(client):
    for payload in ({"tokenizer": "deepseek-v4"},
                    {"tokenizer": "deepseek-v4", "messages": MSGS, "reserved_literals": "x"},
                    {"tokenizer": "deepseek-v4", "messages": MSGS, "add_generation_prompt": True,
                     "continue_final_message": True}):
        r = client.post("/render_chat", json=payload)
        assert r.status_code == 422, payload


@needs_chat
def test_render_chat_shape_and_count_agree(client):
    body = client.post("/render_chat", json={"tokenizer": "deepseek-v4", "messages": MSGS,
                                             "add_generation_prompt": True,
                                             "return_assistant_mask": True}).json()
    listing = client.get("/tokenizers/deepseek-v4").json()
    assert body["template_hash"] == listing["chat_templates"]["default"]
    assert body["tokenizer"] == "deepseek-v4@1" and isinstance(body["text"], str)
    assert body["count"] == len(body["ids"]) == len(body["labels"])
    counted = client.post("/count", json={"tokenizer": "deepseek-v4", "messages": MSGS,
                                          "add_generation_prompt": True}).json()
    assert counted["count"] == body["count"]
