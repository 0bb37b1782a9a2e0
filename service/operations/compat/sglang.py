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

Errors are flat: ``{"object": "error", "message", "type", "param", "code"}``, 400 for a
body it cannot use. ``model`` selects a tokenizer when it names one (SGLang itself
ignores it, so an unknown name is the server's default, not an error);
``max_model_len`` is the artifact's ``model_max_length``, else -1.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ...errors import InvalidRequest, TokenizerNotFound, UnknownModel
from ...runtime.state import ServiceState
from . import CompatRequest, Dialect, Route, around, encode, ok, render


def _classify(status: int, code: str) -> tuple[int, str]:
    if status == 413:  # over a size limit: the contract's status (issue 33)
        return 413, "Payload Too Large"
    if status in (415, 422):
        return 400, "Bad Request"
    if code in ("unknown_token_id", "invalid_utf8"):
        return 400, "DecodeError"
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


def _entry(state: ServiceState, model: str) -> Any:
    try:
        return state.registry.lookup(None, model)[0]
    except (UnknownModel, TokenizerNotFound):  # SGLang ignores the name
        return state.registry.resolve(None)


def tokenize(state: ServiceState, req: SglangTokenizeRequest) -> Any:
    if (req.prompt is None) == (req.messages is None):
        raise InvalidRequest("Exactly one of 'prompt' or 'messages' must be provided.")
    entry = _entry(state, req.model)
    limit = entry.manifest.get("model_max_length")
    head = {"max_model_len": limit if isinstance(limit, int) else -1}
    if isinstance(req.prompt, list):
        rows = [encode(entry, p, req.add_special_tokens) for p in req.prompt]
        state.metrics.count_tokens(entry.ref, "/compat/sglang/tokenize", sum(map(len, rows)))
        return ok({"tokens": rows, "count": [len(r) for r in rows], **head}, entry)
    if req.prompt is not None:
        ids, template_hash = encode(entry, req.prompt, req.add_special_tokens), None
    else:
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


def detokenize(state: ServiceState, req: SglangDetokenizeRequest) -> Any:
    entry = _entry(state, req.model)
    decode = entry.tokenizer.decode
    if req.tokens and isinstance(req.tokens[0], list):
        return ok({"text": [decode(r, skip_special_tokens=req.skip_special_tokens)
                            for r in req.tokens]}, entry)
    return ok({"text": decode(req.tokens, skip_special_tokens=req.skip_special_tokens)},
              entry)


_TOKENIZE = {"prompt": "What is the capital of France?", "add_special_tokens": False}
_DETOKENIZE = {"tokens": [3923, 374, 279, 6864, 315, 9822, 30], "skip_special_tokens": True}
ROUTES = tuple(
    route for prefix in ("", "v1/") for route in (
        Route(prefix + "tokenize", "SGLang /tokenize: prompt(s) or a chat -> token ids",
              SglangTokenizeRequest, (SglangTokenizeResponse,), tokenize, _TOKENIZE),
        Route(prefix + "detokenize", "SGLang /detokenize: token ids (or batches) -> text",
              SglangDetokenizeRequest, (SglangDetokenizeResponse,), detokenize, _DETOKENIZE)))
