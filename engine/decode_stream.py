"""Streaming detokenization: text deltas from ids as a model generates them.

Decoding id by id and joining the pieces is wrong whenever a character's UTF-8 bytes are
split across tokens (most CJK and emoji in byte-level vocabularies): each half decodes to
U+FFFD. ``DecodeStream`` keeps the bytes of an unfinished character until the ids that
complete it arrive, so it never emits part of a character, and what it emits, joined
with what ``flush`` returns, is exactly ``tokenizer.decode(all ids)`` for every id
sequence (``errors="replace"``: bytes that can never form a character become U+FFFD at
the same places as in one decode; ``"strict"``: they raise ``InvalidUtf8`` at the byte
position the whole decode would name).

Why an incremental UTF-8 decoder is all it takes: decoding is byte concatenation
(``decoder.py``), and Python's incremental UTF-8 decoder is defined to give the same
text as decoding the concatenation at once, holding back at most three bytes of an
unfinished character between calls. Piece tokenizers (SentencePiece-style) decode
through a chain of steps instead; they hand the stream their own incremental decoder
(``piece_tokenizer.PieceTextStream``), which holds a run of byte pieces whole.

    >>> stream = DecodeStream(tokenizer)
    >>> for token_id in generated:
    ...     delta = stream.step(token_id)
    ...     if delta:
    ...         send(delta)
    >>> send(stream.flush())
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from typing import Any

from .decoders.decoder import Errors
from .errors import InvalidUtf8


class DecodeStream:
    """Incremental ``decode`` over one tokenizer; not thread-safe (one per stream)."""

    def __init__(self, tokenizer: Any, *, skip_special_tokens: bool = False,
                 errors: Errors = "replace") -> None:
        if errors not in ("replace", "strict"):
            raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._errors = errors
        # piece tokenizers decode through a chain of steps, not by concatenating bytes:
        # they bring their own incremental decoder (piece_tokenizer.PieceTextStream)
        own = getattr(tokenizer, "decode_stream", None)
        self._own = own(skip_special_tokens, errors) if own is not None else None
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors=errors)
        self._consumed = 0  # bytes fed so far, for InvalidUtf8 positions
        self.ids = 0  # ids consumed so far

    def step(self, token_id: int) -> str | None:
        """The text that ``token_id`` completes, or None while a character is unfinished.

        Raises:
            UnknownTokenId: the id is not in the vocabulary (nothing is consumed).
            InvalidUtf8: under ``errors="strict"``, the bytes cannot be UTF-8.
        """
        return self.step_many((token_id,)) or None

    def step_many(self, token_ids: Iterable[int]) -> str:
        """``step`` for a chunk of ids at once (one call into the engine): the text they
        complete, possibly empty. On an unknown id nothing of the chunk is consumed."""
        ids = list(token_ids)
        if self._own is not None:
            text = self._own.feed(ids)
            self.ids += len(ids)
            return text
        data = self._tokenizer.decode_bytes(ids, skip_special_tokens=self._skip)
        self.ids += len(ids)
        return self._feed(data, final=False)

    def flush(self) -> str:
        """The end of the stream: what is left of an unfinished character (U+FFFD under
        ``replace``; ``InvalidUtf8`` under ``strict``). The stream can be reused after."""
        if self._own is not None:
            return self._own.finish()
        return self._feed(b"", final=True)

    def _feed(self, data: bytes, final: bool) -> str:
        try:
            text = self._utf8.decode(data, final=final)
        except UnicodeDecodeError as exc:
            position = self._consumed - len(self._utf8.getstate()[0]) + exc.start
            self._utf8.reset()
            raise InvalidUtf8(max(position, 0), exc.reason) from None
        self._consumed += len(data)
        if final:
            self._utf8.reset()
        return text
