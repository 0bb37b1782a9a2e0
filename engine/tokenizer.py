"""Tokenizer: runs the pipeline stages in order and holds no algorithm itself.

    added-token stage (and normalizer) -> pre-tokenizer -> BPE model -> post-processor
    decoder on the way back; offsets map spans to the caller's units

Invariants every entry point keeps:

* ``count(x) == len(encode(x))`` and ``encode_batch(xs)[i] == encode(xs[i])`` for the same
  options: they take the same parts from ``AddedVocabulary.split`` and differ only in
  what they materialise.
* Surrogates are repaired before anything else, as tiktoken does: a high+low pair held as
  two code points in a ``str`` becomes its astral character, a lone surrogate becomes
  U+FFFD (see ``offsets`` for what that means for offsets).
* A Tokenizer is immutable after construction (the model's caches are internally
  synchronized), so one instance serves any number of threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .added_vocabulary.added_tokens import AddedVocabulary, Match, Policy, Ranges, Text
from .artifact import Artifact
from .decoders.decoder import Decoder, Errors
from .models.bpe._bpe import BpeModel
from .normalizers.normalizer import Normalizer
from .offsets import ByteCursor, Units, realign, to_units
from .post_processors.post_processor import PostProcessor, Side, T
from .pre_tokenizers.pre_tokenizer import PreTokenizer
from .tables import image_of
from .batching import threads_for
from .text_input import prepare as _prepare

_GENERAL = object()  # a policy AddedVocabulary.direct does not answer


class Tokenizer:
    """A loaded tokenizer. Build with ``tokserve.load``; see the package docstring."""

    def __init__(self, artifact: Artifact, *, cache_capacity: int = 65536) -> None:
        self.artifact = artifact
        self.name = artifact.name
        self.hash = artifact.hash
        self.manifest: dict[str, Any] | None = artifact.manifest
        added = artifact.added_tokens
        self.special_tokens: dict[str, int] = {t.content: t.id for t in added}
        self._added = AddedVocabulary(added, Normalizer(artifact.normalizer, artifact.reference))
        self._pre = PreTokenizer(artifact.pre_tokenizer, artifact.reference)
        self._scans = self._pre.family >= 0  # the model splits UTF-8 itself
        self._model = BpeModel(image=image_of(artifact), family=self._pre.family,
                               whole_piece_lookup=artifact.whole_piece_lookup,
                               cache_capacity=cache_capacity)
        self._post = PostProcessor(artifact.post_processor, self.special_tokens,
                                   artifact.bos_token, artifact.eos_token,
                                   artifact.add_bos_token, artifact.add_eos_token)
        self._decoder = Decoder(self._model, frozenset(t.id for t in added if t.special),
                                {t.id: t.content for t in added})
        #: the ids ``add_special_tokens=True`` puts before / after one text's tokens
        self.special_prefix: tuple[int, ...] = tuple(self._post.prefix)
        self.special_suffix: tuple[int, ...] = tuple(self._post.suffix)
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

    def clear_cache(self) -> None:
        """Empty the piece cache (ids never depend on it; benchmarks time cold runs)."""
        self._model.clear_cache()

    # ================================================================ encoding

    def encode(self, text: str, special_tokens: Policy = "reject",
               add_special_tokens: bool = False, plain_ranges: Ranges = None) -> list[int]:
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
        # the common case in one call: the text is one ordinary segment as it is
        heads = self._added.direct.get(special_tokens, _GENERAL)
        ids = (self._model.encode_text(text, heads)
               if heads is not _GENERAL and plain_ranges is None else None)
        if ids is None:
            text, data = _prepare(text)
            parts = self._added.split(text, special_tokens, plain_ranges, utf8=data)
            if parts is None and self._scans:
                ids = self._model.encode(data)
            else:
                ids = []
                for part in parts or (Text(text),):
                    if isinstance(part, Match):
                        ids.append(part.id)
                    else:
                        ids += self._model.encode(*self._pre.encode_input(part.text)[:2])
        return self._post.apply(ids) if add_special_tokens else ids

    def count(self, text: str, special_tokens: Policy = "reject",
              add_special_tokens: bool = False, plain_ranges: Ranges = None) -> int:
        """``len(encode(...))`` without building the id list on the common path."""
        extra = self._post.added if add_special_tokens else 0
        heads = self._added.direct.get(special_tokens, _GENERAL)
        if heads is not _GENERAL and plain_ranges is None:
            n = self._model.count_text(text, heads)
            if n >= 0:
                return n + extra
        prepared, data = _prepare(text)
        parts = self._added.split(prepared, special_tokens, plain_ranges, utf8=data)
        if parts is None and self._scans:
            return self._model.count(data) + extra
        return extra + sum(1 if isinstance(part, Match)
                           else self._model.count(*self._pre.encode_input(part.text)[:2])
                           for part in parts or (Text(prepared),))

    def encode_with_offsets(self, text: str, units: Units = "char",
                            special_tokens: Policy = "reject", add_special_tokens: bool = False,
                            plain_ranges: Ranges = None,
                            ) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and half-open offsets into ``text`` in ``units`` (char, utf16 or byte).

        A token holding part of a multi-byte character covers that whole character;
        a special token covers exactly its literal; post-processor ids get empty spans.
        """
        text, data = _prepare(text)
        parts = self._added.split(text, special_tokens, plain_ranges, offsets=True,
                                  utf8=data)
        ids: list[int] = []
        spans: list[int] = []
        cursor = ByteCursor(text)
        for part in parts or (Text(text),):
            if isinstance(part, Match):
                ids.append(part.id)
                spans += (cursor.at(part.start), cursor.at(part.end))
                continue
            piece, ends, inserted = self._pre.encode_input(part.text)
            part_ids, part_spans = self._model.encode_with_spans(piece, ends)
            ids += part_ids
            spans += realign(part_spans, part.align, inserted, part.base)
        if add_special_tokens:
            ids, spans = self._post.apply(ids), self._post.apply_spans(spans, len(data))
        return ids, to_units(data, spans, units)

    def encode_batch(self, texts: Sequence[str], special_tokens: Policy = "reject",
                     add_special_tokens: bool = False, num_threads: int | None = None,
                     ) -> list[list[int]]:
        """Encode many texts, in input order, on up to ``num_threads`` threads.

        The added-token stage, normalizer and (regex) pre-tokenizer run first, under the
        GIL; then every part of every text is merged in ONE nogil call spread over
        native threads, so short texts do not queue for the GIL between each other.
        """
        texts = list(texts)
        threads = threads_for(texts, num_threads)
        if threads <= 1:
            return [self.encode(t, special_tokens, add_special_tokens) for t in texts]
        plans, segments = self._plan_batch(texts, special_tokens)
        merged = self._model.encode_many(segments, threads)
        if plans is None:  # every text was one segment, in order
            return [self._post.apply(ids) for ids in merged] if add_special_tokens else merged
        out: list[list[int]] = []
        for plan in plans:
            if type(plan) is _Job:
                ids = merged[plan]
            else:
                ids = []
                for part in plan:
                    if type(part) is _Job:
                        ids += merged[part]
                    else:
                        ids.append(part)
            out.append(self._post.apply(ids) if add_special_tokens else ids)
        return out

    def count_batch(self, texts: Sequence[str], special_tokens: Policy = "reject",
                    add_special_tokens: bool = False, num_threads: int | None = None,
                    ) -> list[int]:
        """``[count(t) for t in texts]``, merged in parallel like ``encode_batch``."""
        texts = list(texts)
        threads = threads_for(texts, num_threads)
        if threads <= 1:
            return [self.count(t, special_tokens, add_special_tokens) for t in texts]
        plans, segments = self._plan_batch(texts, special_tokens)
        counts = self._model.count_many(segments, threads)
        extra = self._post.added if add_special_tokens else 0
        if plans is None:
            return [extra + c for c in counts] if extra else counts
        return [extra + (counts[plan] if type(plan) is _Job else
                         sum(counts[p] if type(p) is _Job else 1 for p in plan))
                for plan in plans]

    def truncate(self, seq: list[T], max_tokens: int, *, side: Side = "right",
                 add_special_tokens: bool) -> list[T]:
        """``seq`` (ids, offsets or token strings of ONE text, encoded with these
        ``add_special_tokens``) cut to ``max_tokens``, keeping ``special_prefix`` and
        ``special_suffix`` while there is room (``PostProcessor.truncate``)."""
        return self._post.truncate(seq, max_tokens, side, add_special_tokens)

    def find_literals(self, text: str) -> list[tuple[str, int]]:
        """Every special/added literal in ``text`` as ``(literal, char index)``."""
        return [(m.literal, m.start) for m in self._added.literals(_prepare(text)[0])]

    def pre_tokenize(self, text: str) -> list[str]:
        """The pre-tokenizer's pieces of ordinary ``text`` (no added-token stage, no
        normalizer): what the BPE model merges one at a time."""
        return [piece for piece, _ in self._pre.split(_prepare(text)[0])]

    def encode_piece(self, data: bytes) -> list[int]:
        """Merge ``data`` as ONE piece, with no pre-tokenization (tiktoken's
        ``_encode_single_piece``; bytes need not be valid UTF-8)."""
        return self._model.encode_piece(data)

    # ================================================================ decoding

    def decode(self, ids: Sequence[int], errors: Errors = "replace",
               skip_special_tokens: bool = False) -> str:
        """Ids -> text.

        Raises:
            UnknownTokenId: an id is not in the vocabulary (every such id listed).
            InvalidUtf8: ``errors="strict"`` and the bytes are not valid UTF-8.
        """
        return self._decoder.decode(ids, errors, skip_special_tokens)

    def decode_bytes(self, ids: Sequence[int], skip_special_tokens: bool = False) -> bytes:
        return self._decoder.decode_bytes(ids, skip_special_tokens)

    def token_bytes(self, token_id: int) -> bytes:
        return self._decoder.decode_bytes([token_id])

    def token_string(self, token_id: int) -> str:
        """The id as ``convert_ids_to_tokens`` spells it (``Decoder.token_string``)."""
        return self._decoder.token_string(token_id)

    # ================================================================ private

    def _plan_batch(self, texts: list[str], policy: Policy
                    ) -> tuple[list[_Job | list] | None, list[tuple]]:
        """Per text, its plan: a ``_Job`` when the whole text is one segment (the common
        case), else its parts in order (literal ids and ``_Job``s); plus the segments the
        ``_Job``s index. Plans are None when every text is its own segment, in order, so
        the merged lists are the answer as they are. Raises for the first text that
        breaks ``policy``, as a loop of ``encode`` would."""
        plans: list[_Job | list] = []
        segments: list[tuple] = []
        split, encode_input, scans = self._added.split, self._pre.encode_input, self._scans
        whole = True
        for raw in texts:
            text, data = _prepare(raw)
            parts = split(text, policy, utf8=data)
            if parts is None:
                plans.append(_Job(len(segments)))
                segments.append((data, None) if scans else encode_input(text, data)[:2])
                continue
            whole = False
            plan: list = []
            for part in parts:
                if isinstance(part, Match):
                    plan.append(part.id)
                else:
                    plan.append(_Job(len(segments)))
                    segments.append(encode_input(part.text)[:2])
            plans.append(plan)
        return (None if whole else plans), segments


class _Job(int):
    """Index of a segment in a batch's merge list (told apart from a literal's id by type)."""

    __slots__ = ()
