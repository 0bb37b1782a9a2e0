"""The OpenAPI 3.1 document, generated from the operation table (``operations/table.py``).

Not FastAPI's introspection: the hot routes parse their own bodies, so FastAPI would
document neither their bodies nor their answers. Here every operation gets its request
schema (with the "exactly one of" rules as ``oneOf``), its 200 schema (``oneOf`` where the
answer's shape follows the request's mode), and every error status it can produce with
the contract's envelope and that status's ``code`` values. Validation errors are the
envelope too (422 ``invalid_request``/``invalid_json``), never FastAPI's ``detail`` shape.

The document states the deployment's truth: the bearer requirement appears only when
the server has an API token, the admin operation's only when it has an admin token.
"""

from __future__ import annotations

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


class _Components:
    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}
        self._models: dict[str, type[BaseModel]] = {}

    def ref(self, model: type[BaseModel], mode: str = "validation") -> dict[str, Any]:
        if self._models.setdefault(model.__name__, model) is not model:
            raise ValueError(f"two schemas named {model.__name__}: component names are "
                             f"class names, so they must be unique")
        schema = model.model_json_schema(ref_template=_REF, mode=mode)
        for name, sub in schema.pop("$defs", {}).items():
            self.schemas.setdefault(name, sub)
        self.schemas[model.__name__] = schema
        return {"$ref": _REF.format(model=model.__name__)}


def _one_of(names: tuple[str, ...], extra: dict[str, dict[str, Any]] | None = None
            ) -> list[dict[str, Any]]:
    """``oneOf`` branches: exactly one of ``names`` is present and not null."""
    branches = []
    for name in names:
        branch: dict[str, Any] = {
            "required": [name],
            "properties": {name: {"not": {"type": "null"}},
                           **{o: {"type": "null"} for o in names if o != name}},
        }
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
    schema = components.ref(model)
    rules: dict[str, Any] = {}
    names = getattr(model, "one_of", ())
    if names:
        # a chat /count carries the chat rule inside its branch
        chat = {"messages": {"allOf": [_NOT_BOTH_FLAGS]}} if model is CountRequest else None
        rules["oneOf"] = _one_of(names, chat)
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


def _success(components: _Components, op: Operation) -> dict[str, Any]:
    if op.responses:
        refs = [components.ref(m, mode="serialization") for m in op.responses]
        schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
        return {"description": "OK", "content": {op.media_types[0]: {"schema": schema}}}
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
    lines = {"type": "string", "description": f"One {message['$ref'].rsplit('/', 1)[1]} "
             "JSON object per line; the answer streams as the lines arrive."}
    content = {media: {"schema": message if media == "application/json" else lines}
               for media in op.consumes}
    for media, example in op.examples.items():
        content.setdefault(media, {})["example"] = example
    return {"required": True, "content": content}


def build(version: str, *, auth: bool, admin: bool) -> dict[str, Any]:
    """The document for a server with (``auth``) or without an API token, and with or
    without an admin token (``admin``)."""
    components = _Components()
    envelope = components.ref(ErrorEnvelope, mode="serialization")
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(
            components, op, envelope, auth=auth, admin=admin)
    tags = sorted({op.tag for op in OPERATIONS})
    return {
        "openapi": "3.1.0",
        "info": {"title": "tokserve", "version": version, "description": _DESCRIPTION,
                 "license": {"name": "MIT", "identifier": "MIT"}},
        "tags": [{"name": t} for t in tags],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.schemas.items())),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "TOKSERVE_AUTH_TOKEN, when the server sets one"},
                "adminBearer": {"type": "http", "scheme": "bearer",
                                "description": "TOKSERVE_ADMIN_TOKEN (POST /admin/reload)"},
            },
        },
    }
