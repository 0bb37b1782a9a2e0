"""Optional bearer auth: every route but /healthz when TOKSERVE_AUTH_TOKEN is set."""

from __future__ import annotations

import pytest
from tokserve.service.runtime.settings import Settings


@pytest.fixture(scope="module")
def secured(live_server, bundled):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("cl100k_base").parent.parent,
                        default_tokenizer="cl100k_base", auth_token="s3cret-token")
    with live_server(settings) as srv:
        yield srv.client


@pytest.mark.parametrize("method,path,body", [
    ("POST", "/encode", {"text": "a"}), ("POST", "/count", {"text": "a"}),
    ("POST", "/decode", {"ids": [1]}), ("GET", "/tokenizers", None),
    ("GET", "/tokenizers/cl100k_base", None), ("GET", "/metrics", None),
    ("POST", "/render_chat", {"messages": []}), ("GET", "/nope", None),
])
def test_auth_on_requires_bearer_token(secured, method, path, body):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
        r = secured.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (path, headers)
        assert r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
    ok = secured.request(method, path, json=body,
                         headers={"Authorization": "Bearer s3cret-token"})
    assert ok.status_code != 401


def test_auth_on_healthz_stays_open(secured):
    assert secured.get("/healthz").status_code == 200


def test_auth_on_request_succeeds_with_token(secured):
    r = secured.post("/count", json={"text": "hello"},
                     headers={"Authorization": "Bearer s3cret-token"})
    assert r.status_code == 200 and r.json()["count"] == 1


def test_auth_off_by_default(client):
    assert client.post("/count", json={"text": "hello"}).status_code == 200
    assert client.get("/metrics").status_code == 200
