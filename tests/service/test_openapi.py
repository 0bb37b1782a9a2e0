"""The OpenAPI document tells the truth about the running service.

* What is served and what is documented are the same set of (method, path), both ways:
  the routes the app really has, and what a live server answers, against the document.
* Real responses of every operation, in each of its modes and for each error status it
  can produce, validate against the schema the document gives for that status (the error
  ``code`` enums included).
* The "exactly one of" rules are in the document: bodies it accepts are never a 422, and
  bodies it refuses are refused by the server.
* The docs pages load their assets from the service itself.
* The document is valid OpenAPI 3.1 (openapi-spec-validator) and written for the tools
  that read it: a client that tries a 200's shapes in order keeps the right one; shared
  schemas carry no ``default`` (openapi-typescript would type such a field as always
  present); the NDJSON answer has its line schema; tags come in the order users look
  for them. (Generating a client from it: test_generated_client.py; the pages in a
  browser: tests/browser/test_api_docs.py.)
"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from compat_recorded import COMPAT_RECORDED
from openapi_spec_validator import validate as validate_openapi

from tokserve import __version__
from tokserve.service.http.app import create_app
from tokserve.service.http.openapi import build as build_document
from tokserve.service.operations.table import DOCS_PATHS, OPERATIONS
from tokserve.service.runtime.settings import Settings

ADMIN = "admin-token"


@pytest.fixture(scope="module")
def srv(live_server, bundled, tmp_path_factory):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("o200k_base").parent.parent,
                        admin_token=ADMIN, max_text_chars=50_000, max_decode_ids=10_000)
    with live_server(settings) as server:
        yield server


@pytest.fixture(scope="module")
def document(srv):
    doc = srv.client.get("/openapi.json").json()
    jsonschema.Draft202012Validator.check_schema({"$defs": doc["components"]["schemas"]})
    return doc


SEQUENTIAL = ("application/x-ndjson", "application/jsonl")


def _validate(document: dict, method: str, template: str, response) -> None:
    """``response`` matches the document's schema for its status and media type, and a
    client trying the schema's ``oneOf`` shapes in order keeps the one it matches."""
    op = document["paths"][template][method.lower()]
    status = str(response.status_code)
    assert status in op["responses"], f"{method} {template}: {status} is not documented"
    content = op["responses"][status].get("content")
    if not content:  # documented without a body (the compat stacks' health)
        assert response.content == b"" and "content-type" not in response.headers
        return
    media = response.headers["content-type"].split(";")[0].strip()
    assert media in content, f"{method} {template} {status}: {media} not in {list(content)}"
    schema = content[media]["schema"]
    if media in SEQUENTIAL:  # the body read as the array of its lines (OpenAPI 3.2)
        body = [json.loads(line) for line in response.text.splitlines()]
        assert content[media]["x-itemSchema"] == schema["items"]
        items = body
    else:
        body = response.json() if media == "application/json" else response.text
        items = [body]
    # The document is the root, so its "#/components/..." references resolve as they are.
    jsonschema.validate(body, {**document, **schema},
                        cls=jsonschema.Draft202012Validator)
    one_of = (schema["items"] if media in SEQUENTIAL else schema).get("oneOf")
    for item in items if one_of else ():
        if isinstance(item, dict):
            _first_parsing_branch_is_the_right_one(document, one_of, item)


def _first_parsing_branch_is_the_right_one(document: dict, branches: list, body) -> None:
    """What a generated client (openapi-python-client) does with a ``oneOf``: try each
    shape in order, keep the first whose required fields are all there. That must be the
    shape the body really is (the one it validates against)."""
    def shape(branch: dict) -> dict:
        name = branch["$ref"].rsplit("/", 1)[1]
        return document["components"]["schemas"][name]

    first = next(b for b in branches if set(shape(b).get("required", ())) <= set(body))
    assert jsonschema.Draft202012Validator({**document, **first}).is_valid(body), (
        f"a client trying {[b['$ref'] for b in branches]} in order reads {body} as "
        f"{first['$ref']}")


def test_document_metadata(document):
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == __version__
    assert {"bearer", "adminBearer"} <= set(document["components"]["securitySchemes"])
    assert all(op.get("tags") for path in document["paths"].values() for op in path.values())


def test_served_routes_and_documented_operations_are_the_same(document):
    app = create_app(Settings(_env_file=None))
    served = set()
    for route in app.app.routes:
        if route.path in DOCS_PATHS or route.path.startswith("/docs/static"):
            continue
        methods = getattr(route, "methods", None) or {"GET"}  # a WebSocket is a GET upgrade
        served |= {(m, route.path) for m in methods - {"HEAD"}}
    documented = {(m.upper(), path) for path, ops in document["paths"].items() for m in ops}
    assert served == documented
    assert documented == {(op.method, op.path) for op in OPERATIONS}
    for op in OPERATIONS:  # every path template's parameter is declared, and only those
        assert set(re.findall(r"{(\w+)}", op.path)) == set(op.path_params), op.path


def test_every_documented_operation_is_answered(srv, document):
    for path, ops in document["paths"].items():
        for method in ops:
            url = path.replace("{name}", "o200k_base").replace("{asset}", "playground.css")
            r = srv.client.request(method.upper(), url, json={} if method == "post" else None)
            assert r.status_code not in (404, 405) or r.json()["error"]["code"] not in (
                "not_found", "method_not_allowed"), (method, path, r.text)


def test_undocumented_paths_are_404(srv):
    for path in ("/v1/encode", "/encode/x", "/admin", "/admin/other", "/internal"):
        r = srv.client.post(path, json={})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"}]
ADMIN_HEADER = {"Authorization": f"Bearer {ADMIN}"}

#: (method, documented path, concrete path, json body, headers, expected status)
RECORDED = [
    ("POST", "/encode", "/encode", {"text": "hello world"}, None, 200),
    ("POST", "/encode", "/encode", {"text": "héllo 😀", "return_offsets": True,
                                    "offset_units": "utf16", "return_tokens": True}, None, 200),
    ("POST", "/encode", "/encode", {"texts": ["a", "b c"], "return_offsets": True}, None, 200),
    ("POST", "/encode", "/encode", {"text": "<|endoftext|>"}, None, 400),
    ("POST", "/encode", "/encode", {"text": "a", "tokenizer": "nope"}, None, 404),
    ("POST", "/encode", "/encode", {"text": "a", "model": "gpt-4oo"}, None, 404),
    ("POST", "/encode", "/encode", {"text": "hello world", "model": "gpt-4o", "max_tokens": 1,
                                    "return_offsets": True, "return_tokens": True}, None, 200),
    ("POST", "/encode", "/encode", {"texts": ["hello world"], "tokenizer": "gpt-4",
                                    "max_tokens": 1, "truncation": "left"}, None, 200),
    ("POST", "/encode", "/encode", {"text": "a" * 50_001}, None, 413),
    ("POST", "/encode", "/encode", {"text": 1}, None, 422),
    ("POST", "/encode", "/encode", "not json", None, 422),
    ("POST", "/encode", "/encode", {"text": "a"}, {"content-type": "text/plain"}, 415),
    ("POST", "/count", "/count", {"text": "hello world"}, None, 200),
    ("POST", "/count", "/count", {"texts": ["a", "b c"]}, None, 200),
    ("POST", "/count", "/count", {"tokenizer": "deepseek-v4", "messages": CHAT}, None, 200),
    ("POST", "/count", "/count", {"messages": CHAT}, None, 200),  # OpenAI's accounting
    ("POST", "/count", "/count", {"model": "gpt-4o", "messages": CHAT, "max_tokens": 100,
                                  "fit": "drop_oldest", "return_message_counts": True},
     None, 200),
    ("POST", "/count", "/count", {"messages": CHAT, "template": "nope"}, None, 404),
    ("POST", "/count", "/count", {"text": "hello world", "max_tokens": 1}, None, 200),
    ("POST", "/count", "/count", {"texts": ["a b c", "d"], "max_tokens": 2}, None, 200),
    ("POST", "/count", "/count", {"model": "gpt-4o", "messages": CHAT, "max_tokens": 3},
     None, 400),
    ("POST", "/count", "/count", {"tokenizer": "deepseek-v4", "messages": CHAT,
                                  "template": "nope"}, None, 404),
    ("POST", "/count", "/count", {"text": "a", "texts": ["b"]}, None, 422),
    ("POST", "/decode", "/decode", {"ids": [24912, 2375]}, None, 200),
    ("POST", "/decode", "/decode", {"batch_ids": [[24912], [2375]]}, None, 200),
    ("POST", "/decode", "/decode", {"ids": [10**9]}, None, 400),
    ("POST", "/decode", "/decode", {"ids": [1] * 10_001}, None, 413),
    ("POST", "/render_chat", "/render_chat", {"tokenizer": "deepseek-v4", "messages": CHAT},
     None, 200),
    ("POST", "/render_chat", "/render_chat", {
        "tokenizer": "deepseek-v4", "messages": CHAT, "return_offsets": True,
        "return_assistant_mask": True, "return_ids": False}, None, 200),
    ("POST", "/render_chat", "/render_chat", {
        "tokenizer": "deepseek-v4",
        "messages": [{"role": "user", "content": "<｜end▁of▁sentence｜>"}]}, None, 400),
    ("POST", "/render_chat", "/render_chat", {"tokenizer": "deepseek-v4", "messages": []},
     None, 422),
    ("POST", "/render_chat", "/render_chat", {
        "model": "openai/gpt-oss-20b", "messages": CHAT, "return_message_counts": True,
        "max_tokens": 200, "fit": "drop_oldest", "add_generation_prompt": True}, None, 200),
    ("POST", "/render_chat", "/render_chat", {"tokenizer": "deepseek-v4", "messages": CHAT,
                                              "max_tokens": 2}, None, 400),
    ("GET", "/tokenizers", "/tokenizers", None, None, 200),
    ("GET", "/tokenizers/{name}", "/tokenizers/o200k_base", None, None, 200),
    ("GET", "/tokenizers/{name}", "/tokenizers/deepseek-v4@1", None, None, 200),
    ("GET", "/tokenizers/{name}", "/tokenizers/nope", None, None, 404),
    ("GET", "/models", "/models", None, None, 200),
    ("POST", "/compat/vllm/tokenize", "/compat/vllm/tokenize",
     {"prompt": "hi", "return_token_strs": True}, None, 200),
    ("POST", "/compat/vllm/tokenize", "/compat/vllm/tokenize",
     {"model": "deepseek-v4", "messages": CHAT}, None, 200),
    ("POST", "/compat/vllm/tokenize", "/compat/vllm/tokenize", {"prompt": 1}, None, 400),
    ("POST", "/compat/vllm/tokenize", "/compat/vllm/tokenize", {"prompt": "x", "model": "n"},
     None, 404),
    ("POST", "/compat/vllm/detokenize", "/compat/vllm/detokenize", {"tokens": [1, 2]}, None,
     200),
    ("POST", "/compat/vllm/v1/chat/completions/render", "/compat/vllm/v1/chat/completions/render",
     {"model": "deepseek-v4", "messages": CHAT, "return_token_offsets": True}, None, 200),
    ("POST", "/compat/sglang/tokenize", "/compat/sglang/tokenize", {"prompt": ["a", "b"]},
     None, 200),
    ("POST", "/compat/sglang/v1/tokenize", "/compat/sglang/v1/tokenize", {"prompt": "a"},
     None, 200),
    ("POST", "/compat/sglang/detokenize", "/compat/sglang/detokenize", {"tokens": [[64]]},
     None, 200),
    ("POST", "/compat/sglang/v1/detokenize", "/compat/sglang/v1/detokenize", {"tokens": [1e9]},
     None, 400),
    ("POST", "/compat/llamacpp/tokenize", "/compat/llamacpp/tokenize",
     {"content": "東京🗼", "with_pieces": True}, None, 200),
    ("POST", "/compat/llamacpp/detokenize", "/compat/llamacpp/detokenize", {"tokens": [64]},
     None, 200),
    ("POST", "/compat/llamacpp/apply-template", "/compat/llamacpp/apply-template",
     {"model": "deepseek-v4", "messages": CHAT}, None, 200),
    ("POST", "/compat/llamacpp/apply-template", "/compat/llamacpp/apply-template", {}, None,
     400),
    ("POST", "/compat/tgi/tokenize", "/compat/tgi/tokenize", {"inputs": "hi there"}, None, 200),
    ("POST", "/compat/tgi/chat_tokenize", "/compat/tgi/chat_tokenize",
     {"model": "deepseek-v4", "messages": CHAT}, None, 200),
    ("POST", "/compat/tgi/chat_tokenize", "/compat/tgi/chat_tokenize", {"messages": CHAT},
     None, 422),
    ("GET", "/decode/stream", "/decode/stream", None, None, 426),
    ("POST", "/decode/stream", "/decode/stream", "{\"ids\": [24912]}\n{\"ids\": [1]}",
     {"content-type": "application/x-ndjson"}, 200),
    ("POST", "/decode/stream", "/decode/stream", "{\"ids\": [24912]}\n{\"ids\": [1000000000]}",
     {"content-type": "application/x-ndjson"}, 200),  # the error is a line
    ("POST", "/decode/stream", "/decode/stream", "{\"ids\": [24912]}", {"content-type": "text/plain"},
     415),
    ("GET", "/healthz", "/healthz", None, None, 200),
    ("GET", "/readyz", "/readyz", None, None, 200),
    ("GET", "/metrics", "/metrics", None, None, 200),
    ("POST", "/admin/reload", "/admin/reload", None, ADMIN_HEADER, 200),
    ("POST", "/admin/reload", "/admin/reload", None, None, 401),
    ("POST", "/admin/reload", "/admin/reload", None, {"Authorization": "Bearer no"}, 403),
    ("GET", "/", "/", None, None, 200),
    ("GET", "/playground", "/playground", None, None, 200),
    ("GET", "/playground/{asset}", "/playground/playground.js", None, None, 200),
    ("GET", "/playground/{asset}", "/playground/nope.js", None, None, 404),
]
RECORDED += COMPAT_RECORDED  # the compat discovery routes, TEI and per-model base URLs


@pytest.mark.parametrize("method,template,path,body,headers,status", RECORDED,
                         ids=[f"{r[0]} {r[2]} {r[5]}" for r in RECORDED])
def test_real_responses_match_the_documented_schemas(srv, document, method, template, path,
                                                     body, headers, status):
    if isinstance(body, str):
        r = srv.client.request(method, path, content=body.encode(),
                               headers={"content-type": "application/json", **(headers or {})})
    else:
        r = srv.client.request(method, path, json=body, headers=headers)
    assert r.status_code == status, r.text[:300]
    _validate(document, method, template, r)


def test_every_operation_and_status_pair_is_exercised_somewhere():
    """RECORDED covers each operation, and each documented 2xx response."""
    covered = {(m, t) for m, t, *_ in RECORDED}
    assert covered == {(op.method, op.path) for op in OPERATIONS}


def test_one_of_rules_are_in_the_request_schemas(srv, document):
    def schema_accepts(path: str, body: dict) -> bool:
        schema = document["paths"][path]["post"]["requestBody"]["content"][
            "application/json"]["schema"]
        return jsonschema.Draft202012Validator({**document, **schema}).is_valid(body)

    cases = [
        ("/encode", {"text": "a"}), ("/encode", {"texts": ["a"]}), ("/encode", {}),
        ("/encode", {"text": "a", "texts": ["b"]}), ("/encode", {"text": "a", "texts": None}),
        ("/count", {"messages": CHAT, "tokenizer": "deepseek-v4"}),
        ("/count", {"messages": CHAT, "text": "a"}),
        ("/count", {"messages": CHAT, "tokenizer": "deepseek-v4",
                    "add_generation_prompt": True, "continue_final_message": True}),
        ("/decode", {"ids": [1]}), ("/decode", {"batch_ids": [[1]]}),
        ("/decode", {"ids": [1], "batch_ids": [[1]]}), ("/decode", {}),
        ("/render_chat", {"messages": CHAT, "tokenizer": "deepseek-v4",
                          "add_generation_prompt": True, "continue_final_message": True}),
        ("/render_chat", {"messages": CHAT, "tokenizer": "deepseek-v4",
                          "add_generation_prompt": True}),
    ]
    for path, body in cases:
        r = srv.client.post(path, json=body)
        accepted = schema_accepts(path, body)
        assert accepted == (r.status_code != 422), (path, body, r.text[:200])


def test_security_is_declared_only_when_a_token_is_set(live_server, bundled):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("o200k_base").parent.parent,
                        auth_token="t")
    with live_server(settings) as server:
        doc = server.client.get("/openapi.json").json()
    assert doc["paths"]["/encode"]["post"]["security"] == [{"bearer": []}]
    assert "401" in doc["paths"]["/encode"]["post"]["responses"]
    assert doc["paths"]["/healthz"]["get"]["security"] == []
    assert doc["paths"]["/admin/reload"]["post"]["security"] == []  # no admin token here


def test_the_document_is_valid_openapi_3_1(document):
    validate_openapi(document)  # raises on the first error
    for auth in (False, True):
        for admin in (False, True):
            validate_openapi(build_document(__version__, auth=auth, admin=admin))


def test_tags_come_in_the_order_users_look_for_them(document):
    """The main operations first, then the other stacks' routes, the operator's last;
    Swagger UI and ReDoc list the tags in this order, and a tag's operations in the
    order of the paths."""
    tags = [t["name"] for t in document["tags"]]
    assert set(tags) == {op.tag for op in OPERATIONS}
    assert tags[:4] == ["tokenize", "chat", "stream", "tokenizers"]
    compat = [i for i, tag in enumerate(tags) if tag.startswith("compat-")]
    assert compat and compat == list(range(4, 4 + len(compat)))
    assert tags[-3:] == ["ops", "playground", "admin"]
    assert all(t.get("description") for t in document["tags"])
    assert list(document["paths"])[:4] == ["/encode", "/count", "/decode", "/render_chat"]
    order = [tags.index(op["tags"][0]) for ops in document["paths"].values()
             for op in ops.values()]
    assert order == sorted(order)


def _subschemas(schema):
    """``schema`` and every schema inside it (property names are not schemas)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key in ("items", "not", "additionalProperties", "x-itemSchema"):
        yield from _subschemas(schema.get(key))
    for key in ("allOf", "anyOf", "oneOf", "prefixItems"):
        for sub in schema.get(key, ()):
            yield from _subschemas(sub)
    for sub in schema.get("properties", {}).values():
        yield from _subschemas(sub)


def test_shared_schemas_carry_no_default(document):
    """openapi-typescript (7.x, default options) types a property that has a ``default``
    as always present unless it sits under a request body: a request model in
    ``components`` made ``POST /count {"text": ...}`` a type error. Shared schemas have
    no ``default`` (a request-side one says it in its description)."""
    with_default = [name for name, schema in document["components"]["schemas"].items()
                    if any("default" in sub for sub in _subschemas(schema))]
    assert with_default == []
    assert "Default: `false`." in document["components"]["schemas"]["StreamMessage"][
        "properties"]["flush"]["description"]


def test_request_bodies_are_inline_with_their_defaults_optional(document):
    for op in OPERATIONS:
        if op.request is None:
            continue
        schema = document["paths"][op.path][op.method.lower()]["requestBody"]["content"][
            "application/json"]["schema"]
        base = schema["allOf"][0] if "allOf" in schema else schema
        assert "$ref" not in base and base["properties"], op.path
        required = set(base.get("required", ()))
        assert required == set(op.request.model_json_schema().get("required", ())), op.path
        assert not [k for k in required if "default" in base["properties"][k]], op.path


def test_exactly_one_of_branches_restate_no_field_types(document):
    """ReDoc merges each branch into the model and warns when a branch gives a field
    another type (``null`` against ``string``): the branches say "given and not null" and
    "the others are not" with ``not`` only, and are titled by their field."""
    for op in OPERATIONS:
        names = getattr(op.request, "one_of", ())
        if not names:
            continue
        schema = document["paths"][op.path]["post"]["requestBody"]["content"][
            "application/json"]["schema"]
        branches = next(rule["oneOf"] for rule in schema["allOf"] if "oneOf" in rule)
        assert [b["title"] for b in branches] == list(names)
        for branch in branches:
            stated = [branch] + branch["not"]["anyOf"]
            assert all("type" not in prop for b in stated
                       for prop in b["properties"].values()), (op.path, branch["title"])


def test_the_stream_answer_documents_its_lines(document):
    content = document["paths"]["/decode/stream"]["post"]["responses"]["200"]["content"]
    ndjson = content["application/x-ndjson"]
    assert ndjson["schema"]["type"] == "array"
    assert ndjson["x-itemSchema"] == ndjson["schema"]["items"]
    assert {b["$ref"].rsplit("/", 1)[1] for b in ndjson["x-itemSchema"]["oneOf"]} == {
        "StreamText", "StreamDone", "ErrorEnvelope"}
    body = document["paths"]["/decode/stream"]["post"]["requestBody"]["content"]
    assert body["application/x-ndjson"]["x-itemSchema"] == {
        "$ref": "#/components/schemas/StreamMessage"}


def test_docs_pages_make_no_request_elsewhere(srv):
    """The ReDoc bundle's footer logo comes from a CDN unless replaced; Swagger UI's
    validator badge sends the document's URL to validator.swagger.io unless turned off.
    (tests/browser/test_api_docs.py watches a real browser's requests.)"""
    redoc = srv.client.get("/docs/static/redoc.standalone.js")
    assert redoc.status_code == 200 and redoc.headers["content-type"].startswith(
        "text/javascript")
    assert b"cdn.redoc.ly" not in redoc.content and b"redocly logo" in redoc.content
    assert '"validatorUrl": null' in srv.client.get("/docs").text
    missing = srv.client.get("/docs/static/nope.js")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_their_assets_from_the_service(srv, page):
    html = srv.client.get(page).text
    links = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert links and not re.search(r"https?://", html)
    for link in links:
        assert srv.client.get(link).status_code == 200, link
