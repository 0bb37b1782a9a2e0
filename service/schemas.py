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

SpecialTokens = Literal["reject", "allow", "text"]
OffsetUnits = Literal["char", "utf16", "byte"]
ReservedLiterals = Literal["reject", "escape", "allow"]

_TOKENIZER = Field(
    default=None,
    description='"name" (current version) or "name@version"; absent: the server default.',
)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _exactly_one(model: BaseModel, *names: str) -> None:
    """The "exactly one of" rule; ``service/openapi.py`` states the same rule in the
    schema from each model's ``one_of``, so a body the schema accepts is never a 422."""
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) != 1:
        listed = " / ".join(f"`{n}`" for n in names)
        got = ", ".join(f"`{n}`" for n in given) or "none"
        raise ValueError(f"exactly one of {listed} is required (got {got})")


class EncodeRequest(_Request):
    one_of: ClassVar[tuple[str, ...]] = ("text", "texts")

    tokenizer: str | None = _TOKENIZER
    text: str | None = Field(default=None, description="The text; exactly one of text/texts.")
    texts: list[str] | None = Field(default=None, description="A batch; results in order.")
    special_tokens: SpecialTokens = Field(
        default="reject",
        description="What a special/added-token literal in the text means: reject (400), "
        "allow (its id), text (ordinary characters).",
    )
    add_special_tokens: StrictBool = Field(
        default=False, description="Apply the tokenizer's post-processor (BOS/EOS)."
    )
    return_offsets: StrictBool = Field(default=False, description="Include `offsets`.")
    offset_units: OffsetUnits = Field(
        default="char", description="Offsets in code points, UTF-16 units or UTF-8 bytes."
    )
    return_tokens: StrictBool = Field(
        default=False, description="Include each token's bytes decoded as UTF-8 (replace)."
    )

    @model_validator(mode="after")
    def _one_input(self) -> EncodeRequest:
        _exactly_one(self, *self.one_of)
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

    def _check_chat(self) -> None:
        if self.add_generation_prompt and self.continue_final_message:
            raise ValueError(
                "add_generation_prompt and continue_final_message cannot both be true"
            )


class CountRequest(EncodeRequest, ChatFields):
    """/count: an /encode request (text/texts) or a chat request (messages).

    A /render_chat body is a valid chat /count body as it is: its output options are
    accepted and change nothing (the count is the rendered prompt's, always)."""

    one_of: ClassVar[tuple[str, ...]] = ("text", "texts", "messages")

    return_ids: StrictBool = True
    return_assistant_mask: StrictBool = False

    @model_validator(mode="after")
    def _one_input(self) -> CountRequest:  # overrides EncodeRequest's rule
        _exactly_one(self, *self.one_of)
        if self.messages is not None:
            self._check_chat()
        return self


class RenderChatRequest(ChatFields):
    tokenizer: str | None = _TOKENIZER
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
        return self


class DecodeRequest(_Request):
    one_of: ClassVar[tuple[str, ...]] = ("ids", "batch_ids")

    tokenizer: str | None = _TOKENIZER
    ids: list[StrictInt] | None = Field(default=None, description="Exactly one of ids/batch_ids.")
    batch_ids: list[list[StrictInt]] | None = None
    skip_special_tokens: StrictBool = False
    errors: Literal["replace", "strict"] = Field(
        default="replace", description="strict: bytes that are not UTF-8 → 400 invalid_utf8."
    )

    @model_validator(mode="after")
    def _one_input(self) -> DecodeRequest:
        _exactly_one(self, *self.one_of)
        return self


# ==== responses =========================================================================
# Built as dicts/bytes by the handlers (cheaper than response models); these models
# exist to document them (service/openapi.py) and tests/test_openapi.py validates real
# responses of every operation against them, so the two cannot drift.

_HASH = r"^sha256:[0-9a-f]{64}$"


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Head(_Response):
    tokenizer: str = Field(description="name@version that answered.", examples=["o200k_base@1"])
    tokenizer_hash: str = Field(pattern=_HASH, description="Content hash of the tokenizer.")


class EncodedText(_Response):
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


class CountResponse(_Head):
    """/count with `text`."""

    count: int


class CountBatchResponse(_Head):
    """/count with `texts`."""

    counts: list[int]
    total: int


class CountChatResponse(_Head):
    """/count with `messages`: the rendered prompt's token count."""

    template_hash: str = Field(pattern=_HASH)
    count: int


class DecodeResponse(_Head):
    """/decode with `ids`."""

    text: str


class DecodeBatchResponse(_Head):
    """/decode with `batch_ids`."""

    texts: list[str]


class RenderChatResponse(_Head):
    template_hash: str = Field(pattern=_HASH)
    text: str = Field(description="Exactly what transformers' apply_chat_template renders.")
    ids: list[int] | None = Field(default=None, description="Absent with return_ids=false.")
    count: int
    offsets: list[list[int]] | None = Field(default=None, description="With return_offsets.")
    assistant_spans: list[list[int]] | None = Field(
        default=None, description="With return_assistant_mask.")
    labels: list[int] | None = Field(default=None, description="With return_assistant_mask.")
    mask_rule: str | None = Field(default=None, description="How assistant_spans were found.")


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
