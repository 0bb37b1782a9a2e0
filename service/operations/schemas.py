"""Pydantic models of ``shared/API.md``: the request bodies, field by field.

``extra="forbid"`` everywhere: a misspelt option (``"retrun_offsets"``) is a 422, never a
silently ignored flag. Cross-field rules ("exactly one of text/texts") are
model validators. Responses are built as plain dicts and serialized with orjson in the
routes (cheaper than response models); their shapes are documented in docs/SERVICE.md.

Ids are declared strict (``list[StrictInt]``): ``"5"``, ``5.0`` and ``true`` are
not token ids. Flags are strict too (``StrictBool``): ``"true"``, ``1`` and ``"yes"`` are
422, so a client's mistyped flag is never read as something it did not mean. Validation
of large id lists stays in pydantic-core (Rust), one pass.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from ...decoders.decoder import Errors
from ...offsets import Units
from ...tokenizer import Policy

ReservedLiterals = Literal["reject", "escape", "allow"]

_TOKENIZER = Field(
    default=None,
    description='"name" (current version) or "name@version"; a model name is accepted too '
    '(see `model`); absent: the server default.',
    examples=["o200k_base", "cl100k_base@1"],
)
_MODEL = Field(
    default=None,
    description="A model name or Hugging Face repo id (gpt-4o, openai/gpt-oss-20b): the "
    "request is served by the tokenizer that model uses (GET /models), and the response "
    "echoes `model`. Not together with `tokenizer`.",
    examples=["gpt-4o", "openai/gpt-oss-20b"],
)
_MAX_TOKENS = Field(
    default=None, ge=0,
    description="Keep at most this many tokens (see `truncation`); the response says "
    "`truncated` and `original_count`.",
)


class _Request(BaseModel):
    """A request body. Its rules (model validators) look at which fields are given and at
    flags and literals, never at a free string's content: ``parsing`` takes a body made
    of strings, flags and literals without the validator when a body of the same shape
    passes it (``quick_parse``; tests/service/test_parsing.py holds both ways equal)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    quick_parse: ClassVar[bool] = True


class _Targeted(_Request):
    """A request that names what tokenizes it: a tokenizer, or a model that uses one."""

    tokenizer: str | None = _TOKENIZER
    model: str | None = _MODEL

    def _check_target(self) -> None:
        if self.tokenizer is not None and self.model is not None:
            raise ValueError("give `tokenizer` or `model`, not both")


def _exactly_one(model: BaseModel, *names: str) -> None:
    """The "exactly one of" rule; ``http/openapi.py`` states the same rule in the
    schema from each model's ``one_of``, so a body the schema accepts is never a 422."""
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) != 1:
        listed = " / ".join(f"`{n}`" for n in names)
        got = ", ".join(f"`{n}`" for n in given) or "none"
        raise ValueError(f"exactly one of {listed} is required (got {got})")


class EncodeRequest(_Targeted):
    one_of: ClassVar[tuple[str, ...]] = ("text", "texts")

    text: str | None = Field(default=None, description="The text; exactly one of text/texts.")
    texts: list[str] | None = Field(default=None, description="A batch; results in order.")
    special_tokens: Policy = Field(
        default="reject",
        description="What a special/added-token literal in the text means: reject (400), "
        "allow (its id), text (ordinary characters).",
    )
    add_special_tokens: StrictBool = Field(
        default=False, description="Apply the tokenizer's post-processor (BOS/EOS)."
    )
    return_offsets: StrictBool = Field(default=False, description="Include `offsets`.")
    offset_units: Units = Field(
        default="char", description="Offsets in code points, UTF-16 units or UTF-8 bytes."
    )
    return_tokens: StrictBool = Field(
        default=False, description="Include each token's bytes decoded as UTF-8 (replace)."
    )
    max_tokens: StrictInt | None = _MAX_TOKENS
    truncation: Literal["right", "left"] = Field(
        default="right",
        description="With `max_tokens`: keep the first tokens (right: the end is cut) or the "
        "last (left). BOS/EOS added by `add_special_tokens` are kept; the text's tokens "
        "are cut. Ids, offsets and tokens stay aligned.",
    )

    @model_validator(mode="after")
    def _one_input(self) -> EncodeRequest:
        _exactly_one(self, *self.one_of)
        self._check_target()
        return self


class ChatFields(_Request):
    """The chat fields shared by /render_chat and /count-with-messages."""

    messages: list[dict[str, Any]] | None = Field(
        default=None, min_length=1,
        description='`{"role": str, "content": str | list of parts, ...}`; extra keys '
        "(tool_calls, ...) are passed through to the template.",
    )
    add_generation_prompt: StrictBool = False
    continue_final_message: StrictBool = False
    tools: list[dict[str, Any]] | None = Field(default=None, description="Passed to the template.")
    template: str | None = Field(
        default=None, description="A named template of the artifact; default: its default."
    )
    template_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Extra template variables (e.g. enable_thinking)."
    )
    reserved_literals: ReservedLiterals = Field(
        default="reject",
        description="Special-token literals inside message content: reject (400), escape "
        "(plain text) or allow (trusted).",
    )
    return_message_counts: StrictBool = Field(
        default=False,
        description="Include `message_counts` ([{index, role, tokens}]), `tools_tokens` "
        "and `template_tokens`, which sum to `count`.",
    )
    max_tokens: StrictInt | None = Field(
        default=None, ge=1,
        description="The prompt must fit in this many tokens: with `fit` the oldest turns "
        "are dropped until it does, without it a longer prompt is 400 context_overflow.",
    )
    fit: Literal["drop_oldest"] | None = Field(
        default=None,
        description="drop_oldest: keep system/developer messages and the last user turn, "
        "drop whole oldest turns until the render fits `max_tokens`; the response lists "
        "`dropped_messages`.",
    )

    def _check_chat(self) -> None:
        if self.add_generation_prompt and self.continue_final_message:
            raise ValueError(
                "add_generation_prompt and continue_final_message cannot both be true"
            )


class CountRequest(EncodeRequest, ChatFields):
    """/count: an /encode request (text/texts) or a chat request (messages).

    A /render_chat body is a valid chat /count body as it is: its output options are
    accepted and change nothing (the count is the rendered prompt's, always).
    ``max_tokens`` means `truncation` for text and `fit` for messages."""

    max_tokens: StrictInt | None = Field(
        default=None, ge=0,
        description="text/texts: keep at most this many tokens (`truncation`); messages: "
        "the prompt must fit (`fit`, as /render_chat).",
    )

    one_of: ClassVar[tuple[str, ...]] = ("text", "texts", "messages")

    return_ids: StrictBool = True
    return_assistant_mask: StrictBool = False

    @model_validator(mode="after")
    def _one_input(self) -> CountRequest:  # overrides EncodeRequest's rule
        _exactly_one(self, *self.one_of)
        self._check_target()
        if self.messages is not None:
            self._check_chat()
        return self


class RenderChatRequest(ChatFields, _Targeted):
    messages: list[dict[str, Any]] = Field(  # type: ignore[assignment]
        min_length=1, description='`{"role": str, "content": str | list of parts, ...}`.'
    )
    return_ids: StrictBool = True
    return_offsets: StrictBool = Field(default=False, description="Offsets (chars) into `text`.")
    return_assistant_mask: StrictBool = Field(
        default=False, description="Include `assistant_spans` and `labels`."
    )

    @model_validator(mode="after")
    def _chat_rules(self) -> RenderChatRequest:
        self._check_chat()
        self._check_target()
        return self


class DecodeRequest(_Targeted):
    one_of: ClassVar[tuple[str, ...]] = ("ids", "batch_ids")

    ids: list[StrictInt] | None = Field(default=None, description="Exactly one of ids/batch_ids.")
    batch_ids: list[list[StrictInt]] | None = None
    skip_special_tokens: StrictBool = False
    errors: Errors = Field(
        default="replace", description="strict: bytes that are not UTF-8 → 400 invalid_utf8."
    )

    @model_validator(mode="after")
    def _one_input(self) -> DecodeRequest:
        _exactly_one(self, *self.one_of)
        self._check_target()
        return self


# ==== responses =========================================================================
# Built as dicts/bytes by the handlers (cheaper than response models); these models
# exist to document them (http/openapi.py) and tests/service/test_openapi.py validates real
# responses of every operation against them, so the two cannot drift.

_HASH = r"^sha256:[0-9a-f]{64}$"


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Head(_Response):
    tokenizer: str = Field(description="name@version that answered.", examples=["o200k_base@1"])
    tokenizer_hash: str = Field(pattern=_HASH, description="Content hash of the tokenizer.")
    model: str | None = Field(default=None,
                              description="The model name the request asked by, if any.")


class _Truncation(_Response):
    truncated: bool | None = Field(default=None, description="With max_tokens: ids were cut.")
    original_count: int | None = Field(default=None,
                                       description="With max_tokens: the count before.")


class MessageCount(_Response):
    index: int = Field(description="Position of the message in the request's `messages`.")
    role: str | None
    tokens: int


class _Breakdown(_Response):
    message_counts: list[MessageCount] | None = Field(
        default=None, description="With return_message_counts: tokens per message.")
    tools_tokens: int | None = Field(default=None, description="Tokens of the tool definitions.")
    template_tokens: int | None = Field(
        default=None, description="Tokens the template wrote around the caller's strings.")
    dropped_messages: list[int] | None = Field(
        default=None, description="With fit: indices of the messages left out.")


class EncodedText(_Truncation):
    ids: list[int]
    count: int = Field(description="len(ids).")
    offsets: list[list[int]] | None = Field(
        default=None, description="Present with return_offsets: [start, end) per token.")
    tokens: list[str] | None = Field(
        default=None, description="Present with return_tokens: each token's bytes as UTF-8.")


class EncodeResponse(_Head, EncodedText):
    """/encode with `text`."""


class EncodeBatchResponse(_Head):
    """/encode with `texts`: one result per text, in input order."""

    results: list[EncodedText]


class CountResponse(_Head, _Truncation):
    """/count with `text`."""

    count: int


class CountBatchResponse(_Head):
    """/count with `texts`."""

    counts: list[int]
    total: int
    truncated: list[bool] | None = Field(default=None, description="With max_tokens.")
    original_counts: list[int] | None = Field(default=None, description="With max_tokens.")


class CountChatResponse(_Head, _Breakdown):
    """/count with `messages`: the rendered prompt's token count, or OpenAI's documented
    chat accounting for its encodings (method openai-chat-format, no template)."""

    template_hash: str | None = Field(default=None, pattern=_HASH)
    count: int
    method: Literal["chat_template", "openai-chat-format"]
    exact: bool = Field(description="False when the documented rule is an estimate "
                                    "(tools, images, tool calls).")


class DecodeResponse(_Head):
    """/decode with `ids`."""

    text: str


class DecodeBatchResponse(_Head):
    """/decode with `batch_ids`."""

    texts: list[str]


class RenderChatResponse(_Head, _Breakdown):
    template_hash: str = Field(pattern=_HASH)
    text: str = Field(description="Exactly what transformers' apply_chat_template renders.")
    ids: list[int] | None = Field(default=None, description="Absent with return_ids=false.")
    count: int
    offsets: list[list[int]] | None = Field(default=None, description="With return_offsets.")
    assistant_spans: list[list[int]] | None = Field(
        default=None, description="With return_assistant_mask.")
    labels: list[int] | None = Field(default=None, description="With return_assistant_mask.")
    mask_rule: str | None = Field(default=None, description="How assistant_spans were found.")


class StreamText(_Response):
    """/decode/stream: a text delta, sent as soon as the ids complete characters."""

    text: str = Field(description="Never part of a character; the deltas joined, and the "
                                  "closing message's `text`, are /decode of all the ids.")


class StreamDone(_Head):
    """/decode/stream: the closing message, after the flush (NDJSON: the body's end)."""

    done: Literal[True]
    text: str = Field(description="What the flush completed (often empty).")
    ids: int = Field(description="How many ids the stream decoded.")


class TokenizerEntry(_Response):
    name: str
    version: str
    tokenizer: str
    tokenizer_hash: str = Field(pattern=_HASH)
    vocab_size: int
    special_tokens: dict[str, int]
    chat_templates: dict[str, str]
    default_chat_template: str | None


class TokenizerDetail(TokenizerEntry):
    manifest: dict[str, Any] | None


class TokenizersResponse(_Response):
    default: str | None = Field(description="The default's name@version (null if not loaded).")
    tokenizers: list[TokenizerEntry]


class ModelRow(_Response):
    model: str
    tokenizer: str = Field(description="The tokenizer name the model uses.")
    source: Literal["tiktoken", "manifest"] = Field(
        description="tiktoken's model table, or the `models` a served manifest declares.")
    served: bool = Field(description="Whether this server serves that tokenizer.")


class PrefixRow(_Response):
    prefix: str
    tokenizer: str
    served: bool


class ModelsResponse(_Response):
    models: list[ModelRow]
    prefixes: list[PrefixRow] = Field(
        description="Model-name prefixes tried in order after the exact names "
                    "(gpt-4o-2024-08-06 is o200k_base by the gpt-4o- prefix).")


class HealthResponse(_Response):
    status: Literal["ok"]
    tokenizers: int


class ReadyResponse(_Response):
    """/readyz 200: this replica takes traffic (503 ``not_ready`` otherwise)."""

    status: Literal["ready"]
    tokenizers: int = Field(description="Tokenizer versions served.")


class LoadFailure(_Response):
    path: str
    reason: str


class ReloadResponse(_Response):
    added: list[str]
    removed: list[str]
    replaced: list[str]
    failed: list[LoadFailure]
    tokenizers: list[str]


class ErrorBody(BaseModel):
    """The contract's error object: a stable ``code``, a message, and details."""

    model_config = ConfigDict(extra="allow")

    code: str
    message: str


class ErrorEnvelope(_Response):
    error: ErrorBody
