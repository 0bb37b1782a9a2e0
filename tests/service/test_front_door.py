"""Hostile HTTP input is refused cleanly, against real servers.

Nesting, parse cost and fairness, media types, CORS, bounded error bodies, bearer-scheme
parsing, HEAD and trailing slashes: each refusal is the contract's envelope with a
stable code, never a 500, and never at other clients' expense.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import orjson
import pytest

from tokserve.service.operations.parsing import MAX_DEPTH, MAX_LISTED
from tokserve.service.errors import MAX_ECHO, MAX_LIST
from tokserve.service.operations.table import OPERATIONS
from tokserve.service.runtime.settings import Settings

JSON = {"content-type": "application/json"}
CHAT = {"tokenizer": "deepseek-v4", "messages": [{"role": "user", "content": "hi"}]}
BODY_BY_PATH = {"/encode": {"text": "hi"}, "/count": {"text": "hi"}, "/decode": {"ids": [1]},
                "/render_chat": CHAT}


def _error(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert err["code"] == code, err
    return err


def _nested(depth: int) -> object:
    """A string inside ``depth - 1`` lists."""
    value: object = "x"
    for _ in range(depth - 1):
        value = [value]
    return value


# ---- nesting ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(BODY_BY_PATH))
@pytest.mark.parametrize("depth", [1200, 100_000])
def test_body_nested_past_the_parser_limit_is_422(client, path, depth):
    raw = b'{"text": ' + b"[" * depth + b"]" * depth + b"}"
    err = _error(client.post(path, content=raw, headers=JSON), 422, "invalid_request")
    assert str(MAX_DEPTH) in err["message"]


@pytest.mark.parametrize("path", ["/render_chat", "/count"])
@pytest.mark.parametrize("where", ["content", "tool_calls", "tools", "template_kwargs"])
def test_chat_fields_nested_past_the_limit_are_422(client, path, where):
    deep = _nested(500)
    body = {"tokenizer": "deepseek-v4", "messages": [{"role": "user", "content": "hi"}]}
    if where == "content":
        body["messages"][0]["content"] = deep
    elif where == "tool_calls":
        body["messages"].append({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": deep}}]})
    elif where == "tools":
        body["tools"] = [{"type": "function", "function": {"name": "f", "parameters": deep}}]
    else:
        body["template_kwargs"] = {"x": deep}
    err = _error(client.post(path, json=body), 422, "invalid_request")
    assert err["limit"] == MAX_DEPTH


def test_nesting_within_the_limit_is_served(client):
    """The body is level 1, `messages` 2, a message 3: its field's innermost list may be
    at level MAX_DEPTH, not one deeper."""
    body = {"tokenizer": "deepseek-v4", "messages": [
        {"role": "user", "content": "hi", "meta": _nested(MAX_DEPTH - 2)}]}
    assert client.post("/render_chat", json=body).status_code == 200
    body["messages"][0]["meta"] = _nested(MAX_DEPTH - 1)
    _error(client.post("/render_chat", json=body), 422, "invalid_request")


# ---- parse cost and fairness (a server process of its own: no shared GIL) -------------


def _million_unknown_keys() -> bytes:
    return b"{" + b",".join(b'"k%07d":1' % i for i in range(10**6)) + b"}"


@contextmanager
def _heap_frozen() -> Iterator[None]:
    """The probe times the server, but runs in this process, whose heap late in a full
    test run is large (every tokenizer earlier tests loaded): a full collection here
    would be counted as the server's latency. Frozen objects are not scanned."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _one_parse(body: bytes) -> float:
    """What one parse of ``body`` costs on this machine now: the slowest of three
    (`orjson.loads`, the step that holds the GIL throughout). The bounds below are
    multiples of it, so they hold on a slow or busy CI machine and still tell one
    parse's stall from several."""
    took = []
    for _ in range(3):
        start = time.perf_counter()
        orjson.loads(body)
        took.append(time.perf_counter() - start)
    return max(took)


def test_a_million_unknown_keys_neither_stalls_nor_starves(server_process):
    """orjson holds the GIL for a whole parse, so a concurrent /healthz may wait about
    that long, and no longer: whatever follows the parse must let the loop run (handing
    the million keys to pydantic in one call, say, would hold the GIL for seconds)."""
    body = _million_unknown_keys()
    assert len(body) > 12_000_000
    with server_process("--workers", "1") as srv, _heap_frozen():
        for parallel in (1, 4):
            parse = _one_parse(body)
            healthz_within = 2.5 * parse + 0.05
            answer_within = parallel * 3 * parse + 0.5
            answers: list[tuple[int, float, dict]] = []

            def post() -> None:
                start = time.perf_counter()
                r = httpx.post(srv.url + "/count", content=body, headers=JSON, timeout=60)
                answers.append((r.status_code, time.perf_counter() - start, r.json()))

            threads = [threading.Thread(target=post) for _ in range(parallel)]
            for t in threads:
                t.start()
            waits = []
            with httpx.Client(base_url=srv.url, timeout=60) as probe:
                while any(t.is_alive() for t in threads):
                    start = time.perf_counter()
                    assert probe.get("/healthz").status_code == 200
                    waits.append(time.perf_counter() - start)
                    time.sleep(0.02)
            for t in threads:
                t.join()
            assert len(answers) == parallel and waits
            for status, took, payload in answers:
                assert status == 422 and payload["error"]["code"] == "invalid_request"
                assert payload["error"]["errors_total"] == 10**6
                assert len(payload["error"]["errors"]) <= MAX_LIST
                assert took <= answer_within, (parallel, took, parse)
            assert max(waits) <= healthz_within, (parallel, max(waits), parse)


def test_unknown_fields_are_listed_with_their_total(client):
    body = {"text": "a", **{f"x{i}": 1 for i in range(30)}}
    err = _error(client.post("/encode", json=body), 422, "invalid_request")
    assert err["errors_total"] == 30 and 0 < len(err["errors"]) < 30
    assert err["errors"][0] == {"loc": ["x0"], "msg": "Extra inputs are not permitted",
                                "type": "extra_forbidden"}
    assert "(and 25 more)" in err["message"]


# ---- media types ---------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [
    "application/json", "application/json; charset=utf-8", "application/json;charset=UTF-8",
    'application/json; charset="utf-8"', "application/vnd.api+json", "Application/JSON"])
def test_json_media_types_are_accepted(client, content_type):
    r = client.post("/count", content=b'{"text": "hello"}', headers={"content-type": content_type})
    assert r.status_code == 200 and r.json()["count"] == 1


@pytest.mark.parametrize("content_type", [
    None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
    "application/json; charset=utf-16", "text/json", "application/jsonx"])
@pytest.mark.parametrize("path", sorted(BODY_BY_PATH))
def test_other_media_types_are_415(client, path, content_type):
    raw = json.dumps(BODY_BY_PATH[path]).encode()
    headers = {"content-type": content_type} if content_type else {}
    request = client.build_request("POST", path, content=raw, headers=headers)
    assert request.headers.get("content-type") == content_type
    _error(client.send(request), 415, "unsupported_media_type")


@pytest.mark.parametrize("raw", [
    '{"text": "hello"}'.encode("utf-16"), '{"text": "hello"}'.encode("utf-16-le"),
    '{"text": "hello"}'.encode("utf-32"), b"\xef\xbb\xbf" + b'{"text": "hello"}'])
def test_bodies_not_in_plain_utf8_are_refused(client, raw):
    r = client.post("/count", content=raw, headers=JSON)
    assert 400 <= r.status_code < 500 and r.json()["error"]["code"] == "invalid_json"


# ---- CORS ----------------------------------------------------------------------------------


def test_no_cors_headers_by_default(client):
    origin = {"origin": "https://evil.example"}
    for r in (client.post("/count", json={"text": "a"}, headers=origin),
              client.get("/tokenizers", headers=origin),
              client.options("/count", headers={**origin,
                                                "access-control-request-method": "POST"})):
        assert not any(k.lower().startswith("access-control-") for k in r.headers), r.headers


@pytest.fixture(scope="module")
def cors(live_server, bundled):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("o200k_base").parent.parent,
                        cors_origins=["https://app.example"])
    with live_server(settings) as srv:
        yield srv.client


def test_cors_allows_listed_origins_only(cors):
    ok = cors.post("/count", json={"text": "a"}, headers={"origin": "https://app.example"})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "https://app.example"
    other = cors.post("/count", json={"text": "a"}, headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_cors_preflight(cors):
    ask = {"access-control-request-method": "POST",
           "access-control-request-headers": "content-type, authorization"}
    ok = cors.options("/encode", headers={"origin": "https://app.example", **ask})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in ok.headers["access-control-allow-methods"]
    assert "content-type" in ok.headers["access-control-allow-headers"].lower()
    refused = cors.options("/encode", headers={"origin": "https://evil.example", **ask})
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers


def test_cors_origins_from_the_environment(monkeypatch):
    monkeypatch.setenv("TOKSERVE_CORS_ORIGINS", "https://a.example, https://b.example")
    assert Settings(_env_file=None).cors_origins == ["https://a.example", "https://b.example"]


# ---- bounded error bodies ------------------------------------------------------------------


def test_a_huge_tokenizer_name_is_not_echoed_whole(client):
    name = "n" * 100_000
    r = client.post("/count", json={"tokenizer": name, "text": "a"})
    err = _error(r, 404, "tokenizer_not_found")
    assert len(r.content) <= 2048
    assert len(err["tokenizer"]) <= MAX_ECHO


def test_many_special_literals_give_a_capped_list_with_totals(client):
    text = "x<|endoftext|>" * 20_000  # 280 kB
    r = client.post("/encode", json={"text": text})
    err = _error(r, 400, "special_token_in_text")
    assert err["literals"] == ["<|endoftext|>"]
    assert len(err["positions"]) == MAX_LIST and err["positions_total"] == 20_000
    assert len(err["occurrences"]) == MAX_LIST and err["occurrences_total"] == 20_000
    assert err["positions"][:2] == [1, 15]
    assert len(r.content) <= 4096


def test_batch_errors_name_the_field_sent_and_count_the_rest(client):
    ids = [0] + [10**9 + i for i in range(150)]
    err = _error(client.post("/decode", json={"batch_ids": [[1], ids]}), 400, "unknown_token_id")
    assert err["field"] == "batch_ids[1]" and err["index"] == 1
    assert err["message"].startswith("batch_ids[1]: ")
    assert "(and 140 more)" in err["message"]
    assert err["ids_total"] == 150 and len(err["ids"]) == MAX_LIST
    err = _error(client.post("/encode", json={"texts": ["a", "<|endoftext|>"]}), 400,
                 "special_token_in_text")
    assert err["field"] == "texts[1]"


def test_validation_errors_are_capped(client):
    r = client.post("/encode", json={"texts": [1] * 5000})
    err = _error(r, 422, "invalid_request")
    assert err["errors_total"] == 5000 and len(err["errors"]) <= MAX_LIST
    assert "(and 4999 more)" in err["message"]
    assert len(r.content) < 16_000


# ---- auth, HEAD, trailing slashes ----------------------------------------------------------


@pytest.fixture(scope="module")
def secured(live_server, bundled):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("o200k_base").parent.parent,
                        auth_token="s3cret")
    with live_server(settings) as srv:
        yield srv.client


@pytest.mark.parametrize("header", ["Bearer s3cret", "bearer s3cret", "BEARER s3cret",
                                    "Bearer  s3cret", "bEaReR s3cret"])
def test_bearer_scheme_is_case_insensitive(secured, header):
    assert secured.post("/count", json={"text": "a"},
                        headers={"authorization": header}).status_code == 200


@pytest.mark.parametrize("header", ["Bearer s3cre", "Bearer s3cret2", "Basic s3cret",
                                    "s3cret", "Bearer", "Bearers3cret"])
def test_wrong_credentials_are_401_with_a_challenge(secured, header):
    r = secured.post("/count", json={"text": "a"}, headers={"authorization": header})
    _error(r, 401, "unauthorized")
    assert r.headers["www-authenticate"] == "Bearer"


def test_head_works_on_every_get_route(client):
    paths = [op.path for op in OPERATIONS if op.method == "GET" and op.websocket is None]
    for path in paths + ["/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"]:
        path = path.replace("{name}", "o200k_base").replace("{asset}", "playground.js")
        get, head = client.get(path), client.head(path)
        assert get.status_code == head.status_code == 200, path
        assert head.content == b"" and head.headers.get("content-type") == get.headers.get(
            "content-type")  # none for a route without a body (the compat stacks' health)


def test_trailing_slash_is_404_never_a_redirect(client):
    for method, path in (("POST", "/encode/"), ("POST", "/count/"), ("GET", "/healthz/"),
                         ("GET", "/tokenizers/")):
        r = client.request(method, path, json={"text": "a"} if method == "POST" else None)
        _error(r, 404, "not_found")
        assert "location" not in r.headers


def test_a_million_wrong_items_are_answered_fast_with_a_capped_list(server_process):
    """The validator builds one error per wrong item; listing two million of them took
    minutes on the event loop. The answer counts them all and lists the first few."""
    body = b'{"texts": [' + b",".join([b"1"] * 2_000_000) + b"]}"
    with server_process("--workers", "1") as srv:
        start = time.perf_counter()
        r = httpx.post(srv.url + "/count", content=body, headers=JSON, timeout=60)
        took = time.perf_counter() - start
        err = _error(r, 422, "invalid_request")
        assert err["errors_total"] == 2_000_000 and len(err["errors"]) == MAX_LISTED
        assert err["errors"][0]["loc"] == ["texts", 0] and "(and 1999999 more)" in err["message"]
        assert took < 5, took
        assert srv.client.get("/healthz").status_code == 200
