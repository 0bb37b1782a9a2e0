"""Hugging Face text-generation-inference's tokenizer routes under ``/compat/tgi/``
(shapes of TGI's router: ``router/src/server.rs`` and ``lib.rs``).

* ``tokenize``: ``{"inputs": str, "parameters"?: {...}}`` -> a JSON array of
  ``{"id", "text", "start", "stop"}``: ``start``/``stop`` are byte offsets into
  ``inputs`` and ``text`` the input between them. TGI always adds the tokenizer's special
  tokens here (BOS/EOS: no offsets, so ``text`` is "" at 0..0).
* ``chat_tokenize``: a chat request (``messages``, ``tools``...) rendered with the
  generation prompt and tokenized without added special tokens ->
  ``{"tokenize_response": [tokens as above, offsets into the template's text],
  "templated_text"}``.

* ``GET info``: TGI's ``Info`` (``model_id``, ``max_input_tokens``, ``max_total_tokens``
  = the model's context length, ``context.py``; 0 when unknown...); ``GET health``:
  200, no body.

Errors: ``{"error": str, "error_type": str}``: 422 ``validation`` for a body it cannot
use, 422 ``template_error`` for a template that refuses the chat (or a tokenizer without
one), 404 ``not_found`` for a model nothing here serves. TGI serves one model and has no
``model`` field on tokenize; here ``model`` (TGI calls it unused on chat requests)
selects a tokenizer, as a ``/compat/tgi/models/{name}/`` base URL does; ``"tgi"``, the
placeholder huggingface_hub's client sends, is the server's default. A chat's own
``chat_template`` is refused.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, RootModel

from ... import __version__
from ...runtime.state import ServiceState
from ..handlers import Reply
from . import (CompatRequest, Dialect, Route, Target, name_headers, no_request_template, ok,
               render, target)
from .context import UNKNOWN, context_length


def _classify(status: int, code: str) -> tuple[int, str]:
    if code in ("template_error", "template_not_found", "reserved_literal_in_content"):
        return 422, "template_error"
    if code in ("unknown_model", "tokenizer_not_found"):
        return 404, "not_found"
    if status == 413:  # over a size limit: the contract's status (issue 33)
        return 413, "validation"
    if status in (400, 404, 415, 422):
        return 422, "validation"
    if status in (401, 403):  # the front door's bearer check
        return status, "authentication"
    return status, "generation" if status < 500 else "incomplete_generation"


class TgiError(BaseModel):
    error: str
    error_type: str


DIALECT = Dialect("tgi", TgiError, _classify,
                  lambda status, kind, message, param: {"error": message, "error_type": kind})


class TgiTokenizeRequest(CompatRequest):
    inputs: str
    parameters: dict[str, Any] | None = Field(
        default=None, description="Generation parameters: accepted, not used to tokenize.")
    model: str | None = Field(default=None, description="An extension: a name GET /models "
                                                        "knows selects that tokenizer.")


class TgiSimpleToken(BaseModel):
    id: int
    text: str
    start: int
    stop: int


class TgiTokenizeResponse(RootModel[list[TgiSimpleToken]]):
    """A bare array of tokens."""


class TgiChatTokenizeRequest(CompatRequest):
    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    chat_template: str | None = Field(default=None, description="Refused (not trusted).")


class TgiChatTokenizeResponse(BaseModel):
    tokenize_response: list[TgiSimpleToken]
    templated_text: str


def _target(state: ServiceState, model: str | None, name: str | None) -> Target:
    return target(state, None if model == "tgi" else model, name)


def _simple_tokens(text: str, ids: list[int], offsets: list[list[int]]) -> list[dict]:
    data = text.encode("utf-8", "surrogatepass")
    out = []
    for i, (start, stop) in zip(ids, offsets):
        if start == stop:  # added by the post-processor: no offsets
            out.append({"id": i, "text": "", "start": 0, "stop": 0})
        else:
            out.append({"id": i, "text": data[start:stop].decode("utf-8", "replace"),
                        "start": start, "stop": stop})
    return out


def tokenize(state: ServiceState, req: TgiTokenizeRequest, name: str | None) -> Any:
    entry = _target(state, req.model, name).entry
    ids, offsets = entry.tokenizer.encode_with_offsets(
        req.inputs, units="byte", special_tokens="allow", add_special_tokens=True)
    state.metrics.count_tokens(entry.ref, "/compat/tgi/tokenize", len(ids))
    return ok(_simple_tokens(req.inputs, ids, offsets), entry)


def chat_tokenize(state: ServiceState, req: TgiChatTokenizeRequest, name: str | None) -> Any:
    no_request_template(req.chat_template)
    entry = _target(state, req.model, name).entry
    rendered = render(entry, req.messages, tools=req.tools, add_generation_prompt=True,
                      offsets=True)
    text = rendered.text
    # the renderer's offsets are code points; TGI's are bytes of the templated text
    byte_at = [0]
    for ch in text:
        byte_at.append(byte_at[-1] + len(ch.encode("utf-8", "surrogatepass")))
    offsets = [[byte_at[a], byte_at[b]] for a, b in rendered.offsets or []]
    state.metrics.count_tokens(entry.ref, "/compat/tgi/chat_tokenize", len(rendered.ids))
    return ok({"tokenize_response": _simple_tokens(text, rendered.ids, offsets),
               "templated_text": text}, entry, rendered.template_hash)


class TgiInfo(BaseModel):
    """TGI's ``GET /info`` (router ``Info``)."""

    model_id: str
    model_sha: str | None
    model_pipeline_tag: str | None
    max_concurrent_requests: int
    max_best_of: int
    max_stop_sequences: int
    max_input_tokens: int = Field(description="The context length less one (0: unknown).")
    max_total_tokens: int = Field(description="The model's context length (0: unknown).")
    validation_workers: int
    max_client_batch_size: int
    router: str
    version: str
    sha: str | None
    docker_label: str | None


def info(state: ServiceState, req: None, name: str | None) -> Any:
    found = target(state, None, name)
    entry = found.entry
    length = context_length(entry, found.asked)
    total = 0 if length == UNKNOWN else length
    return ok({"model_id": found.asked or entry.name, "model_sha": None,
               "model_pipeline_tag": "text-generation", "max_concurrent_requests": 128,
               "max_best_of": 1, "max_stop_sequences": 0,
               "max_input_tokens": max(total - 1, 0), "max_total_tokens": total,
               "validation_workers": 1, "max_client_batch_size": state.settings.max_batch,
               "router": "tokserve", "version": __version__, "sha": None,
               "docker_label": None}, entry)


def health(state: ServiceState, req: None, name: str | None) -> Any:
    """200 with no body, as TGI answers (a base URL's name must be served)."""
    return Reply(b"", 200, name_headers(state, name))


ROUTES = (
    Route("tokenize", "TGI /tokenize: inputs -> tokens with their text and byte offsets",
          TgiTokenizeRequest, (TgiTokenizeResponse,), tokenize,
          {"inputs": "My name is Olivier and I"}),
    Route("chat_tokenize", "TGI /chat_tokenize: a chat -> its template's text and tokens",
          TgiChatTokenizeRequest, (TgiChatTokenizeResponse,), chat_tokenize,
          {"model": "deepseek-v4", "messages": [{"role": "user", "content": "Hi!"}]}),
    Route("info", "TGI /info: the model, its max_input_tokens and max_total_tokens", None,
          (TgiInfo,), info, method="GET", errors=()),
    Route("health", "TGI /health: 200 with no body when serving", None, (), health,
          method="GET", errors=()),
)
