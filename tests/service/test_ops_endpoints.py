"""GET /tokenizers, /tokenizers/{name}, /healthz, /metrics over real HTTP."""

from __future__ import annotations

import re


def test_tokenizers_lists_every_bundled_version(client, o200k):
    body = client.get("/tokenizers").json()
    assert body["default"] == "o200k_base@1"
    by_name = {t["name"]: t for t in body["tokenizers"]}
    assert {"o200k_base", "cl100k_base", "deepseek-v4"} <= set(by_name)
    o = by_name["o200k_base"]
    assert o["version"] == "1" and o["tokenizer_hash"] == o200k.hash
    assert o["vocab_size"] == o200k.vocab_size
    assert o["special_tokens"]["<|endoftext|>"] == 199999
    assert o["chat_templates"] == {}
    ds = by_name["deepseek-v4"]
    assert ds["chat_templates"] and all(
        re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in ds["chat_templates"].values())


def test_tokenizer_detail_includes_manifest(client):
    for spec in ("o200k_base", "o200k_base@1"):
        body = client.get(f"/tokenizers/{spec}").json()
        assert body["tokenizer"] == "o200k_base@1"
        assert body["manifest"]["name"] == "o200k_base" and "files" in body["manifest"]
    r = client.get("/tokenizers/nope")
    assert r.status_code == 404 and r.json()["error"]["code"] == "tokenizer_not_found"


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_metrics_exposes_requests_tokens_cache_artifacts(client):
    for _ in range(3):  # stored on the second sighting, a hit on the third
        client.post("/count", json={"text": "metrics please"})
    client.post("/encode", json={"text": "metrics please", "tokenizer": "cl100k_base"})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert re.search(r'tokserve_requests_total\{endpoint="/count",method="POST",status="200"\} '
                     r"[1-9]", text)
    assert 'tokserve_request_duration_seconds_bucket{endpoint="/count"' in text
    assert re.search(r'tokserve_tokens_total\{endpoint="/count",tokenizer="o200k_base@1"\} [1-9]',
                     text)
    assert 'tokserve_tokens_total{endpoint="/encode",tokenizer="cl100k_base@1"}' in text
    assert re.search(r'tokserve_cache_hits_total\{kind="text"\} [1-9]', text)
    assert re.search(r'tokserve_cache_misses_total\{kind="text"\} [1-9]', text)
    assert 'tokserve_artifacts_loaded{tokenizer="o200k_base@1"' in text
    client.get("/no/such/path")
    assert 'endpoint="unmatched"' in client.get("/metrics").text
