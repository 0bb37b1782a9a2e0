"""vLLM's tokenizer routes under ``/compat/vllm/`` (shapes of vLLM 0.33:
``vllm/entrypoints/serve/tokenize/protocol.py`` and ``scale_out/render``).

* ``POST tokenize``: the completion form (``prompt``; ``add_special_tokens`` defaults to
  true) or the chat form (``messages``; ``add_generation_prompt`` true and
  ``add_special_tokens`` false by default) -> ``{count, max_model_len, tokens,
  token_strs}`` (``token_strs`` null unless ``return_token_strs``).
* ``POST detokenize``: ``{tokens}`` -> ``{prompt}`` (special tokens kept).
* ``POST v1/chat/completions/render``: a chat completion request -> the token ids a
  disaggregated render host hands to a generation host: ``{request_id, token_ids,
  token_offsets, model, sampling_params, ...}`` (the fields of vLLM's GenerateRequest that
  a tokenizer can know; sampling fields are passed through as sent).

Errors: ``{"error": {"message", "type", "param", "code"}}`` with ``code`` = the status;
a body vLLM's schema refuses is 400 (not 422), an unknown model 404. ``max_model_len`` is
the tokenizer's ``model_max_length`` when its artifact records one, else -1.
``chat_template`` in a request is refused (vLLM refuses it unless started with
``--trust-request-chat-template``); the artifact's template renders.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field

from ...errors import InvalidRequest
from ...runtime.state import ServiceState
from . import CompatRequest, Dialect, Route, around, encode, ok, render, resolve, token_strings

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


def _no_request_template(req: VllmTokenizeRequest | VllmRenderRequest) -> None:
    if req.chat_template is not None:
        raise InvalidRequest("chat_template in a request is not trusted; the tokenizer's "
                             "own template renders", field="chat_template")


def _max_model_len(entry: Any) -> int:
    value = entry.manifest.get("model_max_length")
    return value if isinstance(value, int) else -1


def tokenize(state: ServiceState, req: VllmTokenizeRequest) -> Any:
    if (req.prompt is None) == (req.messages is None):
        raise InvalidRequest("exactly one of prompt and messages is required")
    entry = resolve(state, req.model)
    template_hash = None
    if req.prompt is not None:
        add = True if req.add_special_tokens is None else req.add_special_tokens
        ids = encode(entry, req.prompt, add)
    else:
        _no_request_template(req)
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
    body = {"count": len(ids), "max_model_len": _max_model_len(entry), "tokens": ids,
            "token_strs": token_strings(entry, ids) if req.return_token_strs else None}
    state.metrics.count_tokens(entry.ref, "/compat/vllm/tokenize", len(ids))
    return ok(body, entry, template_hash)


def detokenize(state: ServiceState, req: VllmDetokenizeRequest) -> Any:
    entry = resolve(state, req.model)
    if any(i < 0 for i in req.tokens):
        raise InvalidRequest("token ids must be >= 0", field="tokens")
    return ok({"prompt": entry.tokenizer.decode(req.tokens)}, entry)


def render_chat(state: ServiceState, req: VllmRenderRequest) -> Any:
    _no_request_template(req)
    if req.use_beam_search:
        raise InvalidRequest("use_beam_search is not supported by render", field="use_beam_search")
    entry = resolve(state, req.model)
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
)
