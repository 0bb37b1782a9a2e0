"""llama.cpp server's tokenizer routes under ``/compat/llamacpp/`` (shapes of
``tools/server`` in llama.cpp, documented in its server README).

* ``tokenize``: ``content`` (a string, or a list mixing strings and ids: ids pass
  through), ``add_special`` (default false: no BOS), ``parse_special`` (default true:
  special-token literals are their ids), ``with_pieces`` -> ``{"tokens": [ids]}`` or,
  with pieces, ``{"tokens": [{"id", "piece"}]}`` where a piece that is not valid UTF-8 is
  its list of byte values. No ``content``: ``{"tokens": []}``.
* ``detokenize``: ``tokens`` -> ``{"content"}`` (special tokens written out).
* ``apply-template``: ``messages`` (required) and ``tools``,
  ``add_generation_prompt`` (default true), ``continue_final_message``,
  ``chat_template_kwargs`` -> ``{"prompt"}``; a request's own ``chat_template`` is
  refused.
* ``GET props``: ``{default_generation_settings: {n_ctx, params}, total_slots,
  model_alias, model_path, modalities, endpoint_*, webui, chat_template, bos_token,
  eos_token, build_info}``, ``n_ctx`` the model's context length (``context.py``; 0 when
  unknown, as llama.cpp says before a model is loaded); ``GET health``:
  ``{"status": "ok"}``.

Errors: ``{"error": {"code", "message", "type"}}`` (``invalid_request_error`` 400,
``not_found_error`` 404, ``server_error`` 500...). ``model`` works as in llama.cpp's
router mode: a known name selects that tokenizer; one nothing here serves is 404
``not_found_error``, as on every compat base.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ... import __version__
from ...errors import InvalidRequest
from ...runtime.state import ServiceState
from ..handlers import Reply
from . import CompatRequest, Dialect, Route, encode, no_request_template, ok, render, target
from .context import UNKNOWN, context_length
from .discovery import chat_template, special_token

_TYPES = {400: "invalid_request_error", 401: "authentication_error",
          403: "permission_error", 404: "not_found_error", 500: "server_error",
          501: "not_supported_error", 503: "unavailable_error"}


def _classify(status: int, code: str) -> tuple[int, str]:
    if code in ("unknown_model", "tokenizer_not_found"):
        return 404, "not_found_error"
    if status == 413:  # over a size limit: the contract's status (issue 33)
        return 413, "invalid_request_error"
    if status in (415, 422):
        return 400, "invalid_request_error"
    return status, _TYPES.get(status, "invalid_request_error")


class LlamaCppErrorDetail(BaseModel):
    code: int
    message: str
    type: str


class LlamaCppError(BaseModel):
    error: LlamaCppErrorDetail


DIALECT = Dialect("llamacpp", LlamaCppError, _classify,
                  lambda status, kind, message, param: {"error": {
                      "code": status, "message": message, "type": kind}})


class LlamaCppTokenizeRequest(CompatRequest):
    model: str | None = None
    content: str | list[str | int] | None = None
    add_special: bool = False
    parse_special: bool = True
    with_pieces: bool = False


class LlamaCppPiece(BaseModel):
    id: int
    piece: str | list[int] = Field(description="The token's text, or its byte values "
                                               "when they are not valid UTF-8.")


class LlamaCppTokenizeResponse(BaseModel):
    tokens: list[int] | list[LlamaCppPiece]


class LlamaCppDetokenizeRequest(CompatRequest):
    model: str | None = None
    tokens: list[int] | None = None


class LlamaCppDetokenizeResponse(BaseModel):
    content: str


class LlamaCppApplyTemplateRequest(CompatRequest):
    model: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    chat_template: str | None = Field(default=None, description="Refused (not trusted).")
    chat_template_kwargs: dict[str, Any] | None = None


class LlamaCppApplyTemplateResponse(BaseModel):
    prompt: str


def _entry(state: ServiceState, model: str | None, name: str | None) -> Any:
    return target(state, model, name).entry


def tokenize(state: ServiceState, req: LlamaCppTokenizeRequest, name: str | None) -> Any:
    entry = _entry(state, req.model, name)
    content = req.content if req.content is not None else []
    parts = [content] if isinstance(content, str) else list(content)
    ids: list[int] = []
    vocab = entry.tokenizer.vocab_size
    for n, part in enumerate(parts):
        if isinstance(part, int):
            if not 0 <= part < vocab:
                raise InvalidRequest(f"token id {part} is out of range (vocab {vocab})")
            ids.append(part)
        else:  # BOS only before a first string, as llama.cpp adds it
            ids.extend(encode(entry, part, req.add_special and n == 0, req.parse_special))
    state.metrics.count_tokens(entry.ref, "/compat/llamacpp/tokenize", len(ids))
    if not req.with_pieces:
        return ok({"tokens": ids}, entry)
    pieces = []
    for i in ids:
        data = entry.tokenizer.token_bytes(i)
        try:
            piece: str | list[int] = data.decode("utf-8")
        except UnicodeDecodeError:
            piece = list(data)
        pieces.append({"id": i, "piece": piece})
    return ok({"tokens": pieces}, entry)


def detokenize(state: ServiceState, req: LlamaCppDetokenizeRequest, name: str | None) -> Any:
    entry = _entry(state, req.model, name)
    return ok({"content": entry.tokenizer.decode(req.tokens or [])}, entry)


def apply_template(state: ServiceState, req: LlamaCppApplyTemplateRequest,
                   name: str | None) -> Any:
    if not req.messages:
        raise InvalidRequest("'messages' is required", field="messages")
    no_request_template(req.chat_template)
    entry = _entry(state, req.model, name)
    rendered = render(entry, req.messages, tools=req.tools,
                      template_kwargs=req.chat_template_kwargs,
                      add_generation_prompt=req.add_generation_prompt
                      and not req.continue_final_message,
                      continue_final_message=req.continue_final_message)
    return ok({"prompt": rendered.text}, entry, rendered.template_hash)


class LlamaCppGenerationSettings(BaseModel):
    n_ctx: int = Field(description="The model's context length (0: unknown).")
    params: dict[str, Any] = Field(description="Sampling defaults: none here (a tokenizer).")


class LlamaCppModalities(BaseModel):
    vision: bool
    audio: bool


class LlamaCppProps(BaseModel):
    """llama.cpp server's ``GET /props``."""

    default_generation_settings: LlamaCppGenerationSettings
    total_slots: int
    model_alias: str
    model_path: str = Field(description="The tokenizer that serves it (name@version).")
    modalities: LlamaCppModalities
    endpoint_slots: bool
    endpoint_props: bool
    endpoint_metrics: bool
    webui: bool
    chat_template: str = Field(description="The template chat routes render (\"\": none).")
    bos_token: str
    eos_token: str
    build_info: str


class LlamaCppHealth(BaseModel):
    status: Literal["ok"]


def props(state: ServiceState, req: None, name: str | None) -> Any:
    found = target(state, None, name)
    entry = found.entry
    length = context_length(entry, found.asked)
    return ok({
        "default_generation_settings": {"n_ctx": 0 if length == UNKNOWN else length,
                                        "params": {}},
        "total_slots": 1, "model_alias": found.asked or entry.name, "model_path": entry.ref,
        "modalities": {"vision": False, "audio": False}, "endpoint_slots": False,
        "endpoint_props": False, "endpoint_metrics": True, "webui": False,
        "chat_template": chat_template(entry) or "",
        "bos_token": special_token(entry, "bos_token") or "",
        "eos_token": special_token(entry, "eos_token") or "",
        "build_info": f"tokserve {__version__}"}, entry)


def health(state: ServiceState, req: None, name: str | None) -> Any:
    if name is None:
        return Reply(b'{"status":"ok"}', 200)
    return ok({"status": "ok"}, target(state, None, name).entry)


ROUTES = (
    Route("tokenize", "llama.cpp /tokenize: content -> token ids (or ids and pieces)",
          LlamaCppTokenizeRequest, (LlamaCppTokenizeResponse,), tokenize,
          {"content": "Hello world!", "with_pieces": True}),
    Route("detokenize", "llama.cpp /detokenize: token ids -> content", LlamaCppDetokenizeRequest,
          (LlamaCppDetokenizeResponse,), detokenize, {"tokens": [13225, 2375, 0]}),
    Route("apply-template", "llama.cpp /apply-template: messages -> the prompt text",
          LlamaCppApplyTemplateRequest, (LlamaCppApplyTemplateResponse,), apply_template,
          {"model": "deepseek-v4",
           "messages": [{"role": "user", "content": "What is today?"}]}),
    Route("props", "llama.cpp /props: n_ctx, chat template, special tokens", None,
          (LlamaCppProps,), props, method="GET", errors=()),
    Route("health", "llama.cpp /health: {\"status\": \"ok\"} when serving", None,
          (LlamaCppHealth,), health, method="GET", errors=()),
)
