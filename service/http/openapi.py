"""The OpenAPI 3.1 document, generated from the operation table (``operations/table.py``).

Not FastAPI's introspection: the hot routes parse their own bodies, so FastAPI would
document neither their bodies nor their answers. Here every operation gets its request
schema (with the "exactly one of" rules as ``oneOf``), its 200 schema (``oneOf`` where the
answer's shape follows the request's mode), and every error status it can produce with
the contract's envelope and that status's ``code`` values. Validation errors are the
envelope too (422 ``invalid_request``/``invalid_json``), never FastAPI's ``detail`` shape.

The document states the deployment's truth: the bearer requirement appears only when
the server has an API token, the admin operation's only when it has an admin token.

It is written for the tools that read it (code generators, ReDoc, Swagger UI), not only
for validators; tests/service/test_openapi.py and test_generated_client.py hold each rule:

* Where a 200 has several shapes, the most specific (most required fields) is listed
  first: generated clients (openapi-python-client) try the branches in order and keep
  the first whose required fields are there, and a chat /count answer has the plain
  count's too. A shape whose required fields include another's comes before it.
* Request bodies are inline schemas and keep their fields' ``default``; shared schemas
  (``components``) carry none. openapi-typescript types a property with a ``default``
  as always present unless it sits under a request body, and a response field that can
  be absent has no default to speak of. A default that matters (a request-side shared
  schema's) is kept in words in the field's description.
* The "exactly one of" branches say "the others are absent or null" with ``not``, never
  by restating a field's type as ``null``: ReDoc merges each branch into the model and
  warns about the two types. Each branch is titled by its field.
* Sequential media types (NDJSON): ``schema`` is the whole body read as an array of its
  lines (OpenAPI 3.2's reading of it), ``x-itemSchema`` is one line (3.2's
  ``itemSchema``, which a 3.1 Media Type Object cannot carry).
* Tags are in the order readers look for them (``TAG_ORDER``), and the paths with them.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ..operations.schemas import CountRequest, ErrorEnvelope, RenderChatRequest
from ..operations.table import OPERATIONS, Operation

_REF = "#/components/schemas/{model}"

_STATUS_TEXT = {400: "Bad input", 401: "Missing or invalid bearer token", 403: "Forbidden",
                404: "Not found", 413: "Too large", 415: "Unsupported media type",
                426: "Upgrade required",
                422: "Invalid request", 500: "Internal error", 503: "Unavailable"}

_DESCRIPTION = """Exact byte-level BPE tokenization over versioned tokenizer artifacts.

Every error is an HTTP status plus `{"error": {"code", "message", ...details}}`; the
codes each operation can answer with are listed under its responses. Request bodies are
JSON (`Content-Type: application/json`; anything else is 415). The full contract, with
the meaning of every field, is docs/API.md in the repository."""


#: Media types whose body is a sequence of JSON values, one per line.
SEQUENTIAL = frozenset({"application/x-ndjson", "application/jsonl", "application/json-seq"})

#: Tags in the order readers look for them: the operations users call first, the other
#: stacks' routes (every ``compat-*`` tag, in table order), any tag not named here, then
#: what the people running the service use, the admin route last.
TAG_ORDER = ("tokenize", "chat", "stream", "tokenizers", "compat-*", "*", "ops",
             "playground", "admin")

_TAG_TEXT = {
    "tokenize": "Text to ids and back: `/encode`, `/count` (text or a chat), `/decode`.",
    "chat": "Chat messages through the tokenizer's template: the exact prompt text, its "
            "ids, per-message counts and the assistant mask.",
    "stream": "Ids in, text out as characters complete (WebSocket or NDJSON).",
    "tokenizers": "What this server serves: tokenizers and their versions, and the model "
                  "names accepted as `model`.",
    "ops": "Probes and metrics, for the people running the service.",
    "playground": "The token viewer page.",
    "admin": "Needs the admin token (TOKSERVE_ADMIN_TOKEN).",
}


def _tag(name: str) -> dict[str, str]:
    text = _TAG_TEXT.get(name)
    if text is None and name.startswith("compat-"):
        stack = name.removeprefix("compat-")
        text = (f"{stack}'s own routes, in its request and response shapes, errors and "
                f"statuses: point a {stack} client's base URL at `/compat/{stack}/`.")
    return {"name": name, "description": text} if text else {"name": name}


def _ordered(operations: tuple[Operation, ...]) -> list[Operation]:
    """The operations by ``TAG_ORDER``, tags of one group (``compat-*``) and the
    operations of one tag in table order."""
    first: dict[str, int] = {}
    for i, op in enumerate(operations):
        first.setdefault(op.tag, i)

    def group(tag: str) -> int:
        name = "compat-*" if tag.startswith("compat-") else tag
        return TAG_ORDER.index(name if name in TAG_ORDER else "*")

    return sorted(operations, key=lambda op: (group(op.tag), first[op.tag]))


def _without_defaults(schema: dict[str, Any], *, in_words: bool) -> dict[str, Any]:
    """``schema`` with no ``default`` on its properties (see the module docstring); with
    ``in_words``, a non-null default is appended to the field's description."""
    for prop in schema.get("properties", {}).values():
        if "default" not in prop:
            continue
        default = prop.pop("default")
        if in_words and default is not None:
            said = f"Default: `{json.dumps(default)}`."
            prop["description"] = f"{prop['description']} {said}" if prop.get(
                "description") else said
    return schema


class _Components:
    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}
        self._models: dict[str, type[BaseModel]] = {}

    def ref(self, model: type[BaseModel], mode: str = "validation") -> dict[str, Any]:
        """A reference to ``model``'s shared schema (added once, with no ``default``)."""
        if self._models.setdefault(model.__name__, model) is not model:
            raise ValueError(f"two schemas named {model.__name__}: component names are "
                             f"class names, so they must be unique")
        schema = self._schema(model, mode)
        self.schemas[model.__name__] = _without_defaults(schema, in_words=mode == "validation")
        return {"$ref": _REF.format(model=model.__name__)}

    def inline(self, model: type[BaseModel]) -> dict[str, Any]:
        """``model``'s request schema itself, defaults kept (its nested models shared)."""
        return self._schema(model, "validation")

    def _schema(self, model: type[BaseModel], mode: str) -> dict[str, Any]:
        schema = model.model_json_schema(ref_template=_REF, mode=mode)
        for name, sub in schema.pop("$defs", {}).items():
            self.schemas.setdefault(name, _without_defaults(sub, in_words=mode == "validation"))
        return schema


def _present(name: str) -> dict[str, Any]:
    """``name`` is given, and not null (a null field is an absent one)."""
    return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}


def _one_of(names: tuple[str, ...], extra: dict[str, dict[str, Any]] | None = None
            ) -> list[dict[str, Any]]:
    """``oneOf`` branches: exactly one of ``names`` is present and not null."""
    branches = []
    for name in names:
        others = [_present(o) for o in names if o != name]
        branch: dict[str, Any] = {"title": name, **_present(name), "not": {"anyOf": others}}
        branch.update((extra or {}).get(name, {}))
        branches.append(branch)
    return branches


_NOT_BOTH_FLAGS = {"not": {"required": ["add_generation_prompt", "continue_final_message"],
                           "properties": {"add_generation_prompt": {"const": True},
                                          "continue_final_message": {"const": True}}}}

# `tokenizer` and `model` name what serves the request: one or the other (or neither).
_NOT_BOTH_TARGETS = {"not": {"required": ["tokenizer", "model"],
                             "properties": {"tokenizer": {"type": "string"},
                                            "model": {"type": "string"}}}}


def _request_schema(components: _Components, model: type[BaseModel]) -> dict[str, Any]:
    schema = components.inline(model)
    rules: dict[str, Any] = {}
    names = getattr(model, "one_of", ())
    if names:
        # a chat /count carries the chat rule inside its branch
        chat = {"messages": {"allOf": [_NOT_BOTH_FLAGS]}} if model is CountRequest else None
        rules["oneOf"] = _one_of(names, chat)
        schema.pop("title", None)  # ReDoc names each branch by its title (text, texts)
    checks = [schema, rules] if rules else [schema]
    if model is RenderChatRequest:
        checks.append(_NOT_BOTH_FLAGS)
    if {"tokenizer", "model"} <= model.model_fields.keys():  # not compat bodies: no tokenizer
        checks.append(_NOT_BOTH_TARGETS)
    return {"allOf": checks} if len(checks) > 1 else schema


_REQUEST_ID = {"type": "string", "description": "The request's id, as in the X-Request-ID "
               "response header: quote it to follow the call into the server's logs."}


def _error_response(status: int, codes: tuple[str, ...], envelope: dict[str, Any],
                    foreign: dict[str, Any] | None = None) -> dict[str, Any]:
    """The contract's envelope with the operation's codes, or ``foreign``: another
    project's error shape (compat routes), whose codes are its own."""
    error = {"required": ["code", "message", "request_id"],
             "properties": {"code": {"enum": list(codes)}, "request_id": _REQUEST_ID}}
    if "not_ready" in codes:
        error["properties"]["reason"] = {"enum": ["loading", "draining", "no_tokenizers"]}
    schema = foreign or {"allOf": [envelope, {"properties": {"error": error}}]}
    listed = ", ".join(f"`{c}`" for c in codes)
    return {"description": f"{_STATUS_TEXT.get(status, 'Error')}: {listed}",
            "content": {"application/json": {"schema": schema}}}


def _errors(op: Operation, auth: bool) -> dict[int, tuple[str, ...]]:
    errors = op.error_codes()
    if auth and not op.open:
        errors[401] = ("unauthorized",)
    errors[500] = ("internal_error",)
    return errors


def _required(model: type[BaseModel]) -> int:
    return len(model.model_json_schema(mode="serialization").get("required", ()))


def _media(schema: dict[str, Any], media: str) -> dict[str, Any]:
    """A Media Type Object; a sequential type's body is an array of its lines."""
    if media not in SEQUENTIAL:
        return {"schema": schema}
    whole = {"type": "array", "items": schema,
             "description": "The body, read as the array of its lines: one JSON value per "
                            "line (`x-itemSchema`), each as soon as it is ready."}
    return {"schema": whole, "x-itemSchema": schema}


def _success(components: _Components, op: Operation) -> dict[str, Any]:
    if op.responses:
        # most specific first: a client that tries them in order keeps the right one
        models = sorted(op.responses, key=_required, reverse=True)
        refs = [components.ref(m, mode="serialization") for m in models]
        schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
        return {"description": "OK", "content": {op.media_types[0]: _media(
            schema, op.media_types[0])}}
    return {"description": "OK",
            "content": {media: {"schema": {"type": "string"}} for media in op.media_types}}


def _operation(components: _Components, op: Operation, envelope: dict[str, Any], *,
               auth: bool, admin: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {"operationId": op.name, "summary": op.summary, "tags": [op.tag]}
    if op.path_params:
        doc["parameters"] = [{"name": name, "in": "path", "required": True, "schema": schema}
                             for name, schema in op.path_params.items()]
    if op.request is not None:
        content: dict[str, Any] = {"schema": _request_schema(components, op.request)}
        if op.examples:
            content["examples"] = {k: {"value": v} for k, v in op.examples.items()}
        doc["requestBody"] = {"required": True, "content": {"application/json": content}}
    elif op.stream_schema is not None and op.method == "POST":
        doc["requestBody"] = _stream_body(components, op)
    responses: dict[str, Any] = {"200": _success(components, op)}
    if op.websocket is not None:
        message = components.ref(op.stream_schema) if op.stream_schema else None
        doc["description"] = _WEBSOCKET % message["$ref"] if message else _WEBSOCKET
        responses = {"101": {"description": "Switching Protocols: the WebSocket is open; "
                                            "frames as described above"}}
    foreign = components.ref(op.error_model, "serialization") if op.error_model else None
    for status, codes in sorted(_errors(op, auth).items()):
        responses[str(status)] = _error_response(status, codes, envelope, foreign)
    doc["responses"] = responses
    if op.path.startswith("/admin/"):
        doc["security"] = [{"adminBearer": []}] if admin else []
    elif auth and not op.open:
        doc["security"] = [{"bearer": []}]
    else:
        doc["security"] = []
    return doc


_WEBSOCKET = """A WebSocket (a GET with `Connection: Upgrade`, `Upgrade: websocket`).
Client frames are JSON text, each one message (`%s`): options (`tokenizer` or `model`,
`skip_special_tokens`, `errors`) in the first only, then `{"ids": [...]}` as ids arrive,
then `{"flush": true}`. Server frames: `{"text": delta}` as soon as ids complete
characters (never part of one), then `{"done": true, "text", "ids", "tokenizer",
"tokenizer_hash"}` and a close (1000). On an unknown id, invalid UTF-8 under `strict` or
a malformed message: one `{"error": {"code", "message", ...}}` frame (codes as /decode's:
`unknown_token_id`, `invalid_utf8`, `tokenizer_not_found`, `unknown_model`,
`payload_too_large`, `invalid_request`, `invalid_json`) and a close (1008). The deltas
joined are exactly `/decode` of all the ids."""


def _stream_body(components: _Components, op: Operation) -> dict[str, Any]:
    """A streaming POST body: newline-delimited messages (or one JSON message)."""
    message = components.ref(op.stream_schema)  # type: ignore[arg-type]
    content = {media: _media(message, media) for media in op.consumes}
    for media, example in op.examples.items():
        content.setdefault(media, {})["example"] = example
    return {"required": True, "content": content}


def build(version: str, *, auth: bool, admin: bool,
          metrics: bool | None = None) -> dict[str, Any]:
    """The document for a server with (``auth``) or without an API token, and with or
    without an admin token (``admin``); ``metrics``: whether GET /metrics needs a token
    (None: as the API; the metrics token or ``metrics_open`` make it differ)."""
    components = _Components()
    envelope = components.ref(ErrorEnvelope, mode="serialization")
    paths: dict[str, dict[str, Any]] = {}
    operations = _ordered(OPERATIONS)
    for op in operations:
        needs = auth if metrics is None or op.path != "/metrics" else metrics
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(
            components, op, envelope, auth=needs, admin=admin)
    tags = list(dict.fromkeys(op.tag for op in operations))
    return {
        "openapi": "3.1.0",
        "info": {"title": "tokserve", "version": version, "description": _DESCRIPTION,
                 "license": {"name": "MIT", "identifier": "MIT"}},
        "tags": [_tag(t) for t in tags],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.schemas.items())),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "TOKSERVE_AUTH_TOKEN, when the server sets one "
                                          "(GET /metrics: TOKSERVE_METRICS_TOKEN if set)"},
                "adminBearer": {"type": "http", "scheme": "bearer",
                                "description": "TOKSERVE_ADMIN_TOKEN (POST /admin/reload)"},
            },
        },
    }
