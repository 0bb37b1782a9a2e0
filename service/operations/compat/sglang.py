"""SGLang's tokenizer routes under ``/compat/sglang/`` (shapes of SGLang 0.5:
``sglang/srt/entrypoints/openai/protocol.py``), at ``tokenize``/``detokenize`` and their
``v1/`` paths, as SGLang serves both.

* ``tokenize``: exactly one of ``prompt`` (a string, or a list of them: a batch) and
  ``messages`` (rendered as a chat completion renders it) -> ``{tokens, count,
  max_model_len}``, with lists for a batch. ``add_special_tokens`` defaults to true for
  prompts; a chat gets them only when ``add_generation_prompt`` and
  ``add_special_tokens`` are both sent true.
* ``detokenize``: ``tokens`` (a list, or a list of lists) -> ``{text}`` (a string, or
  a list); ``skip_special_tokens`` defaults to true.
* ``GET get_model_info``: ``{model_path, tokenizer_path, is_generation,
  preferred_sampling_params, weight_version, has_image_understanding,
  has_audio_understanding}``; ``GET v1/models``: ``{object: "list", data: [ModelCard]}``
  with ``max_model_len``; ``GET health``: 200, no body.

Errors are flat: ``{"object": "error", "message", "type", "param", "code"}``, 400 for a
body it cannot use, 404 (``NotFoundError``) for a ``model`` nothing here serves
(``"default"``, SGLang's own default name, is the server's default tokenizer); a chat
with its own ``chat_template`` is refused. ``max_model_len`` is the model's context
length (``context.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ...errors import InvalidRequest, dumps
from ...runtime.state import ServiceState
from ..handlers import Reply
from . import (CompatRequest, Dialect, Route, Target, around, encode, name_headers,
               no_request_template, ok, render, target)
from .context import context_length
from .discovery import model_cards


def _classify(status: int, code: str) -> tuple[int, str]:
    if status == 413:  # over a size limit: the contract's status (issue 33)
        return 413, "Payload Too Large"
    if status in (415, 422):
        return 400, "Bad Request"
    if code in ("unknown_token_id", "invalid_utf8"):
        return 400, "DecodeError"
    if code in ("unknown_model", "tokenizer_not_found"):
        return 404, "NotFoundError"
    if status >= 500:
        return 500, "InternalServerError"
    if status in (401, 403):  # the front door's bearer check
        return status, "AuthenticationError"
    return 400, "BadRequest"  # SGLang answers every other refusal 400


class SglangError(BaseModel):
    """SGLang's flat ErrorResponse."""

    object: Literal["error"]
    message: str
    type: str
    param: str | None
    code: int


DIALECT = Dialect("sglang", SglangError, _classify,
                  lambda status, kind, message, param: {
                      "object": "error", "message": message, "type": kind, "param": param,
                      "code": status})


class SglangTokenizeRequest(CompatRequest):
    model: str = "default"
    prompt: str | list[str] | None = None
    messages: list[dict[str, Any]] | None = Field(default=None, min_length=1)
    tools: list[dict[str, Any]] | None = None
    continue_final_message: bool = False
    chat_template: str | None = Field(default=None, description="Refused (not trusted).")
    chat_template_kwargs: dict[str, Any] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool | None = None


class SglangTokenizeResponse(BaseModel):
    tokens: list[int] | list[list[int]]
    count: int | list[int]
    max_model_len: int


class SglangDetokenizeRequest(CompatRequest):
    model: str = "default"
    tokens: list[int] | list[list[int]]
    skip_special_tokens: bool = True


class SglangDetokenizeResponse(BaseModel):
    text: str | list[str]


def _target(state: ServiceState, model: str, name: str | None) -> Target:
    """``"default"`` (SGLang's ``DEFAULT_MODEL_NAME``) is what a client sends when it
    names no model."""
    return target(state, None if model == "default" else model, name)


def tokenize(state: ServiceState, req: SglangTokenizeRequest, name: str | None) -> Any:
    if (req.prompt is None) == (req.messages is None):
        raise InvalidRequest("Exactly one of 'prompt' or 'messages' must be provided.")
    found = _target(state, req.model, name)
    entry = found.entry
    head = {"max_model_len": context_length(entry, found.asked)}
    if isinstance(req.prompt, list):
        rows = [encode(entry, p, req.add_special_tokens) for p in req.prompt]
        state.metrics.count_tokens(entry.ref, "/compat/sglang/tokenize", sum(map(len, rows)))
        return ok({"tokens": rows, "count": [len(r) for r in rows], **head}, entry)
    if req.prompt is not None:
        ids, template_hash = encode(entry, req.prompt, req.add_special_tokens), None
    else:
        no_request_template(req.chat_template)
        generation = req.add_generation_prompt is not False  # omitted: true
        rendered = render(entry, req.messages or [], tools=req.tools,
                          template_kwargs=req.chat_template_kwargs,
                          add_generation_prompt=generation and not req.continue_final_message,
                          continue_final_message=req.continue_final_message)
        ids, template_hash = rendered.ids, rendered.template_hash
        if req.add_generation_prompt and "add_special_tokens" in req.model_fields_set \
                and req.add_special_tokens:
            ids = around(entry, ids)
    state.metrics.count_tokens(entry.ref, "/compat/sglang/tokenize", len(ids))
    return ok({"tokens": ids, "count": len(ids), **head}, entry, template_hash)


def detokenize(state: ServiceState, req: SglangDetokenizeRequest, name: str | None) -> Any:
    entry = _target(state, req.model, name).entry
    decode = entry.tokenizer.decode
    if req.tokens and isinstance(req.tokens[0], list):
        return ok({"text": [decode(r, skip_special_tokens=req.skip_special_tokens)
                            for r in req.tokens]}, entry)
    return ok({"text": decode(req.tokens, skip_special_tokens=req.skip_special_tokens)},
              entry)


class SglangModelInfo(BaseModel):
    """SGLang's ``/get_model_info`` (``/model_info`` in newer releases)."""

    model_path: str = Field(description="The model (or tokenizer) name this base serves.")
    tokenizer_path: str = Field(description="The tokenizer that serves it (name@version).")
    is_generation: bool
    preferred_sampling_params: dict[str, Any] | None
    weight_version: str
    has_image_understanding: bool
    has_audio_understanding: bool


class SglangModelCard(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    root: str | None
    parent: str | None
    max_model_len: int | None = Field(description="The context length; null: unknown.")


class SglangModelList(BaseModel):
    object: Literal["list"]
    data: list[SglangModelCard]


def model_info(state: ServiceState, req: None, name: str | None) -> Any:
    found = target(state, None, name)
    return ok({"model_path": found.asked or found.entry.name,
               "tokenizer_path": found.entry.ref, "is_generation": True,
               "preferred_sampling_params": None, "weight_version": "default",
               "has_image_understanding": False, "has_audio_understanding": False},
              found.entry)


def list_models(state: ServiceState, req: None, name: str | None) -> Any:
    cards = model_cards(state, name, "sglang")
    return Reply(dumps({"object": "list", "data": cards}), 200, name_headers(state, name))


def health(state: ServiceState, req: None, name: str | None) -> Any:
    """200 with no body, as SGLang answers (a base URL's name must be served)."""
    return Reply(b"", 200, name_headers(state, name))


_TOKENIZE = {"prompt": "What is the capital of France?", "add_special_tokens": False}
_DETOKENIZE = {"tokens": [3923, 374, 279, 6864, 315, 9822, 30], "skip_special_tokens": True}
ROUTES = tuple(
    route for prefix in ("", "v1/") for route in (
        Route(prefix + "tokenize", "SGLang /tokenize: prompt(s) or a chat -> token ids",
              SglangTokenizeRequest, (SglangTokenizeResponse,), tokenize, _TOKENIZE),
        Route(prefix + "detokenize", "SGLang /detokenize: token ids (or batches) -> text",
              SglangDetokenizeRequest, (SglangDetokenizeResponse,), detokenize, _DETOKENIZE))
) + (
    Route("get_model_info", "SGLang /get_model_info: the model this base serves", None,
          (SglangModelInfo,), model_info, method="GET", errors=()),
    Route("v1/models", "SGLang /v1/models: the model names served, with max_model_len",
          None, (SglangModelList,), list_models, method="GET", errors=()),
    Route("health", "SGLang /health: 200 with no body when serving", None, (), health,
          method="GET", errors=()),
)
