"""tokserve.client against real servers on loopback: every endpoint, every error code the
service produces over HTTP, sync and async, retries and backoff.

Servers: the zero-configuration one (``server``), one with auth, an admin token, small
limits and an artifact whose chat template raises (``strict``), one started empty
(503 on /healthz), a port nobody listens on, and a stdlib HTTP server standing in for a
load balancer that answers 503 while a pod drains (it counts the attempts).
"""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import json
import shutil
import socket
import sys
import threading
import time

import pytest

import tokserve
from tokserve import client as tc
from tokserve.service.runtime.settings import Settings

ADMIN = "admin-secret"
KEY = "api-secret"
MSGS = [{"role": "user", "content": "hi"}]
#: cl100k_base's token for the byte 0xE4 alone: the start of a 3-byte character
LONE_BYTE = tokserve.get_encoding("cl100k_base").encode_single_token(b"\xe4")


def raising_template_root(tmp_path, bundled):
    """A copy of deepseek-v4 whose chat template raises, as ``raising@1``."""
    version = tmp_path / "raising" / "1"
    shutil.copytree(bundled("deepseek-v4"), version)
    template = b"{{ raise_exception('this template refuses every conversation') }}"
    (version / "chat_template.jinja").write_bytes(template)
    manifest = json.loads((version / "manifest.json").read_text())
    digest = hashlib.sha256(template).hexdigest()
    manifest["name"] = "raising"
    manifest["files"]["chat_template.jinja"] = digest
    manifest["chat_templates"]["default"]["sha256"] = f"sha256:{digest}"
    (version / "manifest.json").write_text(json.dumps(manifest))
    return tmp_path


def run_async(main) -> None:
    """``asyncio.run(main())`` on a thread of its own: other suites (the browser tests'
    sync Playwright API) may leave an event loop running on this thread."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as e:  # noqa: BLE001 - re-raised on the test's thread
            failure.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


@pytest.fixture(scope="module")
def strict(live_server, bundled, tmp_path_factory):
    root = raising_template_root(tmp_path_factory.mktemp("roots"), bundled)
    settings = Settings(_env_file=None, auth_token=KEY, admin_token=ADMIN,
                        max_body_bytes=4096, max_text_chars=1000, artifacts=[root])
    with live_server(settings) as srv:
        yield srv


@pytest.fixture(scope="module")
def empty(live_server, tmp_path_factory):
    settings = Settings(_env_file=None, bundled_artifacts=None, allow_empty=True,
                        artifacts=[tmp_path_factory.mktemp("nothing")])
    with live_server(settings) as srv:
        yield srv


@pytest.fixture
def sync(server):
    with tc.Client(server.url) as c:
        yield c


@pytest.fixture
def secured(strict):
    with tc.Client(strict.url, api_key=KEY) as c:
        yield c


# ============================================================================ endpoints


def test_every_endpoint_sync(sync, o200k):
    res = sync.encode("hello world", return_offsets=True, return_tokens=True)
    assert isinstance(res, tc.EncodeResult)
    assert res.ids == o200k.encode("hello world") and res.count == 2
    assert res.offsets == [[0, 5], [5, 11]] and res.tokens == ["hello", " world"]
    assert res.tokenizer == "o200k_base@1" and res.tokenizer_hash == o200k.hash
    batch = sync.encode(texts=["a", "b c"], tokenizer="cl100k_base")
    assert isinstance(batch, tc.EncodeBatchResult) and batch.tokenizer == "cl100k_base@1"
    assert [r.ids for r in batch.results] == [[64], [65, 272]]
    assert sync.count("hello world") == 2
    assert sync.count(texts=["hello world", "a"]) == [2, 1]
    assert sync.count(messages=MSGS, tokenizer="deepseek-v4") == sync.render_chat(
        MSGS, tokenizer="deepseek-v4").count
    assert sync.decode([24912, 2375]) == "hello world"
    assert sync.decode(batch_ids=[[24912], [2375]]) == ["hello", " world"]
    chat = sync.render_chat(MSGS, tokenizer="deepseek-v4", add_generation_prompt=True,
                            return_assistant_mask=True)
    assert isinstance(chat, tc.RenderChatResult) and chat.template_hash.startswith("sha256:")
    assert chat.count == len(chat.ids) == len(chat.labels) and "hi" in chat.text
    listing = sync.tokenizers()
    assert listing.default == "o200k_base@1"
    assert {"o200k_base@1", "deepseek-v4@1"} <= {t.ref for t in listing.tokenizers}
    one = sync.tokenizer("cl100k_base@1")
    assert one.vocab_size == 100277 and one.manifest["name"] == "cl100k_base"
    assert sync.health()["status"] == "ok"
    assert "tokserve" in sync.metrics()


def test_every_endpoint_async(server, o200k):
    async def main():
        async with tc.AsyncClient(server.url) as c:
            res, counts, text, chat, listing, one, health, metrics = await asyncio.gather(
                c.encode("hello world"), c.count(texts=["hello world", "a"]),
                c.decode([24912, 2375]), c.render_chat(MSGS, tokenizer="deepseek-v4"),
                c.tokenizers(), c.tokenizer("o200k_base"), c.health(), c.metrics())
            assert res.ids == o200k.encode("hello world")
            assert counts == [2, 1] and text == "hello world"
            assert chat.count == len(chat.ids)
            assert listing.default == one.ref == "o200k_base@1"
            assert health["status"] == "ok" and "tokserve" in metrics
            assert (await c.encode(texts=["x"])).results[0].count == 1
            assert await c.decode(batch_ids=[[24912]]) == ["hello"]
            assert await c.count(messages=MSGS, tokenizer="deepseek-v4") == chat.count
    run_async(main)


def test_remote_encoding_is_the_local_encoding(sync):
    text = "<|endoftext|> hello <|fim_prefix|> there 🙂\n"
    for name in ("cl100k_base", "o200k_base"):
        local, remote = tokserve.get_encoding(name), sync.get_encoding(name)
        assert remote.name == local.name and remote.n_vocab == local.n_vocab
        for options in ({"allowed_special": "all"}, {"disallowed_special": ()},
                        {"allowed_special": {"<|fim_prefix|>"}, "disallowed_special": ()},
                        {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()}):
            assert remote.encode(text, **options) == local.encode(text, **options), options
        assert remote.encode_ordinary(text) == local.encode_ordinary(text)
        assert remote.encode_batch(["a b", "c"]) == local.encode_batch(["a b", "c"])
        assert remote.encode_ordinary_batch([text]) == local.encode_ordinary_batch([text])
        assert remote.decode(local.encode(text, allowed_special="all")) == text
        assert remote.decode_batch([[local.eot_token]]) == ["<|endoftext|>"]
        for options in ({}, {"disallowed_special": {"<|fim_prefix|>"}}):
            with pytest.raises(ValueError):
                remote.encode(text, **options)
            with pytest.raises(ValueError):
                local.encode(text, **options)
    assert sync.get_encoding().name == "o200k_base"  # the server's default


def test_remote_encoding_async(server):
    async def main():
        async with tc.AsyncClient(server.url) as c:
            remote = c.get_encoding("cl100k_base")
            local = tokserve.get_encoding("cl100k_base")
            text = "x <|endoftext|> y <|fim_middle|>"
            opts = {"allowed_special": {"<|fim_middle|>"}, "disallowed_special": ()}
            assert await remote.encode(text, **opts) == local.encode(text, **opts)
            assert await remote.encode_ordinary(text) == local.encode_ordinary(text)
            assert await remote.encode_batch(["a", "b"]) == local.encode_batch(["a", "b"])
            assert await remote.decode(local.encode("hi")) == "hi"
            assert await remote.count("hello world") == 2
            with pytest.raises(tc.SpecialTokenInText):
                await remote.encode(text)
    run_async(main)


# ============================================================================ errors


def _errors(c: tc.Client) -> dict[str, tuple[type, object]]:
    """Every error the service produces over HTTP: code -> (class, the call)."""
    return {
        "invalid_request": (tc.InvalidRequest, lambda: c.encode("x", offset_units="miles")),
        "special_token_in_text": (tc.SpecialTokenInText, lambda: c.count("<|endoftext|>")),
        "unknown_token_id": (tc.UnknownTokenId, lambda: c.decode([10**9])),
        "invalid_utf8": (tc.InvalidUtf8, lambda: c.decode([LONE_BYTE], errors="strict",
                                                          tokenizer="cl100k_base")),
        "reserved_literal_in_content": (
            tc.ReservedLiteralInContent,
            lambda: c.render_chat([{"role": "user", "content": "<｜end▁of▁sentence｜>"}],
                                  tokenizer="deepseek-v4")),
        "template_error": (tc.TemplateError, lambda: c.render_chat(MSGS, tokenizer="raising")),
        "tokenizer_not_found": (tc.UnknownTokenizer, lambda: c.count("x", tokenizer="nope")),
        "template_not_found": (tc.TemplateNotFound,
                               lambda: c.render_chat(MSGS, tokenizer="o200k_base")),
        "payload_too_large": (tc.PayloadTooLarge, lambda: c.count("x" * 2000)),
        "admin_disabled": (tc.NotFound, lambda: None),
    }


def test_every_error_code_sync(strict, secured):
    for code, (cls, call) in _errors(secured).items():
        if code == "admin_disabled":
            continue
        with pytest.raises(cls) as caught:
            call()
        err = caught.value
        assert isinstance(err, tc.TokserveError) and err.code == code, code
        assert err.status in (400, 404, 413, 422) and err.message
    with pytest.raises(tc.SpecialTokenInText) as caught:
        secured.count("a <|endoftext|>")
    assert caught.value.details["literals"] == ["<|endoftext|>"]
    with pytest.raises(tc.PayloadTooLarge) as caught:
        secured.count(texts=["y" * 3000] * 3)  # over the 4 KB body limit
    assert caught.value.status == 413
    # auth: no key, a wrong key, the admin route
    with tc.Client(strict.url) as anonymous:
        with pytest.raises(tc.Unauthorized) as caught:
            anonymous.count("x")
        assert caught.value.status == 401
    with tc.Client(strict.url, api_key="wrong") as wrong:
        with pytest.raises((tc.Unauthorized, tc.Forbidden)):
            wrong.count("x")
    with pytest.raises(tc.Forbidden) as caught:
        secured.reload("not the admin token")
    assert caught.value.status == 403
    assert secured.reload(ADMIN)["added"] == []


def test_routing_and_disabled_admin_errors(sync):
    with pytest.raises(tc.NotFound) as caught:
        sync.reload(ADMIN)  # the default server has no admin token: /admin is off
    assert caught.value.code == "admin_disabled" and caught.value.status == 404
    with pytest.raises(tc.NotFound) as caught:
        sync._run(tc.http.Call("GET", "/no/such/route", None, lambda b: b))
    assert caught.value.code == "not_found"
    with pytest.raises(tc.MethodNotAllowed) as caught:
        sync._run(tc.http.Call("DELETE", "/encode", None, lambda b: b))
    assert caught.value.status == 405
    with pytest.raises(TypeError, match="exactly one of"):
        sync.encode("a", texts=["b"])


def test_every_error_code_async(strict):
    async def main():
        async with tc.AsyncClient(strict.url, api_key=KEY) as c:
            checks = {
                "invalid_request": (tc.InvalidRequest, c.encode("x", offset_units="miles")),
                "special_token_in_text": (tc.SpecialTokenInText, c.count("<|endoftext|>")),
                "unknown_token_id": (tc.UnknownTokenId, c.decode([10**9])),
                "invalid_utf8": (tc.InvalidUtf8, c.decode([LONE_BYTE], errors="strict",
                                                          tokenizer="cl100k_base")),
                "reserved_literal_in_content": (tc.ReservedLiteralInContent, c.render_chat(
                    [{"role": "user", "content": "<｜end▁of▁sentence｜>"}],
                    tokenizer="deepseek-v4")),
                "template_error": (tc.TemplateError, c.render_chat(MSGS, tokenizer="raising")),
                "tokenizer_not_found": (tc.UnknownTokenizer, c.count("x", tokenizer="nope")),
                "template_not_found": (tc.TemplateNotFound, c.render_chat(MSGS)),
                "payload_too_large": (tc.PayloadTooLarge, c.count("x" * 2000)),
                "forbidden": (tc.Forbidden, c.reload("wrong")),
            }
            for code, (cls, pending) in checks.items():
                with pytest.raises(cls) as caught:
                    await pending
                assert caught.value.code == code
        async with tc.AsyncClient(strict.url) as anonymous:
            with pytest.raises(tc.Unauthorized):
                await anonymous.count("x")
    run_async(main)


def test_503_from_an_empty_server_is_retried_then_raised(empty):
    with tc.Client(empty.url, retries=2, backoff=0.01) as c:
        started = time.monotonic()
        with pytest.raises(tc.Unavailable) as caught:
            c.health()
        assert caught.value.status == 503 and caught.value.code == "no_artifacts"
        assert time.monotonic() - started >= 0.03  # two backoffs: 0.01 + 0.02
        with pytest.raises(tc.UnknownTokenizer):
            c.count("x")  # not a 503: no retry, the typed error at once

    async def main():
        async with tc.AsyncClient(empty.url, retries=1, backoff=0.01) as c:
            with pytest.raises(tc.Unavailable):
                await c.health()
    run_async(main)


class _Draining(http.server.BaseHTTPRequestHandler):
    """503 with Retry-After for the first ``fail`` requests, then 200: a pod draining
    behind a load balancer while its replacement starts."""

    fail = 2
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        if type(self).hits <= self.fail:
            body = b'{"error": {"code": "draining", "message": "come back later"}}'
            self.send_response(503)
            self.send_header("Retry-After", "0")
        else:
            body = b'{"status": "ok"}'
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_503_then_success_is_retried_with_retry_after():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Draining)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        with tc.Client(url, retries=3, backoff=0.01) as c:
            assert c.health() == {"status": "ok"}
        assert _Draining.hits == 3
        _Draining.hits = 0
        with tc.Client(url, retries=1, backoff=0.01) as c:
            with pytest.raises(tc.Unavailable) as caught:
                c.health()
        assert caught.value.code == "draining" and _Draining.hits == 2
    finally:
        httpd.shutdown()


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_errors_are_retried_with_backoff_then_typed():
    url = f"http://127.0.0.1:{_dead_port()}"
    with tc.Client(url, retries=3, backoff=0.02, max_backoff=0.05) as c:
        started = time.monotonic()
        with pytest.raises(tc.TokserveConnectionError) as caught:
            c.count("x")
        waited = time.monotonic() - started
    assert caught.value.status == 0 and "POST /count" in caught.value.message
    assert 0.02 + 0.04 + 0.05 <= waited < 5  # backoffs 0.02, 0.04, then the 0.05 cap

    async def main():
        async with tc.AsyncClient(url, retries=0) as c:
            with pytest.raises(tc.TokserveConnectionError):
                await c.count("x")
    run_async(main)


def test_unknown_codes_keep_everything_the_server_said():
    err = tc.errors.error_from_response(
        418, {"error": {"code": "teapot", "message": "short and stout", "spout": 1}}, "rid")
    assert type(err) is tc.TokserveError
    assert (err.status, err.code, err.message, err.details, err.request_id) == (
        418, "teapot", "short and stout", {"spout": 1}, "rid")
    assert isinstance(tc.errors.error_from_response(502, None), tc.ServerError)


def test_client_imports_no_web_framework():
    import subprocess
    import sys

    code = ("import sys, tokserve.client; "
            "bad = [m for m in ('fastapi', 'starlette', 'uvicorn', 'tokserve.service') "
            "if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-P", "-c", code], check=True)


def test_readme_python_examples_run(server, tmp_path):
    """Every ```python block of the README runs as written, in order, in a fresh
    interpreter as a reader would run it (the client's against a live server; the
    tiktoken shim's needs a process that has not imported tiktoken), and each
    ``expression  # value`` comment is the value it gives."""
    import re
    import subprocess

    from servers import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) >= 3
    checked = []
    for block in blocks:
        for line in block.replace("http://127.0.0.1:8000", server.url).splitlines():
            code, _, comment = line.partition("  # ")
            literal = re.match(r"\[[^\]]*\]|'[^']*'|\d+", comment.strip())
            value = literal.group() if literal else ""
            if value and code.strip():
                indent = code[: len(code) - len(code.lstrip())]
                checked.append(f"{indent}assert ({code.strip()}) == {value}, {code.strip()!r}")
            else:
                checked.append(line)
    script = tmp_path / "readme_examples.py"
    script.write_text("\n".join(checked), encoding="utf-8")
    result = subprocess.run([sys.executable, "-P", str(script)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]


def test_every_code_the_service_documents_has_its_client_exception():
    """The client's code table and the service's operation table agree: each error code an
    operation can answer with raises its own subclass, never the bare base class."""
    from tokserve.service.http.openapi import build

    document = build("0", auth=True, admin=True)
    codes = set()
    for path in document["paths"].values():
        for op in path.values():
            for status, response in op["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if status.startswith(("4", "5")) and "allOf" in schema:  # the contract's
                    codes |= set(schema["allOf"][1]["properties"]["error"]["properties"]
                                 ["code"]["enum"])  # (compat routes speak other shapes)
    assert "unsupported_media_type" in codes and "invalid_request" in codes
    missing = sorted(c for c in codes if c not in tc.BY_CODE)
    assert not missing, f"codes with no client exception: {missing}"
