"""What every entry point does first to a caller's text: check it, repair its surrogates,
and take its UTF-8 (which the BPE model reads, and which finding out whether the text
needs repair costs anyway)."""

from __future__ import annotations

from .errors import InputTooLarge

MAX_TEXT_CHARS = 1 << 30  # hard engine ceiling; the service enforces far lower limits


def repair_surrogates(text: str) -> tuple[str, bytes]:
    """``text`` made encodable as UTF-8 the way tiktoken does, and its UTF-8 bytes.

    Surrogates are valid in Python ``str`` and JSON escapes but not in UTF-8. A round trip
    through UTF-16 joins well-formed pairs and replaces each lone surrogate by U+FFFD,
    which is one code point and one UTF-16 unit, like what it replaces. The bytes come
    back too because finding out takes encoding the text, and the model needs them.
    """
    try:
        return text, text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return text, text.encode("utf-8")


def prepare(text: str) -> tuple[str, bytes]:
    """``repair_surrogates(text)`` after the type and size checks (its common case, text
    that encodes, inline: this runs once per encode call)."""
    if type(text) is not str and not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise InputTooLarge(
            f"text of {len(text)} characters exceeds the engine limit {MAX_TEXT_CHARS}",
            length=len(text),
        )
    try:
        return text, text.encode("utf-8")
    except UnicodeEncodeError:
        return repair_surrogates(text)
