"""Tokenizer: runs the pipeline stages in order and holds no algorithm itself.

    added-token scan -> normalizer -> pre-tokenizer -> BPE model -> post-processor
    decoder on the way back

Invariants every entry point keeps:

* ``count(x) == len(encode(x))`` and ``encode_batch(xs)[i] == encode(xs[i])`` for the same
  options: they share ``_segments`` and differ only in what they materialise.
* Surrogates are repaired before anything else, as tiktoken does: a high+low pair held as
  two code points in a ``str`` becomes its astral character, a lone surrogate becomes
  U+FFFD. UTF-16 offsets of the caller's string are unchanged by this; code-point offsets
  count a repaired pair as one code point. (JSON parsers already join escaped pairs, so
  over HTTP only lone surrogates reach the engine.)
* Offsets are byte spans of the original text until the last step, where ``offsets``
  converts them to the requested unit.
* A Tokenizer is immutable after construction (the model's piece cache is internally
  locked), so one instance serves any number of threads.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any


from ._bpe import BpeModel
from .added_tokens import AddedTokenScanner, Match, Policy
from .artifact import Artifact
from .decoder import Decoder, Errors
from .errors import InputTooLarge
from .normalizer import Normalizer
from .offsets import Units, to_units
from .post_processor import PostProcessor
from .pre_tokenizer import PreTokenizer

MAX_TEXT_CHARS = 1 << 30  # hard engine ceiling; the service enforces far lower limits
_BATCH_SERIAL_BELOW = 4096  # total chars: below this a thread pool costs more than it saves


def repair_surrogates(text: str) -> str:
    """Make ``text`` encodable as UTF-8 the way tiktoken does.

    Surrogates are valid in Python ``str`` and JSON escapes but not in UTF-8. A round trip
    through UTF-16 joins well-formed pairs and replaces each lone surrogate by U+FFFD,
    which is one code point and one UTF-16 unit, like what it replaces.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class Tokenizer:
    """A loaded tokenizer. Build with ``engine.load``; see the package docstring."""

    def __init__(self, artifact: Artifact, *, cache_capacity: int = 65536) -> None:
        self.artifact = artifact
        self.name = artifact.name
        self.hash = artifact.hash
        self.manifest: dict[str, Any] | None = artifact.manifest
        added = artifact.added_tokens
        self.special_tokens: dict[str, int] = {t.content: t.id for t in added}
        self._special_ids = frozenset(t.id for t in added if t.special)
        self._added = AddedTokenScanner(added)
        self._normalizer = Normalizer(artifact.normalizer)
        self._pre = PreTokenizer(artifact.pre_tokenizer, artifact.reference)
        self._model = BpeModel(
            artifact.tokens,
            artifact.merges,
            [(t.content.encode("utf-8"), t.id) for t in added],
            tiktoken_data=artifact.tiktoken_data,
            whole_piece_lookup=artifact.whole_piece_lookup,
            family=self._pre.family,
            cache_capacity=cache_capacity,
        )
        self._post = PostProcessor(
            artifact.post_processor, self.special_tokens, artifact.bos_token,
            artifact.eos_token, artifact.add_bos_token, artifact.add_eos_token,
        )
        self._decoder = Decoder(self._model, self._special_ids)
        self.bos_token = artifact.bos_token
        self.eos_token = artifact.eos_token
        self.pad_token = artifact.pad_token

    def __repr__(self) -> str:
        return f"<Tokenizer {self.name} {self.hash[:19]}… vocab_size={self.vocab_size}>"

    # ================================================================ properties

    @property
    def vocab_size(self) -> int:
        """One past the largest id, special ids included."""
        return self._model.size

    @property
    def pre_tokenizer_backend(self) -> str:
        return "compiled" if self._pre.family >= 0 else "regex"

    @property
    def cache_stats(self) -> tuple[int, int]:
        return self._model.cache_hits, self._model.cache_misses

    # ================================================================ encoding

    def encode(
        self,
        text: str,
        special_tokens: Policy = "reject",
        add_special_tokens: bool = False,
        plain_ranges: Sequence[tuple[int, int]] | None = None,
    ) -> list[int]:
        """Text -> ids.

        Args:
            special_tokens: what special/added-token literals in ``text`` mean:
                ``reject`` raises, ``allow`` encodes them as their ids, ``text``
                encodes their characters as ordinary text.
            add_special_tokens: apply the post-processor (BOS/EOS).
            plain_ranges: character ranges where literals are never matched.
        Raises:
            SpecialTokenInText: under ``reject``, listing literals and positions.
        Example:
            >>> tok.encode("hello world")
            [24912, 2375]
        """
        text = self._prepare(text)
        matches = self._added.check(text, special_tokens, plain_ranges)
        if not matches and not self._normalizer and self._pre.family >= 0:
            ids = self._model.encode(text.encode("utf-8"))
        else:
            ids = []
            for piece in self._segments(text, matches):
                if isinstance(piece, Match):
                    ids.append(piece.id)
                else:
                    data, ends, _ = self._pre.encode_input(self._normalizer.apply(piece))
                    ids.extend(self._model.encode(data, ends))
        return self._post.apply(ids) if add_special_tokens else ids

    def count(
        self,
        text: str,
        special_tokens: Policy = "reject",
        add_special_tokens: bool = False,
        plain_ranges: Sequence[tuple[int, int]] | None = None,
    ) -> int:
        """``len(encode(...))`` without building the id list on the common path."""
        prepared = self._prepare(text)
        matches = self._added.check(prepared, special_tokens, plain_ranges)
        extra = self._post.added if add_special_tokens else 0
        if not matches and not self._normalizer and self._pre.family >= 0:
            return self._model.count(prepared.encode("utf-8")) + extra
        return len(self.encode(prepared, special_tokens, False, plain_ranges)) + extra

    def encode_with_offsets(
        self,
        text: str,
        units: Units = "char",
        special_tokens: Policy = "reject",
        add_special_tokens: bool = False,
        plain_ranges: Sequence[tuple[int, int]] | None = None,
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and half-open offsets into ``text`` in ``units`` (char, utf16 or byte).

        A token holding part of a multi-byte character covers that whole character;
        a special token covers exactly its literal; post-processor ids get empty spans.
        """
        text = self._prepare(text)
        matches = self._added.check(text, special_tokens, plain_ranges)
        ids: list[int] = []
        spans: list[int] = []
        byte_pos = 0
        for piece in self._segments(text, matches):
            if isinstance(piece, Match):
                width = len(text[piece.start:piece.end].encode("utf-8"))
                ids.append(piece.id)
                spans += (byte_pos, byte_pos + width)
                byte_pos += width
                continue
            seg_ids, seg_spans = self._segment_with_spans(piece)
            ids += seg_ids
            spans += [s + byte_pos for s in seg_spans]
            byte_pos += len(piece.encode("utf-8"))
        if add_special_tokens:
            ids = self._post.apply(ids)
            spans = self._post.apply_spans(spans, byte_pos)
        return ids, to_units(text.encode("utf-8"), spans, units)

    def encode_batch(
        self,
        texts: Sequence[str],
        special_tokens: Policy = "reject",
        add_special_tokens: bool = False,
        num_threads: int | None = None,
    ) -> list[list[int]]:
        """Encode many texts, in input order, on up to ``num_threads`` threads.

        The merge loops release the GIL, so threads run on separate cores.
        """
        texts = list(texts)
        workers = num_threads or os.cpu_count() or 1
        if workers <= 1 or len(texts) < 2 or sum(map(len, texts)) < _BATCH_SERIAL_BELOW:
            return [self.encode(t, special_tokens, add_special_tokens) for t in texts]
        with ThreadPoolExecutor(max_workers=min(workers, len(texts))) as pool:
            return list(
                pool.map(lambda t: self.encode(t, special_tokens, add_special_tokens), texts)
            )

    def find_literals(self, text: str) -> list[tuple[str, int]]:
        """Every special/added literal in ``text`` as ``(literal, char index)``."""
        return [(m.literal, m.start) for m in self._added.find(self._prepare(text))]

    # ================================================================ decoding

    def decode(self, ids: Sequence[int], errors: Errors = "replace",
               skip_special_tokens: bool = False) -> str:
        """Ids -> text.

        Raises:
            UnknownTokenId: an id is not in the vocabulary.
            InvalidUtf8: ``errors="strict"`` and the bytes are not valid UTF-8.
        """
        return self._decoder.decode(ids, errors, skip_special_tokens)

    def decode_bytes(self, ids: Sequence[int], skip_special_tokens: bool = False) -> bytes:
        return self._decoder.decode_bytes(ids, skip_special_tokens)

    def token_bytes(self, token_id: int) -> bytes:
        return self._decoder.decode_bytes([token_id])

    # ================================================================ private

    @staticmethod
    def _prepare(text: str) -> str:
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        if len(text) > MAX_TEXT_CHARS:
            raise InputTooLarge(
                f"text of {len(text)} characters exceeds the engine limit {MAX_TEXT_CHARS}",
                length=len(text),
            )
        return repair_surrogates(text)

    @staticmethod
    def _segments(text: str, matches: list[Match]):
        """Ordinary text segments (str) interleaved with literal matches, in order."""
        pos = 0
        for m in matches:
            if m.start > pos:
                yield text[pos:m.start]
            yield m
            pos = m.end
        if pos < len(text):
            yield text[pos:]

    def _segment_with_spans(self, segment: str) -> tuple[list[int], list[int]]:
        """Ids and flat byte spans relative to the segment's own UTF-8 start."""
        normalized, align = self._normalizer.normalize(segment) if self._normalizer else (
            segment, None)
        data, ends, inserted = self._pre.encode_input(normalized)
        ids, spans = self._model.encode_with_spans(data, ends)
        if inserted:
            spans = [x - bisect.bisect_left(inserted, x) for x in spans]
        if align is not None:
            n = len(align)
            orig_end = align[-1][1] if align else 0
            mapped: list[int] = []
            for k in range(0, len(spans), 2):
                s, e = spans[k], spans[k + 1]
                start = align[s][0] if s < n else orig_end
                mapped += (start, align[e - 1][1] if e > s else start)
            spans = mapped
        return ids, spans
