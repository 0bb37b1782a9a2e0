"""vLLM's tokenizer routes under ``/compat/vllm/`` (shapes of vLLM 0.33:
``vllm/entrypoints/serve/tokenize/`` and ``scale_out/render``, the OpenAI server's
``/v1/models`` and ``/health``).

* ``POST tokenize``: the completion form (``prompt``; ``add_special_tokens`` defaults to
  true) or the chat form (``messages``; ``add_generation_prompt`` true and
  ``add_special_tokens`` false by default) -> ``{count, max_model_len, tokens,
  token_strs}`` (``token_strs`` null unless ``return_token_strs``).
* ``POST detokenize``: ``{tokens}`` -> ``{prompt}`` (special tokens kept).
* ``POST v1/chat/completions/render``: a chat completion request -> the token ids a
  disaggregated render host hands to a generation host: ``{request_id, token_ids,
  token_offsets, model, sampling_params, ...}`` (the fields of vLLM's GenerateRequest that
  a tokenizer can know; sampling fields are passed through as sent).
* ``GET tokenizer_info`` (vLLM's ``--enable-tokenizer-info-endpoint``): the tokenizer's
  config as its ``init_kwargs`` (special tokens, ``model_max_length``...),
  ``tokenizer_class`` and ``chat_template``: what lm-evaluation-harness's
  ``RemoteTokenizer`` reads first.
* ``GET v1/models``: ``{object: "list", data: [ModelCard]}``, ``max_model_len`` each.
* ``GET health``: 200, no body.

Errors: ``{"error": {"message", "type", "param", "code"}}`` with ``code`` = the status;
a body vLLM's schema refuses is 400 (not 422), an unknown model 404. ``max_model_len``
is the model's context length (``context.py``; -1 only for an imported tokenizer that
names no model and records no length). ``chat_template`` in a request is refused (vLLM
refuses it unless started with ``--trust-request-chat-template``); the artifact's
template renders.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...errors import InvalidRequest, dumps
from ...runtime.state import ServiceState
from ..handlers import Reply
from . import (CompatRequest, Dialect, Route, around, encode, name_headers,
               no_request_template, ok, render, target, token_strings)
from .context import context_length
from .discovery import (chat_template, model_cards, tokenizer_class,
                        tokenizer_config)

_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError",
          413: "BadRequestError", 415: "BadRequestError", 500: "InternalServerError",
          501: "NotImplementedError", 503: "ServiceUnavailableError"}


def _classify(status: int, code: str) -> tuple[int, str]:
    if status == 413:  # over a size limit: the contract's status (issue 33)
        return 413, _TYPES[413]
    if status in (415, 422):  # vLLM answers a body it cannot read with 400
        return 400, "Bad Request"
    if code == "unknown_model":
        return 404, "NotFoundError"
    if code == "tokenizer_not_found":
        return 404, "NotFoundError"
    return status, _TYPES.get(status, "BadRequestError")


class VllmErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: int


class VllmError(BaseModel):
    """vLLM's ErrorResponse."""

    error: VllmErrorDetail


DIALECT = Dialect("vllm", VllmError, _classify,
                  lambda status, kind, message, param: {"error": {
                      "message": message, "type": kind, "param": param, "code": status}})


class VllmTokenizeRequest(CompatRequest):
    """vLLM's TokenizeCompletionRequest (``prompt``) or TokenizeChatRequest
    (``messages``): exactly one of the two."""

    model: str | None = Field(default=None, description="A name GET /models knows; "
                                                        "absent: the server default.")
    prompt: str | None = None
    messages: list[dict[str, Any]] | None = Field(default=None, min_length=1)
    add_special_tokens: bool | None = Field(
        default=None, description="Default: true for prompt, false for messages.")
    return_token_strs: bool | None = False
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    chat_template: str | None = Field(default=None, description="Refused (not trusted).")
    chat_template_kwargs: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


class VllmTokenizeResponse(BaseModel):
    count: int
    max_model_len: int
    tokens: list[int]
    token_strs: list[str] | None


class VllmDetokenizeRequest(CompatRequest):
    model: str | None = None
    tokens: list[int] = Field(description="Ids, each 0 <= id < 2**63.")


class VllmDetokenizeResponse(BaseModel):
    prompt: str


class VllmRenderRequest(CompatRequest):
    """A ChatCompletionRequest, as far as rendering it goes (sampling fields are
    passed through to ``sampling_params``)."""

    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    chat_template: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    return_token_offsets: bool = False
    use_beam_search: bool = False
    stream: bool = False
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    n: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None


class VllmRenderResponse(BaseModel):
    request_id: str
    token_ids: list[int]
    token_offsets: list[list[int]] | None
    features: None
    model: str | None
    sampling_params: dict[str, Any]
    stream: bool
    output_mode: Literal["tokens"]
    priority: int


_SAMPLING = ("temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens", "stop",
             "seed", "n", "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs")


def tokenize(state: ServiceState, req: VllmTokenizeRequest, name: str | None) -> Any:
    if (req.prompt is None) == (req.messages is None):
        raise InvalidRequest("exactly one of prompt and messages is required")
    entry, asked = (found := target(state, req.model, name)).entry, found.asked
    template_hash = None
    if req.prompt is not None:
        add = True if req.add_special_tokens is None else req.add_special_tokens
        ids = encode(entry, req.prompt, add)
    else:
        no_request_template(req.chat_template)
        if req.add_generation_prompt and req.continue_final_message:
            raise InvalidRequest("Cannot set both `continue_final_message` and "
                                 "`add_generation_prompt` to True.")
        rendered = render(entry, req.messages or [], tools=req.tools,
                          template_kwargs=req.chat_template_kwargs,
                          add_generation_prompt=req.add_generation_prompt,
                          continue_final_message=req.continue_final_message)
        ids, template_hash = rendered.ids, rendered.template_hash
        if req.add_special_tokens:
            ids = around(entry, ids)
    body = {"count": len(ids), "max_model_len": context_length(entry, asked), "tokens": ids,
            "token_strs": token_strings(entry, ids) if req.return_token_strs else None}
    state.metrics.count_tokens(entry.ref, "/compat/vllm/tokenize", len(ids))
    return ok(body, entry, template_hash)


def detokenize(state: ServiceState, req: VllmDetokenizeRequest, name: str | None) -> Any:
    entry = target(state, req.model, name).entry
    if any(i < 0 for i in req.tokens):
        raise InvalidRequest("token ids must be >= 0", field="tokens")
    return ok({"prompt": entry.tokenizer.decode(req.tokens)}, entry)


def render_chat(state: ServiceState, req: VllmRenderRequest, name: str | None) -> Any:
    no_request_template(req.chat_template)
    if req.use_beam_search:
        raise InvalidRequest("use_beam_search is not supported by render", field="use_beam_search")
    entry = target(state, req.model, name).entry
    rendered = render(entry, req.messages, tools=req.tools,
                      template_kwargs=req.chat_template_kwargs,
                      add_generation_prompt=req.add_generation_prompt,
                      continue_final_message=req.continue_final_message,
                      offsets=req.return_token_offsets)
    state.metrics.count_tokens(entry.ref, "/compat/vllm/v1/chat/completions/render",
                               len(rendered.ids))
    body = {"request_id": f"chatcmpl-{os.urandom(16).hex()}", "token_ids": rendered.ids,
            "token_offsets": rendered.offsets if req.return_token_offsets else None,
            "features": None, "model": req.model,
            "sampling_params": {k: getattr(req, k) for k in _SAMPLING
                                if getattr(req, k) is not None},
            "stream": req.stream, "output_mode": "tokens", "priority": 0}
    return ok(body, entry, rendered.template_hash)


class VllmTokenizerInfo(BaseModel):
    """vLLM's TokenizerInfoResponse: the tokenizer's ``init_kwargs`` (its
    tokenizer_config.json, special tokens as strings), ``tokenizer_class`` and, when the
    tokenizer has one, ``chat_template``."""

    model_config = ConfigDict(extra="allow")

    tokenizer_class: str
    bos_token: str | None
    eos_token: str | None
    unk_token: str | None
    pad_token: str | None
    model_max_length: int = Field(description="The model's context length.")
    name_or_path: str
    chat_template: str | None = Field(default=None, description="Absent when the tokenizer "
                                                                "has no chat template.")


class VllmModelPermission(BaseModel):
    id: str
    object: Literal["model_permission"]
    created: int
    allow_create_engine: bool
    allow_sampling: bool
    allow_logprobs: bool
    allow_search_indices: bool
    allow_view: bool
    allow_fine_tuning: bool
    organization: str
    group: str | None
    is_blocking: bool


class VllmModelCard(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    root: str | None = Field(description="The tokenizer that serves it (name@version).")
    parent: str | None
    max_model_len: int | None = Field(description="The context length; null: unknown.")
    permission: list[VllmModelPermission]


class VllmModelList(BaseModel):
    object: Literal["list"]
    data: list[VllmModelCard]


def tokenizer_info(state: ServiceState, req: None, name: str | None) -> Any:
    found = target(state, None, name)
    entry = found.entry
    body = {**tokenizer_config(entry), "name_or_path": found.asked or entry.name,
            "model_max_length": context_length(entry, found.asked),
            "tokenizer_class": tokenizer_class(entry)}
    source = chat_template(entry)
    if source is not None:
        body["chat_template"] = source
    return ok(body, entry)


def list_models(state: ServiceState, req: None, name: str | None) -> Any:
    cards = model_cards(state, name, "vllm")
    for card in cards:  # vLLM's cards also carry a permission record
        card["permission"] = [{
            "id": f"modelperm-{os.urandom(16).hex()}", "object": "model_permission",
            "created": card["created"], "allow_create_engine": False, "allow_sampling": True,
            "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
            "allow_fine_tuning": False, "organization": "*", "group": None,
            "is_blocking": False}]
    return Reply(dumps({"object": "list", "data": cards}), 200, name_headers(state, name))


def health(state: ServiceState, req: None, name: str | None) -> Any:
    """200 with no body, as vLLM answers (a base URL's name must be served)."""
    return Reply(b"", 200, name_headers(state, name))


ROUTES = (
    Route("tokenize", "vLLM /tokenize: a prompt or a chat -> token ids", VllmTokenizeRequest,
          (VllmTokenizeResponse,), tokenize,
          {"prompt": "Hello, my name is", "add_special_tokens": True,
           "return_token_strs": True}),
    Route("detokenize", "vLLM /detokenize: token ids -> prompt", VllmDetokenizeRequest,
          (VllmDetokenizeResponse,), detokenize, {"tokens": [13225, 11, 922, 1308, 382]}),
    Route("v1/chat/completions/render",
          "vLLM render host: a chat completion request -> its prompt's token ids",
          VllmRenderRequest, (VllmRenderResponse,), render_chat,
          {"messages": [{"role": "user", "content": "Hello"},
                        {"role": "assistant", "content": "Hi there!"},
                        {"role": "user", "content": "How are you?"}]}),
    Route("tokenizer_info", "vLLM /tokenizer_info: the tokenizer's config, class and "
          "chat template", None, (VllmTokenizerInfo,), tokenizer_info, method="GET",
          errors=()),
    Route("v1/models", "vLLM /v1/models: the model names served, with max_model_len", None,
          (VllmModelList,), list_models, method="GET", errors=()),
    Route("health", "vLLM /health: 200 with no body when serving", None, (), health,
          method="GET", errors=()),
)
