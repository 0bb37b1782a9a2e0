"""Routes that speak other serving stacks' tokenizer APIs, so their clients work here by
changing their base URL: ``/compat/vllm/``, ``/compat/sglang/``, ``/compat/llamacpp/``,
``/compat/tgi/``, ``/compat/tei/`` (one module each), and the same routes under
``/compat/<stack>/models/{name}/`` for clients that cannot name a model.

Each route takes the request its project documents (field names, defaults, batch forms;
fields it does not know are ignored, as those projects ignore them) and answers the
project's response shape, including its error shape and statuses, so a client's own
error handling keeps working. Besides tokenizing, each base answers the discovery routes
its clients call first (``tokenizer_info``, ``props``, ``info``, ``get_model_info``,
``v1/models``, ``health``) with real values (``discovery.py``, ``context.py``). What
the routes share lives here:

* the tokenizer (``target``): the ``{name}`` of a per-model base URL, else the request's
  ``model`` (any name ``/models`` knows), else the server's default tokenizer. One rule on
  every stack: a name nobody serves is 404 in the stack's error shape; a body ``model``
  that names another tokenizer than its base URL's is 400. Every answer names what
  served it in headers (``X-Tokenizer``, ``X-Tokenizer-Hash``, and ``X-Template-Hash``
  for chat forms), never in the body;
* special-token literals in a prompt are special tokens, as each project's tokenizer
  treats them; in chat messages they are plain text (``reserved_literals: "escape"``),
  so a user cannot forge a turn boundary through a compat route either, and a request's
  own ``chat_template`` is refused on every chat route (``no_request_template``): the
  artifact's template renders;
* errors: ``Dialect`` renders our typed errors in the project's shape and status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Response
from pydantic import BaseModel, ConfigDict

from .... import errors as engine_errors
from ...errors import InvalidRequest, ServiceError, UnknownModel, dumps, shorten, status_for
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


#: (state, the parsed request or None for a GET, the base URL's ``{name}`` or None)
Work = Callable[[ServiceState, Any, "str | None"], Reply]
Served = Callable[..., Awaitable[Reply]]


@dataclass(frozen=True)
class Route:
    """One compat route: its method and path under ``/compat/<dialect>/`` (and under
    ``/compat/<dialect>/models/{name}/``), request and response models (for the OpenAPI
    document) and what serves it. A GET route has no request model; an empty
    ``responses`` is an answer without a body (the stacks' ``health``)."""

    path: str
    summary: str
    request: type[CompatRequest] | None
    responses: tuple[type[Any], ...]
    work: Work
    example: dict[str, Any] | None = None
    method: str = "POST"
    #: the (status, our code) pairs its work can raise, for the document (None: any of
    #: ``BODY_ERRORS``); a per-model path adds ``NAME_ERRORS``
    errors: tuple[tuple[int, str], ...] | None = None

    def handler(self, dialect: Dialect) -> Served:
        return handler(dialect, self.request, self.work)


#: Every status our errors can have on a route with a body, each with a code that picks
#: its dialect's mapping.
BODY_ERRORS = ((400, "unknown_token_id"), (400, "template_error"), (400, "invalid_utf8"),
               (404, "tokenizer_not_found"), (404, "unknown_model"),
               (404, "template_not_found"), (413, "payload_too_large"),
               (415, "unsupported_media_type"), (422, "invalid_request"))
#: What a GET route can answer besides its 200: a base URL's name nobody serves.
NAME_ERRORS = ((404, "unknown_model"), (404, "tokenizer_not_found"))


def statuses(dialect: Dialect, errors: tuple[tuple[int, str], ...] | None = None
             ) -> dict[int, tuple[str, ...]]:
    """The statuses a dialect answers our errors with (for the document)."""
    out: dict[int, set[str]] = {}
    for status, code in BODY_ERRORS if errors is None else errors:
        mapped, kind = dialect.classify(status, code)
        out.setdefault(mapped, set()).add(kind)
    return {s: tuple(sorted(kinds)) for s, kinds in sorted(out.items())}


def handler(dialect: Dialect, model: type[CompatRequest] | None, work: Work) -> Served:
    """A fast-lane handler ``(state, raw body, name=None)``: parse ``model`` (unknown
    fields ignored; a GET has no body), run ``work`` (in a worker thread: chat templates
    and long prompts), answer errors in ``dialect``. ``name`` is the ``{name}`` of a
    per-model base URL."""

    async def serve(state: ServiceState, raw: bytes, name: str | None = None) -> Reply:
        try:
            req = None
            if model is not None:
                req = await state.parse(raw, model, unknown="ignore")
                check_limits(state.settings, req)
            return await state.run(lambda: work(state, req, name), 1 << 62)
        except Exception as exc:
            reply = dialect.reply(exc)
            if reply is None:
                raise
            return reply

    return serve


# ==== what the routes share ==============================================================


@dataclass(frozen=True)
class Target:
    """What serves a request: the tokenizer, and the model name it was asked by (the
    base URL's ``{name}`` or the body's ``model``; None for the server's default)."""

    entry: Entry
    asked: str | None


def _lookup(state: ServiceState, name: str) -> Entry:
    """A model or tokenizer name (``name@version`` too) -> its entry; raises
    ``UnknownModel`` or ``TokenizerNotFound`` (both 404 on every stack), worded for a
    client that has no ``tokenizer`` field."""
    try:
        return state.registry.lookup(None, name)[0]
    except UnknownModel as exc:  # its message names the contract's `tokenizer` field
        suggestions = exc.details.get("suggestions") or []
        exc.message = (f"The model `{shorten(name)}` does not exist here"
                       + (f"; did you mean {', '.join(suggestions)}?" if suggestions else "")
                       + " (GET /models lists the model names; a served tokenizer's name or "
                       "name@version works too)")
        raise


def target(state: ServiceState, model: str | None, pinned: str | None = None) -> Target:
    """The tokenizer for a request: the base URL's ``pinned`` name, else its ``model``,
    else the server's default.

    Raises:
        UnknownModel, TokenizerNotFound: a name (in the path or the body) that nothing
            here serves (404 on every stack).
        InvalidRequest: the body's ``model`` is another tokenizer than the path's.
    """
    if pinned is None:
        if not model:
            return Target(state.registry.resolve(None), None)
        return Target(_lookup(state, model), model)
    entry = _lookup(state, pinned)
    if model:
        other = _lookup(state, model)
        if other is not entry:
            raise InvalidRequest(
                f"model {shorten(model)!r} is served by {other.ref}, but this base URL is "
                f"for {shorten(pinned)!r} ({entry.ref}); send it to "
                f"/compat/<stack>/models/<name>/ of its own name, or leave `model` out",
                field="model")
    return Target(entry, model or pinned)


def no_request_template(chat_template: str | None) -> None:
    """A chat route renders the artifact's own template, never one a request brings."""
    if chat_template is not None:
        raise InvalidRequest("chat_template in a request is not trusted; the tokenizer's "
                             "own template renders", field="chat_template")


def headers_for(entry: Entry, template_hash: str | None = None
                ) -> tuple[tuple[bytes, bytes], ...]:
    out = [(b"x-tokenizer", entry.ref.encode()), (b"x-tokenizer-hash", entry.hash.encode())]
    if template_hash:
        out.append((b"x-template-hash", template_hash.encode()))
    return tuple(out)


def name_headers(state: ServiceState, name: str | None) -> tuple[tuple[bytes, bytes], ...]:
    """The headers naming a per-model base URL's tokenizer (404 when nothing serves the
    name); none on a stack's plain base, whose listings are not one tokenizer's."""
    return headers_for(target(state, None, name).entry) if name is not None else ()


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
    literal, else its vocabulary spelling (``Ġworld``, ``▁world``; ``Tokenizer.token_string``)."""
    token_string = entry.tokenizer.token_string
    return [token_string(i) for i in ids]
