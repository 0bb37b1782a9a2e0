"""Every error has the contract's shape: framework 404/405/422, 413 limits, 500."""

from __future__ import annotations

import socket

import pytest
from tokserve.service.runtime.settings import Settings


def _is_error(r, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert err["code"] == code and isinstance(err["message"], str) and err["message"]
    return err


def test_unknown_route_404_and_wrong_method_405(client):
    _is_error(client.get("/nope"), 404, "not_found")
    _is_error(client.get("/encode"), 405, "method_not_allowed")
    _is_error(client.delete("/tokenizers"), 405, "method_not_allowed")


@pytest.mark.parametrize("raw", [b"{bad", b"", b"\xff\xfe", b"[1, 2]", b'"text"', b"null"])
def test_malformed_json_is_422(client, raw):
    r = client.post("/encode", content=raw, headers={"content-type": "application/json"})
    _is_error(r, 422, "invalid_json")


@pytest.mark.parametrize("payload", [
    {},  # neither text nor texts
    {"text": "a", "texts": ["b"]},
    {"text": 5},
    {"text": "a", "special_tokens": "maybe"},
    {"text": "a", "offset_units": "bytes"},
    {"text": "a", "retrun_offsets": True},  # extra="forbid": typos are errors
    {"texts": "not a list"},
    {"text": "a", "return_offsets": "true"},  # flags are JSON booleans, nothing else
    {"text": "a", "return_offsets": 1},
    {"text": "a", "add_special_tokens": "on"},
])
def test_schema_mismatch_is_422_with_location(client, payload):
    err = _is_error(client.post("/encode", json=payload), 422, "invalid_request")
    assert err["errors"] and all({"loc", "msg", "type"} <= set(e) for e in err["errors"])


def test_count_rejects_text_and_messages_together(client):
    r = client.post("/count", json={"text": "a", "messages": [{"role": "user", "content": "x"}]})
    _is_error(r, 422, "invalid_request")


def test_decode_flag_must_be_boolean(client):
    r = client.post("/decode", json={"ids": [1], "skip_special_tokens": "yes"})
    _is_error(r, 422, "invalid_request")


def test_count_takes_a_render_chat_body_as_it_is(client):
    """API.md: a chat /count is "messages plus the chat fields of /render_chat"."""
    chat = {"tokenizer": "deepseek-v4", "messages": [{"role": "user", "content": "hi"}],
            "add_generation_prompt": True}
    rendered = client.post("/render_chat", json=chat).json()
    for extra in ({"return_ids": False}, {"return_assistant_mask": True},
                  {"return_offsets": True}):
        r = client.post("/count", json={**chat, **extra})
        assert r.status_code == 200, r.text
        assert r.json()["count"] == len(rendered["ids"])


@pytest.fixture(scope="module")
def small(live_server, bundled):
    root = bundled("cl100k_base").parent.parent
    settings = Settings(_env_file=None, bundled_artifacts=root, default_tokenizer="cl100k_base",
                        max_body_bytes=2000, max_text_chars=300, max_batch=3,
                        max_decode_ids=10)
    with live_server(settings) as srv:
        yield srv.client


def test_body_over_limit_is_413_by_content_length(small):
    r = small.post("/encode", json={"text": "x" * 5000})
    err = _is_error(r, 413, "payload_too_large")
    assert err["limit"] == 2000


def test_chunked_body_over_limit_is_413(small):
    def chunks():
        yield b'{"text": "'
        for _ in range(50):
            yield b"y" * 100
        yield b'"}'

    r = small.post("/encode", content=chunks(), headers={"content-type": "application/json"})
    _is_error(r, 413, "payload_too_large")


def test_huge_declared_body_is_refused_before_it_is_sent(small):
    # Declare 1 GB and send nothing: the answer must come without waiting for the body.
    host, port = small.base_url.host, small.base_url.port
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(b"POST /encode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000000000\r\n\r\n")
        head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 413")


def test_text_over_limit_is_413(small):
    err = _is_error(small.post("/encode", json={"text": "z" * 301}), 413, "payload_too_large")
    assert err["field"] == "text"
    err = _is_error(small.post("/count", json={"texts": ["a", "z" * 301]}), 413,
                    "payload_too_large")
    assert err["field"] == "texts[1]"


def test_chat_string_over_limit_is_413(small):
    """The per-text limit holds for chat input as for /encode texts."""
    for path in ("/render_chat", "/count"):
        body = {"tokenizer": "deepseek-v4", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "z" * 301}]}
        err = _is_error(small.post(path, json=body), 413, "payload_too_large")
        assert err["field"] == "messages[1].content"
        body["messages"][1]["content"] = "z" * 300
        assert small.post(path, json=body).status_code == 200


def test_batch_over_limit_is_413(small):
    err = _is_error(small.post("/encode", json={"texts": ["a"] * 4}), 413, "payload_too_large")
    assert err["field"] == "texts"


def test_decode_ids_over_limit_is_413(small):
    _is_error(small.post("/decode", json={"ids": [1] * 11}), 413, "payload_too_large")
    _is_error(small.post("/decode", json={"batch_ids": [[1] * 6, [1] * 6]}), 413,
              "payload_too_large")


def test_within_limits_is_served(small):
    r = small.post("/encode", json={"texts": ["a", "b", "c"]})
    assert r.status_code == 200 and r.json()["tokenizer"] == "cl100k_base@1"


def test_unexpected_exception_is_500_with_request_id_and_no_trace(live_server, bundled):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("cl100k_base").parent.parent,
                        default_tokenizer="cl100k_base")
    srv = live_server(settings)

    @srv.server.config.app.app.get("/boom")  # the FastAPI app inside ServiceMiddleware
    async def boom() -> None:
        raise RuntimeError("secret internals")

    with srv:
        r = srv.client.get("/boom")
    err = _is_error(r, 500, "internal_error")
    assert err["request_id"] and r.headers["x-request-id"] == err["request_id"]
    assert "secret" not in r.text and "Traceback" not in r.text


def test_request_id_is_echoed(client):
    r = client.get("/healthz", headers={"x-request-id": "abc123"})
    assert r.headers["x-request-id"] == "abc123"
    assert client.get("/healthz").headers["x-request-id"]
