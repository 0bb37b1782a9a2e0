"""The ``Precompiled`` normalizer: SentencePiece's compiled charsmap (T5, mT5, XLM-R,
ALBERT...) applied exactly as tokenizers 0.23 applies it, with its alignment.

What tokenizers does differs from SentencePiece's own normalizer, and ids follow
tokenizers: it works per extended grapheme cluster, and a cluster under 6 bytes whose
bytes start with a charsmap key is replaced whole by the SHORTEST such key's
replacement (SentencePiece takes the longest key and keeps the rest). So "\\r\\n" is
one space and "ᵤ̭" is "u". tokenizers' ``spm_precompiled`` crate (whose source is not
at hand) was pinned down against tokenizers itself on crafted strings;
tests/engine/normalizers/test_precompiled.py keeps checking it. The work is native
(_precompiled.pyx, precompiled_*.h): grapheme segmentation, the darts trie walk, and an
ASCII fast path that copies runs of non-key ASCII as they are.

Entry points: ``normalize(text)`` (``text`` itself when unchanged: the common case costs
one scan) and ``normalize_aligned(text)``, which also gives, per output character, the
``(start, end)`` character span of ``text`` that tokenizers' ``NormalizedString`` aligns
it with (every span is one input character, or (0, 0) for a character inserted at the
very start; composing with an earlier stage's alignment maps input character i), and
``normalize_sources(text)``, the same alignment compactly (an ``array('i')`` of input
character indices, -1 for (0, 0); None when the text is unchanged) for the offsets path.
"""

from __future__ import annotations

import base64
import binascii

from ..errors import ArtifactError
from ._precompiled import CharsmapNormalizer


class Precompiled:
    """One charsmap. Immutable and thread-safe (the native object is read-only)."""

    __slots__ = ("_native", "normalize", "normalize_aligned", "normalize_sources")

    def __init__(self, charsmap: bytes) -> None:
        """``charsmap``: the decoded bytes of tokenizer.json's ``precompiled_charsmap``.

        Raises:
            ArtifactError: the bytes cannot be a charsmap (header, trie size), or its
                replacement strings are not UTF-8 (tokenizers refuses both at load).
        """
        try:
            native = CharsmapNormalizer(bytes(charsmap))
        except ValueError as exc:
            raise ArtifactError(f"Precompiled normalizer: {exc}") from exc
        try:
            native.replacements.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArtifactError("Precompiled normalizer: the charsmap's replacement strings "
                                "are not UTF-8") from exc
        self._native = native
        #: ``normalize(text: str) -> str``
        self.normalize = native.normalize
        #: ``normalize_aligned(text: str) -> tuple[str, list[tuple[int, int]]]``
        self.normalize_aligned = native.normalize_aligned
        #: ``normalize_sources(text: str) -> tuple[str, array('i') | None]``: per output
        #: character its input character (-1: inserted at the start); None: unchanged
        self.normalize_sources = native.normalize_sources

    @classmethod
    def from_base64(cls, text: str) -> Precompiled:
        """From tokenizer.json's ``precompiled_charsmap`` (standard base64).

        Raises:
            ArtifactError: not base64, or not a charsmap.
        """
        if not isinstance(text, str):
            raise ArtifactError("Precompiled normalizer: precompiled_charsmap is not a string")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ArtifactError("Precompiled normalizer: precompiled_charsmap is not "
                                "base64") from exc
        return cls(raw)

    @property
    def charsmap(self) -> bytes:
        """The charsmap's bytes (for serialization and comparison)."""
        return self._native.charsmap
