"""The one table of operations: what the service serves, and the only list of its paths.

Each ``Operation`` says its method, path, request and response models, the error codes
it can answer with, and how it is served:

* ``handler`` (``async (state, raw body) -> JSON bytes``): the hot POST operations. The
  fast lane (``http/layers/fast_lane.py``) serves these paths itself
  (``direct_handlers``), skipping the framework's routing; FastAPI gets a route for the
  same handler too, which is what answers a wrong method on the path with 405.
* ``endpoint``: an ordinary FastAPI endpoint (the GET routes, admin, the page).

``http/framework.py`` adds the FastAPI routes from this table and ``http/openapi.py``
builds the OpenAPI document from it; the HTTP layers read ``direct_handlers()`` (the
fast lane's map), ``compat_routes()`` (the compat GETs and per-model paths it serves too),
``open_paths()`` (the auth exemptions), ``gated_paths()`` (the
operations refused, 503 ``not_ready``, while artifacts load), ``body_media_types()``
and ``error_renderers()``. tests/service/test_openapi.py checks that what is served and what is
documented are the same set, both ways.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..http.routes import admin, health, metrics, playground, tokenizers
from ..http.routes import streaming as streaming_routes
from . import handlers, streaming
from .schemas import (CountBatchResponse, CountChatResponse, CountRequest, CountResponse,
                      DecodeBatchResponse, DecodeRequest, DecodeResponse,
                      EncodeBatchResponse, EncodeRequest, EncodeResponse, ErrorEnvelope,
                      HealthResponse, ModelsResponse, ReadyResponse, ReloadResponse,
                      RenderChatRequest, RenderChatResponse, StreamDone, StreamText,
                      TokenizerDetail, TokenizersResponse)

# Error codes by status, shared by the operations that can produce them.
_BODY = {413: ("payload_too_large", "input_too_large"),
         415: ("unsupported_media_type",),
         422: ("invalid_request", "invalid_json")}
_TOKENIZER = {404: ("tokenizer_not_found", "unknown_model")}
_CHAT = {400: ("template_error", "reserved_literal_in_content", "context_overflow"),
         404: ("tokenizer_not_found", "unknown_model", "template_not_found")}


def _merge(*tables: dict[int, tuple[str, ...]]) -> dict[int, tuple[str, ...]]:
    out: dict[int, tuple[str, ...]] = {}
    for table in tables:
        for status, codes in table.items():
            out[status] = tuple(dict.fromkeys(out.get(status, ()) + codes))
    return out


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    name: str
    tag: str
    summary: str
    responses: tuple[type[BaseModel], ...] = ()  # the 200 body: one of these
    request: type[BaseModel] | None = None
    errors: dict[int, tuple[str, ...]] = field(default_factory=dict)
    handler: handlers.Handler | None = None
    endpoint: Callable[..., Any] | None = None
    media_types: tuple[str, ...] = ("application/json",)  # of the 200 body
    path_params: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> schema
    open: bool = False  # served without the API bearer token
    examples: dict[str, Any] = field(default_factory=dict)  # request examples by name
    needs_artifacts: bool = False  # 503 not_ready while artifacts load (layers/readiness)
    #: media types of the request body a POST accepts (415 for others); () = no body
    consumes: tuple[str, ...] = ("application/json",)
    asgi: Any = None  # a raw ASGI app that serves the route itself (streaming bodies)
    websocket: Callable[..., Any] | None = None  # the WebSocket endpoint at this path
    stream_schema: type[BaseModel] | None = None  # the messages of a streaming route
    #: another project's error shape (compat routes): its model, for the document, and
    #: a renderer with ``errors.error_response``'s arguments, for every error answered
    error_model: type[BaseModel] | None = None
    errors_as: Callable[..., Any] | None = None

    def error_codes(self) -> dict[int, tuple[str, ...]]:
        """Every status and code this operation can answer with, 500 and the auth 401
        aside (the OpenAPI document adds those per deployment)."""
        if not self.needs_artifacts:
            return dict(self.errors)
        return _merge(self.errors, {503: ("not_ready",)})


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "POST", "/encode", "encode", "tokenize",
        "Text(s) → ids, with optional offsets and tokens",
        (EncodeResponse, EncodeBatchResponse), EncodeRequest,
        _merge({400: ("special_token_in_text",)}, _TOKENIZER, _BODY), handlers.encode,
        needs_artifacts=True,
        examples={"text": {"text": "hello world", "return_offsets": True},
                  "texts": {"tokenizer": "cl100k_base", "texts": ["a", "b c"]},
                  "model": {"model": "gpt-4o", "text": "hello world", "max_tokens": 1}}),
    Operation(
        "POST", "/count", "count", "tokenize",
        "Token count of text(s) or of a rendered chat; always len(ids) of /encode",
        (CountResponse, CountBatchResponse, CountChatResponse), CountRequest,
        _merge({400: ("special_token_in_text",)}, _CHAT, _TOKENIZER, _BODY), handlers.count,
        needs_artifacts=True, examples={"text": {"text": "hello world"},
                  "texts": {"texts": ["hello", "world"]},
                  "messages": {"tokenizer": "deepseek-v4",
                               "messages": [{"role": "user", "content": "hi"}]},
                  "openai_chat": {"model": "gpt-4o", "return_message_counts": True,
                                  "messages": [{"role": "user", "content": "hi"}]}}),
    Operation(
        "POST", "/decode", "decode", "tokenize", "Ids → text (or batch_ids → texts)",
        (DecodeResponse, DecodeBatchResponse), DecodeRequest,
        _merge({400: ("unknown_token_id", "invalid_utf8")}, _TOKENIZER, _BODY),
        handlers.decode, needs_artifacts=True,
        examples={"ids": {"ids": [24912, 2375]}, "batch_ids": {"batch_ids": [[24912], [2375]]}}),
    Operation(
        "POST", "/render_chat", "render_chat", "chat",
        "Messages → the prompt text the template renders, its ids and mask",
        (RenderChatResponse,), RenderChatRequest, _merge(_CHAT, _BODY), handlers.render_chat,
        needs_artifacts=True, examples={"chat": {"tokenizer": "deepseek-v4", "add_generation_prompt": True,
                           "messages": [{"role": "user", "content": "hi"}]}}),
    Operation(
        "GET", "/tokenizers", "list_tokenizers", "tokenizers",
        "Every served name@version, its hash, vocabulary size, specials and templates",
        (TokenizersResponse,), endpoint=tokenizers.list_tokenizers, needs_artifacts=True),
    Operation(
        "GET", "/tokenizers/{name}", "get_tokenizer", "tokenizers",
        "One version (a bare name is its current version) with its manifest",
        (TokenizerDetail,), errors=dict(_TOKENIZER), endpoint=tokenizers.get_tokenizer,
        needs_artifacts=True,
        path_params={"name": {"type": "string", "description": "name or name@version",
                              "examples": ["o200k_base", "o200k_base@1"]}}),
    Operation(
        "GET", "/models", "list_models", "tokenizers",
        "Model names and Hugging Face repo ids accepted as `model` (or `tokenizer`), and "
        "the tokenizer each uses", (ModelsResponse,), endpoint=tokenizers.list_models),
    Operation(
        "GET", "/healthz", "healthz", "ops",
        "Alive: 200 once artifacts are loaded (also while draining), else 503; the "
        "startup and liveness probe",
        (HealthResponse,), errors={503: ("not_ready", "no_artifacts")}, endpoint=health.healthz,
        open=True),
    Operation(
        "GET", "/readyz", "readyz", "ops",
        "Ready for traffic: 200 when loaded, serving at least one tokenizer and not "
        "draining; else 503 not_ready with the reason; the readiness probe",
        (ReadyResponse,), errors={503: ("not_ready",)}, endpoint=health.readyz, open=True),
    Operation(
        "GET", "/metrics", "metrics", "ops", "Prometheus text exposition format",
        endpoint=metrics.metrics, media_types=("text/plain",)),
    Operation(
        "GET", "/decode/stream", "decode_stream_websocket", "stream",
        "WebSocket: ids in, text deltas out, never part of a character (connect with an "
        "Upgrade; a plain GET is 426)", errors={426: ("upgrade_required",)},
        endpoint=streaming_routes.upgrade_required, websocket=streaming.websocket_endpoint,
        stream_schema=streaming.StreamMessage, needs_artifacts=True),
    Operation(
        "POST", "/decode/stream", "decode_stream_ndjson", "stream",
        "NDJSON: one message per line in, text deltas out as lines, while the body uploads "
        "(errors after the first line are lines too; a body sent as application/json is "
        "one message, and its errors are statuses)",
        (StreamText, StreamDone, ErrorEnvelope),  # one per line (OpenAPI: an array of them)
        media_types=("application/x-ndjson",), consumes=streaming.NDJSON_TYPES,
        errors=_merge({400: ("unknown_token_id", "invalid_utf8")}, _TOKENIZER, _BODY),
        asgi=streaming.NdjsonEndpoint(), stream_schema=streaming.StreamMessage,
        needs_artifacts=True,
        examples={"application/x-ndjson": '{"tokenizer": "o200k_base"}\n{"ids": [24912]}\n'
                                          '{"ids": [2375]}\n'}),
    Operation(
        "POST", "/admin/reload", "reload", "admin",
        "Rescan the artifact roots now (hot reload); needs the admin token",
        (ReloadResponse,), errors={401: ("unauthorized",), 403: ("forbidden",),
                                   404: ("admin_disabled",)},
        endpoint=admin.reload, open=True, consumes=()),
    Operation(
        "GET", "/", "page", "playground", "The token viewer page",
        endpoint=playground.playground_page, media_types=("text/html",), open=True),
    Operation(
        "GET", "/playground", "playground", "playground", "The token viewer page",
        endpoint=playground.playground_page, media_types=("text/html",), open=True),
    Operation(
        "GET", "/playground/{asset}", "playground_asset", "playground",
        "A static file of the page (playground.js, playground.css)",
        errors={404: ("not_found",)}, endpoint=playground.playground_asset,
        media_types=tuple(sorted({m.split(";")[0] for m in playground.ASSETS.values()})),
        path_params={"asset": {"type": "string", "enum": sorted(playground.ASSETS)}},
        open=True),
)

if TYPE_CHECKING:  # compat/ is imported when the table is built (it imports handlers)
    from .compat.paths import CompatRoutes

#: The ``{name}`` of a per-model compat base URL, for the document.
_COMPAT_NAME = {"type": "string", "examples": ["gpt-4o", "o200k_base@1", "openai/gpt-oss-20b"],
                "description": "A model name GET /models knows, a served tokenizer or "
                               "name@version, URL-encoded (openai%2Fgpt-oss-20b)"}


def _compat_example(example: dict[str, Any] | None, params: dict[str, Any]
                    ) -> dict[str, Any]:
    """A route's example body; under a per-model base URL without ``model`` (the path
    names it)."""
    if not example:
        return {}
    return {"example": {k: v for k, v in example.items() if not (params and k == "model")}}


def _compat_operations() -> tuple[Operation, ...]:
    """The compat routes (service/operations/compat/): another project's request and response
    shapes, its errors and their statuses; on the fast lane like the hot routes. Each is
    served at ``/compat/<stack>/<route>`` and at ``/compat/<stack>/models/{name}/<route>``
    (``compat/paths.py``)."""
    from .compat import NAME_ERRORS, llamacpp, sglang, statuses, tei, tgi, vllm

    rows = []
    for module in (vllm, sglang, llamacpp, tgi, tei):
        dialect = module.DIALECT
        for route in module.ROUTES:
            named = route.errors if route.errors is None else route.errors + NAME_ERRORS
            for base, errors, params in (("", route.errors, {}),
                                         ("models/{name}/", named, {"name": _COMPAT_NAME})):
                path = f"/compat/{dialect.name}/{base}{route.path}"
                rows.append(Operation(
                    route.method, path, "compat_" + path[8:].replace("/", "_").replace(
                        "-", "_").replace("{", "").replace("}", ""),
                    f"compat-{dialect.name}", route.summary, route.responses, route.request,
                    statuses(dialect, errors), route.handler(dialect),
                    media_types=("application/json",) if route.responses else (),
                    path_params=params, error_model=dialect.error_model,
                    errors_as=dialect.render, needs_artifacts=True,
                    consumes=("application/json",) if route.request is not None else (),
                    examples=_compat_example(route.example, params)))
    return tuple(rows)


OPERATIONS += _compat_operations()

#: Served for reading the API itself, not operations of it: open, and not in the document.
DOCS_PATHS = ("/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json")
DOCS_STATIC = "/docs/static"


def direct_handlers() -> dict[str, handlers.Handler]:
    """path -> handler, for the fast lane (POST operations at fixed paths)."""
    return {op.path: op.handler for op in OPERATIONS
            if op.handler is not None and op.method == "POST" and "{" not in op.path}


def compat_routes() -> CompatRoutes:
    """The compat operations the fast lane serves beyond ``direct_handlers``: GET (and
    HEAD) and every per-model base URL (``compat/paths.py``: ``CompatRoutes.find``)."""
    from .compat.paths import CompatRoutes

    return CompatRoutes((op.method, op.path, op.handler) for op in OPERATIONS
                        if op.path.startswith("/compat/") and op.handler is not None)


def error_renderers() -> dict[str, Callable[..., Any]]:
    """path -> how its errors are written, for routes not answering the contract's
    envelope (the layers' refusals use it too; a per-model compat path finds its
    template's)."""
    from .compat.paths import ByPath

    return ByPath({op.path: op.errors_as for op in OPERATIONS if op.errors_as is not None},
                  compat_routes().paths)


def body_media_types() -> dict[str, tuple[str, ...]]:
    """path -> the request media types of its POST operation (``MediaType``'s 415; a
    per-model compat path finds its template's)."""
    from .compat.paths import ByPath

    return ByPath({op.path: op.consumes for op in OPERATIONS
                   if op.method == "POST" and op.consumes}, compat_routes().paths)


def websocket_paths() -> frozenset[str]:
    """Paths that accept a WebSocket upgrade (their metrics route label)."""
    return frozenset(op.path for op in OPERATIONS if op.websocket is not None)


def open_paths() -> tuple[frozenset[str], tuple[str, ...]]:
    """(exact paths, path prefixes) served without the API bearer token."""
    exact = {op.path for op in OPERATIONS if op.open and "{" not in op.path}
    prefixes = tuple(op.path.split("{")[0] for op in OPERATIONS if op.open and "{" in op.path)
    return frozenset(exact | set(DOCS_PATHS)), prefixes + (DOCS_STATIC + "/",)


def gated_paths() -> tuple[frozenset[str], tuple[str, ...]]:
    """(exact paths, path prefixes) of the operations that need artifacts: 503
    ``not_ready`` while they load."""
    ops = [op for op in OPERATIONS if op.needs_artifacts]
    exact = frozenset(op.path for op in ops if "{" not in op.path)
    return exact, tuple(op.path.split("{")[0] for op in ops if "{" in op.path)
