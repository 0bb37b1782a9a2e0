"""A client generated from the live server's /openapi.json works against that server.

openapi-python-client (the generator most Python users reach for) writes a package from
the document, once per module; the tests import it and call /count (text, texts and
chat), /encode and /decode through it, against the real server. Each answer must come
back as its own type with every field: a chat count as ``CountChatResponse`` with its
``method``, ``exact`` and ``message_counts`` (the generated parser tries a 200's shapes
in the document's order and keeps the first that parses), a text count as the plain one.

The generator runs offline (``--path``), in a second or two.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from tokserve.service.runtime.settings import Settings

PACKAGE = "tokserve_client"  # written as a bare package (--meta none) under this name
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"}, {"role": "user", "content": "and you?"}]


@pytest.fixture(scope="module")
def srv(live_server, bundled):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("o200k_base").parent.parent)
    with live_server(settings) as server:
        yield server


@pytest.fixture(scope="module")
def generated(srv, tmp_path_factory) -> Iterator[SimpleNamespace]:
    """The generated package, imported: ``.api`` (its operation modules by tag) and
    ``.models``, plus ``.client`` (a client on the live server) and the generator's log."""
    work = tmp_path_factory.mktemp("generated-client")
    (work / "openapi.json").write_text(srv.client.get("/openapi.json").text)
    (work / "config.json").write_text(json.dumps({"post_hooks": []}))  # no ruff needed
    out = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path",
         str(work / "openapi.json"), "--output-path", str(work / PACKAGE), "--meta", "none",
         "--config", str(work / "config.json")],
        capture_output=True, text=True, timeout=120, cwd=work, check=False)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    sys.path.insert(0, str(work))
    try:
        package = importlib.import_module(PACKAGE)
        api = SimpleNamespace(**{name: importlib.import_module(f"{PACKAGE}.api.tokenize.{name}")
                                 for name in ("count", "encode", "decode")})
        models = importlib.import_module(f"{PACKAGE}.models")
        client = package.Client(base_url=srv.url, raise_on_unexpected_status=True)
        with client:
            yield SimpleNamespace(api=api, models=models, client=client, log=log)
    finally:
        sys.path.remove(str(work))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_the_document_generates_without_warnings_but_the_ndjson_stream(generated):
    """openapi-python-client has no NDJSON support: the stream's 200 is its one warning."""
    warnings = [line for line in generated.log.splitlines() if line.startswith("WARNING")]
    assert warnings and all("/decode/stream" in line for line in warnings), generated.log


def test_a_chat_count_keeps_every_field(generated, srv):
    m = generated.models
    request = {"model": "gpt-4o", "messages": CHAT, "return_message_counts": True}
    answer = generated.api.count.sync(client=generated.client,
                                      body=m.CountBody.from_dict(request))
    raw = srv.client.post("/count", json=request).json()
    assert isinstance(answer, m.CountChatResponse)
    assert answer.method == m.CountChatResponseMethod.OPENAI_CHAT_FORMAT
    assert answer.exact is True and answer.model == "gpt-4o"
    assert answer.count == raw["count"]
    assert [(c.index, c.role, c.tokens) for c in answer.message_counts] == [
        (c["index"], c["role"], c["tokens"]) for c in raw["message_counts"]]
    assert answer.tools_tokens == raw["tools_tokens"]
    assert answer.template_tokens == raw["template_tokens"]
    assert (sum(c.tokens for c in answer.message_counts) + answer.tools_tokens
            + answer.template_tokens) == answer.count
    assert answer.to_dict() == raw  # nothing dropped, nothing added


def test_a_chat_count_by_template_keeps_its_method(generated, srv):
    m = generated.models
    request = {"tokenizer": "deepseek-v4", "messages": CHAT, "add_generation_prompt": True}
    answer = generated.api.count.sync(client=generated.client,
                                      body=m.CountBody.from_dict(request))
    assert isinstance(answer, m.CountChatResponse)
    assert answer.method == m.CountChatResponseMethod.CHAT_TEMPLATE
    assert answer.to_dict() == srv.client.post("/count", json=request).json()


def test_a_text_count_and_a_batch_count(generated, srv):
    m = generated.models
    answer = generated.api.count.sync(client=generated.client, body=m.CountBody(
        text="hello world"))
    assert isinstance(answer, m.CountResponse)
    assert answer.to_dict() == srv.client.post("/count", json={"text": "hello world"}).json()
    assert answer.count == 2
    batch = generated.api.count.sync(client=generated.client, body=m.CountBody(
        texts=["hello world", "a"], max_tokens=1))
    assert isinstance(batch, m.CountBatchResponse)
    assert batch.counts == [1, 1] and batch.total == 2 and batch.truncated == [True, False]


def test_encode_and_decode(generated, srv):
    m = generated.models
    answer = generated.api.encode.sync(client=generated.client, body=m.EncodeBody(
        text="hello world", return_offsets=True, return_tokens=True))
    assert isinstance(answer, m.EncodeResponse)
    raw = srv.client.post("/encode", json={"text": "hello world", "return_offsets": True,
                                           "return_tokens": True}).json()
    assert answer.to_dict() == raw
    assert answer.ids == [24912, 2375] and answer.offsets == [[0, 5], [5, 11]]
    batch = generated.api.encode.sync(client=generated.client, body=m.EncodeBody(
        texts=["hello", "world"]))
    assert isinstance(batch, m.EncodeBatchResponse) and len(batch.results) == 2
    text = generated.api.decode.sync(client=generated.client, body=m.DecodeBody(
        ids=answer.ids))
    assert isinstance(text, m.DecodeResponse) and text.text == "hello world"


def test_an_error_is_its_documented_type(generated):
    m = generated.models
    answer = generated.api.count.sync(client=generated.client, body=m.CountBody(
        text="a", tokenizer="no-such-tokenizer"))
    assert isinstance(answer, m.CountResponse404)
    assert answer.error.code == m.CountResponse404ErrorCode.TOKENIZER_NOT_FOUND
