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
  ``chat_template_kwargs`` -> ``{"prompt"}``.

Errors: ``{"error": {"code", "message", "type"}}`` (``invalid_request_error`` 400,
``not_found_error`` 404, ``server_error`` 500...). ``model`` works as in llama.cpp's
router mode: a known name selects that tokenizer, an unknown one is 400.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ...errors import InvalidRequest, UnknownModel
from ...runtime.state import ServiceState
from . import CompatRequest, Dialect, Route, encode, ok, render

_TYPES = {400: "invalid_request_error", 401: "authentication_error",
          403: "permission_error", 404: "not_found_error", 500: "server_error",
          501: "not_supported_error", 503: "unavailable_error"}


def _classify(status: int, code: str) -> tuple[int, str]:
    if code in ("unknown_model", "tokenizer_not_found"):  # router mode: 400
        return 400, "invalid_request_error"
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
    chat_template_kwargs: dict[str, Any] | None = None


class LlamaCppApplyTemplateResponse(BaseModel):
    prompt: str


def _entry(state: ServiceState, model: str | None) -> Any:
    if model is None:
        return state.registry.resolve(None)
    try:
        return state.registry.lookup(None, model)[0]
    except UnknownModel:
        raise UnknownModel(f"model '{model}' not found", model=model) from None


def tokenize(state: ServiceState, req: LlamaCppTokenizeRequest) -> Any:
    entry = _entry(state, req.model)
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
        data = entry.tokenizer.decode_bytes([i])
        try:
            piece: str | list[int] = data.decode("utf-8")
        except UnicodeDecodeError:
            piece = list(data)
        pieces.append({"id": i, "piece": piece})
    return ok({"tokens": pieces}, entry)


def detokenize(state: ServiceState, req: LlamaCppDetokenizeRequest) -> Any:
    entry = _entry(state, req.model)
    return ok({"content": entry.tokenizer.decode(req.tokens or [])}, entry)


def apply_template(state: ServiceState, req: LlamaCppApplyTemplateRequest) -> Any:
    if not req.messages:
        raise InvalidRequest("'messages' is required", field="messages")
    entry = _entry(state, req.model)
    rendered = render(entry, req.messages, tools=req.tools,
                      template_kwargs=req.chat_template_kwargs,
                      add_generation_prompt=req.add_generation_prompt
                      and not req.continue_final_message,
                      continue_final_message=req.continue_final_message)
    return ok({"prompt": rendered.text}, entry, rendered.template_hash)


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
)
