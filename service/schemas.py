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

from typing import Any, Literal

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
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) != 1:
        listed = " / ".join(f"`{n}`" for n in names)
        got = ", ".join(f"`{n}`" for n in given) or "none"
        raise ValueError(f"exactly one of {listed} is required (got {got})")


class EncodeRequest(_Request):
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
        _exactly_one(self, "text", "texts")
        return self


class ChatFields(_Request):
    """The chat fields shared by /render_chat and /count-with-messages."""

    messages: list[dict[str, Any]] | None = Field(
        default=None,
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

    return_ids: StrictBool = True
    return_assistant_mask: StrictBool = False

    @model_validator(mode="after")
    def _one_input(self) -> CountRequest:  # overrides EncodeRequest's rule
        _exactly_one(self, "text", "texts", "messages")
        if self.messages is not None:
            self._check_chat()
        return self


class RenderChatRequest(ChatFields):
    tokenizer: str | None = _TOKENIZER
    messages: list[dict[str, Any]] = Field(  # type: ignore[assignment]
        description='`{"role": str, "content": str | list of parts, ...}`.'
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
    tokenizer: str | None = _TOKENIZER
    ids: list[StrictInt] | None = Field(default=None, description="Exactly one of ids/batch_ids.")
    batch_ids: list[list[StrictInt]] | None = None
    skip_special_tokens: StrictBool = False
    errors: Literal["replace", "strict"] = Field(
        default="replace", description="strict: bytes that are not UTF-8 → 400 invalid_utf8."
    )

    @model_validator(mode="after")
    def _one_input(self) -> DecodeRequest:
        _exactly_one(self, "ids", "batch_ids")
        return self
