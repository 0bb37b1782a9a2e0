"""Routes that speak other serving stacks' tokenizer APIs, so their clients work here by
changing their base URL: ``/compat/vllm/``, ``/compat/sglang/``, ``/compat/llamacpp/``,
``/compat/tgi/`` (one module each).

Each route takes the request its project documents (field names, defaults, batch forms;
fields it does not know are ignored, as those projects ignore them) and answers the
project's response shape, including its error shape and statuses, so a client's own
error handling keeps working. What they have in common lives here:

* the tokenizer: the request's ``model`` (any name ``/models`` knows), else the server's
  default tokenizer; every answer names what served it in headers (``X-Tokenizer``,
  ``X-Tokenizer-Hash``, and ``X-Template-Hash`` for chat forms), never in the body;
* special-token literals in a prompt are special tokens, as each project's tokenizer
  treats them; in chat messages they are plain text (``reserved_literals: "escape"``),
  so a user cannot forge a turn boundary through a compat route either;
* errors: ``Dialect`` renders our typed errors in the project's shape and status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Response
from pydantic import BaseModel, ConfigDict

from .... import errors as engine_errors
from ....decoders.byte_level import BYTE_TO_CHAR
from ...errors import ServiceError, dumps, shorten, status_for
from ...runtime.registry import Entry
from ...runtime.state import ServiceState
from ..chat import ChatInput, render as chat_render
from ..conversation import select_template
from ..handlers import Reply
from .limits import check_limits


class CompatRequest(BaseModel):
    """Base of the compat request models: unknown fields are ignored (as the projects
    do); the fields we read are typed strictly, so the documented schema is the truth."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


@dataclass(frozen=True)
class Dialect:
    """How one project writes its errors."""

    name: str
    error_model: type[BaseModel]
    #: (HTTP status, our error code) -> (status it answers, its error "type")
    classify: Callable[[int, str], tuple[int, str]]
    #: (status, type, message, param) -> the error body
    body: Callable[[int, str, str, str | None], Any]

    def render(self, status: int, code: str, message: str,
               headers: Mapping[str, str] | None = None, **details: Any) -> Response:
        """``errors.error_response``'s signature, in this project's shape."""
        status, kind = self.classify(status, code)
        param = details.get("field") if isinstance(details.get("field"), str) else None
        return Response(dumps(self.body(status, kind, shorten(message, 1024), param)),
                        status_code=status, media_type="application/json",
                        headers=dict(headers or {}) or None)

    def reply(self, exc: BaseException) -> Reply | None:
        """Our typed error as this project's reply (None for an untyped error: a bug,
        answered as the contract's 500 by the caller)."""
        if not isinstance(exc, (ServiceError, engine_errors.EngineError)):
            return None
        status, kind = self.classify(status_for(exc), exc.code)
        field = exc.details.get("field")
        body = self.body(status, kind, shorten(exc.message, 1024),
                         field if isinstance(field, str) else None)
        return Reply(dumps(body), status)


Work = Callable[[ServiceState, Any], Reply]


@dataclass(frozen=True)
class Route:
    """One compat route: its path under ``/compat/<dialect>/``, request and response
    models (for the OpenAPI document) and what serves it."""

    path: str
    summary: str
    request: type[CompatRequest]
    responses: tuple[type[Any], ...]
    work: Work
    example: dict[str, Any] | None = None

    def handler(self, dialect: Dialect) -> Callable[[ServiceState, bytes], Awaitable[Reply]]:
        return handler(dialect, self.request, self.work)


#: Every status our errors can have, with a code that picks its dialect's mapping.
_OUR_ERRORS = ((400, "unknown_token_id"), (400, "template_error"), (400, "invalid_utf8"),
               (404, "tokenizer_not_found"), (404, "unknown_model"),
               (404, "template_not_found"), (413, "payload_too_large"),
               (415, "unsupported_media_type"), (422, "invalid_request"))


def statuses(dialect: Dialect) -> dict[int, tuple[str, ...]]:
    """The statuses a dialect answers our errors with (for the document)."""
    out: dict[int, set[str]] = {}
    for status, code in _OUR_ERRORS:
        mapped, kind = dialect.classify(status, code)
        out.setdefault(mapped, set()).add(kind)
    return {s: tuple(sorted(kinds)) for s, kinds in sorted(out.items())}


def handler(dialect: Dialect, model: type[CompatRequest],
            work: Work) -> Callable[[ServiceState, bytes], Awaitable[Reply]]:
    """A fast-lane handler: parse ``model`` (unknown fields ignored), run ``work`` (in a
    worker thread: chat templates and long prompts), answer errors in ``dialect``."""

    async def serve(state: ServiceState, raw: bytes) -> Reply:
        try:
            req = await state.parse(raw, model, unknown="ignore")
            check_limits(state.settings, req)
            return await state.run(lambda: work(state, req), 1 << 62)
        except Exception as exc:
            reply = dialect.reply(exc)
            if reply is None:
                raise
            return reply

    return serve


# ==== what the routes share ==============================================================


def resolve(state: ServiceState, model: str | None) -> Entry:
    """The tokenizer for a request's ``model`` (else the server's default)."""
    return state.registry.lookup(None, model or None)[0]


def headers_for(entry: Entry, template_hash: str | None = None
                ) -> tuple[tuple[bytes, bytes], ...]:
    out = [(b"x-tokenizer", entry.ref.encode()), (b"x-tokenizer-hash", entry.hash.encode())]
    if template_hash:
        out.append((b"x-template-hash", template_hash.encode()))
    return tuple(out)


def ok(body: Any, entry: Entry, template_hash: str | None = None) -> Reply:
    return Reply(dumps(body), 200, headers_for(entry, template_hash))


def encode(entry: Entry, text: str, add_special_tokens: bool,
           parse_special: bool = True) -> list[int]:
    return entry.tokenizer.encode(text, special_tokens="allow" if parse_special else "text",
                                  add_special_tokens=add_special_tokens)


def around(entry: Entry, ids: list[int]) -> list[int]:
    """``ids`` with what the tokenizer's post-processor adds (BOS/EOS) around them."""
    tok = entry.tokenizer
    if not (tok.special_prefix or tok.special_suffix):
        return ids
    return [*tok.special_prefix, *ids, *tok.special_suffix]


@dataclass
class Rendered:
    text: str
    ids: list[int]
    offsets: list[list[int]] | None
    template_hash: str


def render(entry: Entry, messages: Sequence[Any], *, tools: Any = None,
           template_kwargs: Mapping[str, Any] | None = None,
           add_generation_prompt: bool = True, continue_final_message: bool = False,
           offsets: bool = False) -> Rendered:
    """The chat through the tokenizer's default template (caller literals as text)."""
    _, source, template_hash = select_template(entry, None)
    chat = ChatInput(source, list(messages), template_hash=template_hash, tools=tools,
                     template_kwargs=template_kwargs or {},
                     add_generation_prompt=add_generation_prompt,
                     continue_final_message=continue_final_message,
                     reserved_literals="escape", return_offsets=offsets)
    result = chat_render(entry.tokenizer, chat)
    return Rendered(result.text, list(result.ids or []), result.offsets, template_hash)


def token_strings(entry: Entry, ids: Sequence[int]) -> list[str]:
    """Each id as Hugging Face's ``convert_ids_to_tokens`` spells it: an added token's
    literal, else its bytes in the byte-level alphabet (``Ġworld``)."""
    tok = entry.tokenizer
    literals = {i: lit for lit, i in tok.special_tokens.items()}
    return [literals.get(i) or "".join(BYTE_TO_CHAR[b] for b in tok.decode_bytes([i]))
            for i in ids]
