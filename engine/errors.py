"""The engine's one error hierarchy.

Every exception the engine raises on bad input or bad artifacts is an ``EngineError``
with a stable string ``code`` (the service maps codes to HTTP statuses in one table) and
structured ``details`` that name the offending values, so a caller never has to parse a
message. Nothing else in ``engine/`` defines exception types.
"""

from __future__ import annotations

from typing import Any


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class EngineError(Exception):
    """Base class: ``code`` is stable across releases, ``details`` is JSON-serialisable."""

    code = "engine_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class ArtifactError(EngineError):
    """A tokenizer file is missing, unreadable, malformed or fails its hash check."""

    code = "artifact_error"


class UnsupportedArtifact(ArtifactError):
    """The artifact uses a feature the engine does not implement.

    Raised instead of loading something that would silently produce different ids.
    """

    code = "unsupported_artifact"

    def __init__(self, feature: str, path: str | None = None) -> None:
        where = f" in {path}" if path else ""
        super().__init__(
            f"unsupported tokenizer feature{where}: {feature}", feature=feature, path=path
        )


class SpecialTokenInText(EngineError):
    """Under ``special_tokens="reject"`` the text contains special/added-token literals."""

    code = "special_token_in_text"

    def __init__(self, literals: list[str], positions: list[int]) -> None:
        shown = ", ".join(_short(lit) for lit in dict.fromkeys(literals))
        super().__init__(
            f"text contains special-token literal(s) {shown}; pass special_tokens=\"allow\" "
            f"to encode them as special ids or special_tokens=\"text\" to encode them as "
            f"ordinary text",
            literals=sorted(set(literals)),  # the distinct literals
            positions=positions,  # every occurrence's character index, in text order
            occurrences=[[lit, at] for lit, at in zip(literals, positions)],  # paired
        )


class DisallowedSpecialToken(EngineError, ValueError):
    """tiktoken-compatible API: the text holds a literal that ``disallowed_special`` names.

    A ``ValueError``, as tiktoken raises, with tiktoken's advice; ``token`` is the literal.
    """

    code = "special_token_in_text"

    def __init__(self, token: str, position: int) -> None:
        super().__init__(
            f"Encountered text corresponding to disallowed special token {_short(token)}.\n"
            f"If you want this text to be encoded as a special token, pass it to "
            f"`allowed_special`, e.g. `allowed_special={{{_short(token)}, ...}}`.\n"
            f"If you want this text to be encoded as normal text, disable the check for "
            f"this token by passing `disallowed_special=(enc.special_tokens_set - "
            f"{{{_short(token)}}})`.\nTo disable this check for all special tokens, pass "
            f"`disallowed_special=()`.\n",
            token=token, position=position,
        )
        self.token = token


class UnknownTokenId(EngineError):
    """Decode was given ids outside the vocabulary."""

    code = "unknown_token_id"

    def __init__(self, ids: list[int], vocab_size: int) -> None:
        shown = ids[:10]
        more = f" (and {len(ids) - 10} more)" if len(ids) > 10 else ""
        super().__init__(
            f"unknown token id(s) {shown}{more}; valid ids are the vocabulary's "
            f"(vocab_size={vocab_size})",
            ids=ids,  # every one: the service caps what it echoes, with the total
        )


class InvalidUtf8(EngineError):
    """Decoded bytes are not valid UTF-8 and ``errors="strict"`` was asked for."""

    code = "invalid_utf8"

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(
            f"decoded bytes are not valid UTF-8 at byte {position} ({reason}); pass "
            f"errors=\"replace\" to get U+FFFD instead",
            position=position,
        )


class InputTooLarge(EngineError):
    """An input exceeds a hard engine limit (the service enforces its own, lower ones)."""

    code = "input_too_large"


class TiktokenAlreadyImported(EngineError, RuntimeError):
    """``tokserve.install_as_tiktoken()`` was called after the real tiktoken was imported.

    Refused rather than replaced: modules that imported tiktoken already hold its
    functions and encodings, so replacing the modules would leave the process with two
    tokenizer implementations at once. ``modules`` names what was found.
    """

    code = "tiktoken_already_imported"

    def __init__(self, modules: list[str], origin: str | None) -> None:
        where = f" (from {origin})" if origin else ""
        super().__init__(
            f"the tiktoken package is already imported{where}: {', '.join(modules)}; install "
            f"the shim before anything imports tiktoken, or start the program under "
            f"`python -m tokserve.tiktoken_shim`",
            modules=modules, origin=origin,
        )
