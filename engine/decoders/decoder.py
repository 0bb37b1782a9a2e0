"""Decoder stage: ids -> bytes -> str, the way back.

Byte-level vocabularies are stored as raw bytes, so decoding is concatenation; added
tokens decode to their literal's UTF-8. Invalid ids and (under ``strict``) invalid
UTF-8 are typed errors carrying the offending ids / byte position.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from ..errors import InvalidUtf8, UnknownTokenId
from .byte_level import BYTE_TO_CHAR

Errors = Literal["replace", "strict"]


class Decoder:
    def __init__(self, model, special_ids: frozenset[int],
                 literals: dict[int, str] | None = None) -> None:
        self._model = model
        self._special_ids = special_ids
        self._literals = literals or {}  # added tokens' ids -> literals

    def token_string(self, token_id: int) -> str:
        """The vocabulary's spelling of the id, as Hugging Face's ``convert_ids_to_tokens``
        gives it: an added token's literal, else its bytes in the byte-level alphabet
        (``Ġworld``).

        Raises:
            UnknownTokenId: the id is not in the vocabulary.
        """
        literal = self._literals.get(token_id)
        if literal is not None:
            return literal
        return "".join(BYTE_TO_CHAR[b] for b in self.decode_bytes([token_id]))

    def decode_bytes(self, ids: Iterable[int], skip_special_tokens: bool = False) -> bytes:
        """Raises UnknownTokenId listing every item that is not an id of the vocabulary
        (the model sorts them out in the same pass that copies the bytes)."""
        if skip_special_tokens:
            ids = [i for i in ids if i not in self._special_ids]
        data, unknown = self._model.decode_bytes(ids)
        if unknown:
            raise UnknownTokenId(unknown, self._model.size)
        return data

    def decode(self, ids: Iterable[int], errors: Errors = "replace",
               skip_special_tokens: bool = False) -> str:
        data = self.decode_bytes(ids, skip_special_tokens)
        if errors == "strict":
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InvalidUtf8(e.start, e.reason) from None
        if errors != "replace":
            raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
        return data.decode("utf-8", "replace")
