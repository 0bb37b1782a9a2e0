"""Tokenizer: runs the pipeline stages in order and holds no algorithm itself.

    added-token scan -> normalizer -> pre-tokenizer -> BPE model -> post-processor
    decoder on the way back

Invariants every entry point keeps:

* ``count(x) == len(encode(x))`` and ``encode_batch(xs)[i] == encode(xs[i])`` for the same
  options: they share ``_segments``/``_pieces`` and differ only in what they materialise.
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
from itertools import accumulate
from typing import Any, NamedTuple


from ._bpe import BpeModel
from .added_tokens import AddedTokenScanner, Match, Policy
from .artifact import Artifact
from .decoder import Decoder, Errors
from .errors import InputTooLarge, SpecialTokenInText
from .normalizer import Normalizer
from .offsets import Units, to_units
from .post_processor import PostProcessor
from .pre_tokenizer import PreTokenizer

MAX_TEXT_CHARS = 1 << 30  # hard engine ceiling; the service enforces far lower limits
_CPUS = os.cpu_count() or 1  # read once: the call cost 14 us here, a third of a 1 KB count
# total chars below which handing work to another thread costs more than it saves
# (measured: 8 x 1 KB took 51 us on 2 threads, 37 us on 1; 64 x 1 KB 250 us vs 288 us)
_BATCH_SERIAL_BELOW = 16384


class _Job(int):
    """Index of a segment in a batch's merge list (an ``int`` subclass, so it is told
    apart from a literal's id by type)."""

    __slots__ = ()

    @property
    def index(self) -> int:
        return int(self)


class _Text(NamedTuple):
    """Already-normalized text cut around a ``normalized`` added token (pass 2 of the
    scan): ``align`` maps each of its UTF-8 bytes to the original byte span, relative
    to the raw segment it came from."""

    normalized: str
    align: list[tuple[int, int]]


def repair_surrogates(text: str) -> tuple[str, bytes]:
    """``text`` made encodable as UTF-8 the way tiktoken does, and its UTF-8 bytes.

    Surrogates are valid in Python ``str`` and JSON escapes but not in UTF-8. A round trip
    through UTF-16 joins well-formed pairs and replaces each lone surrogate by U+FFFD,
    which is one code point and one UTF-16 unit, like what it replaces. The bytes come
    back too because finding out takes encoding the text, and encoding it a second time
    cost 1.2 ms per MB of CJK text (3% of its cold encode time).
    """
    try:
        return text, text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return text, text.encode("utf-8")


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
        self._normalizer = Normalizer(artifact.normalizer, artifact.reference)
        # The scan runs in two passes, as in tokenizers: tokens with normalized=False on
        # the original text, then those with normalized=True (spelled as the normalizer
        # writes them) on each normalized gap. Tiktoken-format artifacts have only the
        # first kind, and then nothing below takes the second path.
        self._added = AddedTokenScanner([t for t in added if not t.normalized])
        later = [t for t in added if t.normalized]
        self._added_normalized = (
            AddedTokenScanner(later, self._normalizer.apply) if later else None)
        self._pre = PreTokenizer(artifact.pre_tokenizer, artifact.reference)
        # Text can go to the compiled scanner whole (see _plain); fixed per tokenizer,
        # so not re-derived on every call.
        self._compiled_plain = not self._normalizer and self._pre.family >= 0
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

    def clear_cache(self) -> None:
        """Empty the piece cache (ids never depend on it; benchmarks time cold runs)."""
        self._model.clear_cache()

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
        text, data = self._prepare(text)
        matches = self._check(text, special_tokens, plain_ranges)
        if not matches and self._plain(text, special_tokens):
            ids = self._model.encode(data)
        else:
            ids = []
            for piece in self._pieces(text, matches, special_tokens, plain_ranges):
                if isinstance(piece, Match):
                    ids.append(piece.id)
                else:
                    data, ends, _ = self._pre.encode_input(piece)
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
        prepared, data = self._prepare(text)
        matches = self._check(prepared, special_tokens, plain_ranges)
        extra = self._post.added if add_special_tokens else 0
        if not matches and self._plain(prepared, special_tokens):
            return self._model.count(data) + extra
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
        text, data = self._prepare(text)
        matches = self._check(text, special_tokens, plain_ranges)
        ids: list[int] = []
        spans: list[int] = []
        byte_pos = 0
        for start, piece in self._segments(text, matches):
            if isinstance(piece, Match):
                width = len(text[piece.start:piece.end].encode("utf-8"))
                ids.append(piece.id)
                spans += (byte_pos, byte_pos + width)
                byte_pos += width
                continue
            parts = self._second_pass(piece, start, special_tokens, plain_ranges)
            if parts is None:
                seg_ids, seg_spans = self._segment_with_spans(piece)
            else:
                seg_ids, seg_spans = self._parts_with_spans(piece, start, parts)
            ids += seg_ids
            spans += [s + byte_pos for s in seg_spans]
            byte_pos += len(piece.encode("utf-8"))
        if add_special_tokens:
            ids = self._post.apply(ids)
            spans = self._post.apply_spans(spans, byte_pos)
        return ids, to_units(data, spans, units)

    def encode_batch(
        self,
        texts: Sequence[str],
        special_tokens: Policy = "reject",
        add_special_tokens: bool = False,
        num_threads: int | None = None,
    ) -> list[list[int]]:
        """Encode many texts, in input order, on up to ``num_threads`` threads.

        Added-token scan, normalizer and (regex) pre-tokenizer run first, under the GIL;
        then every segment of every text is merged in ONE nogil call spread over native
        threads, so short texts do not queue for the GIL between each other.
        """
        texts = list(texts)
        threads = self._threads_for(texts, num_threads)
        if threads <= 1:
            return [self.encode(t, special_tokens, add_special_tokens) for t in texts]
        plans, segments = self._plan_batch(texts, special_tokens)
        merged = self._model.encode_many(segments, threads)
        out: list[list[int]] = []
        for plan in plans:
            if len(plan) == 1 and type(plan[0]) is _Job:
                ids = merged[plan[0].index]
            else:
                ids = []
                for part in plan:
                    if type(part) is _Job:
                        ids.extend(merged[part.index])
                    else:
                        ids.append(part)
            out.append(self._post.apply(ids) if add_special_tokens else ids)
        return out

    def count_batch(
        self,
        texts: Sequence[str],
        special_tokens: Policy = "reject",
        add_special_tokens: bool = False,
        num_threads: int | None = None,
    ) -> list[int]:
        """``[count(t) for t in texts]``, merged in parallel like ``encode_batch``."""
        texts = list(texts)
        threads = self._threads_for(texts, num_threads)
        if threads <= 1:
            return [self.count(t, special_tokens, add_special_tokens) for t in texts]
        plans, segments = self._plan_batch(texts, special_tokens)
        counts = self._model.count_many(segments, threads)
        extra = self._post.added if add_special_tokens else 0
        return [extra + sum(counts[p.index] if type(p) is _Job else 1 for p in plan)
                for plan in plans]

    def find_literals(self, text: str) -> list[tuple[str, int]]:
        """Every special/added literal in ``text`` as ``(literal, char index)``."""
        return [(m.literal, m.start) for m in self._literals(self._prepare(text)[0], None)]

    def pre_tokenize(self, text: str) -> list[str]:
        """The pre-tokenizer's pieces of ordinary ``text`` (no added-token scan, no
        normalizer): what the BPE model merges one at a time."""
        return [piece for piece, _ in self._pre.split(self._prepare(text)[0])]

    def encode_piece(self, data: bytes) -> list[int]:
        """Merge ``data`` as ONE piece, with no pre-tokenization (tiktoken's
        ``_encode_single_piece``; bytes need not be valid UTF-8)."""
        return self._model.encode_piece(data)

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
    def _threads_for(texts: list[str], num_threads: int | None) -> int:
        if len(texts) < 2:
            return 1
        workers = num_threads or _CPUS
        if workers <= 1 or sum(map(len, texts)) < _BATCH_SERIAL_BELOW:
            return 1
        return min(workers, len(texts))

    def _plan_batch(self, texts: list[str], policy: Policy) -> tuple[list[list], list[tuple]]:
        """Per text, its parts in order (literal ids and ``_Job``s), plus the segments
        the ``_Job``s index. Raises for the first text that breaks ``policy``, as a loop
        of ``encode`` would."""
        plans: list[list] = []
        segments: list[tuple] = []
        for raw in texts:
            text, data = self._prepare(raw)
            matches = self._check(text, policy, None)
            if not matches and self._plain(text, policy):
                plans.append([_Job(len(segments))])
                segments.append((data, None))
                continue
            plan: list = []
            for piece in self._pieces(text, matches, policy, None):
                if isinstance(piece, Match):
                    plan.append(piece.id)
                else:
                    data, ends, _ = self._pre.encode_input(piece)
                    plan.append(_Job(len(segments)))
                    segments.append((data, ends))
            plans.append(plan)
        return plans, segments

    @staticmethod
    def _prepare(text: str) -> tuple[str, bytes]:
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
        """``(char start, piece)`` in order: raw ordinary segments (str) between the
        first pass's literal matches, and the matches themselves."""
        pos = 0
        for m in matches:
            if m.start > pos:
                yield pos, text[pos:m.start]
            yield m.start, m
            pos = m.end
        if pos < len(text):
            yield pos, text[pos:]

    def _plain(self, text: str, policy: Policy) -> bool:
        """True when ``text`` (with no first-pass match) goes to the compiled scanner
        whole: no normalizer and no normalized added token that could occur in it
        (under ``reject``, ``_check`` has already made sure none does)."""
        return (self._compiled_plain
                and (self._added_normalized is None or policy in ("text", "reject")
                     or not self._added_normalized.maybe_present(text)))

    def _check(self, text: str, policy: Policy,
               plain_ranges: Sequence[tuple[int, int]] | None) -> list[Match]:
        """The first pass under ``policy``; under ``reject`` both passes, so the error
        lists every literal."""
        if policy != "reject" or self._added_normalized is None:
            return self._added.check(text, policy, plain_ranges)
        found = self._literals(text, plain_ranges)
        if found:
            raise SpecialTokenInText([m.literal for m in found], [m.start for m in found])
        return []

    def _literals(self, text: str, plain_ranges: Sequence[tuple[int, int]] | None
                  ) -> list[Match]:
        """Matches of both passes, in original character positions."""
        first = self._added.find(text, plain_ranges)
        if self._added_normalized is None:
            return first
        out: list[Match] = []
        for start, piece in self._segments(text, first):
            if isinstance(piece, Match):
                out.append(piece)
                continue
            for part in self._second_pass(piece, start, "allow", plain_ranges) or ():
                if isinstance(part, Match):
                    out.append(part)
        return out

    def _pieces(self, text: str, matches: list[Match], policy: Policy,
                plain_ranges: Sequence[tuple[int, int]] | None):
        """Literal matches and normalized text pieces ready for the pre-tokenizer."""
        for start, piece in self._segments(text, matches):
            if isinstance(piece, Match):
                yield piece
                continue
            parts = self._second_pass(piece, start, policy, plain_ranges)
            if parts is None:
                yield self._normalizer.apply(piece)
                continue
            for part in parts:
                yield part if isinstance(part, Match) else part.normalized

    def _second_pass(self, segment: str, base: int, policy: Policy,
                     plain_ranges: Sequence[tuple[int, int]] | None
                     ) -> list[Match | _Text] | None:
        """Normalized added tokens in one raw segment (``base``: its char index in the
        text). None when none occurs, the common case; otherwise the segment as matches
        (original char positions) and ``_Text`` parts of its normalized form. Under
        ``reject`` there is nothing to find: ``_check`` has already scanned both passes."""
        if self._added_normalized is None or policy in ("text", "reject"):
            return None
        normalized = self._normalizer.apply(segment)
        if not self._added_normalized.maybe_present(normalized):
            return None
        found = None if plain_ranges else self._added_normalized.find(normalized)
        if found == []:
            return None  # the usual outcome: the alignment below is never built
        align = self._normalizer.normalize(segment)[1] if self._normalizer else None
        if align is None:
            align = [(i, i + 1) for i in range(len(segment.encode("utf-8")))]
        norm_starts = list(accumulate((len(c.encode("utf-8")) for c in normalized), initial=0))
        seg_starts = list(accumulate((len(c.encode("utf-8")) for c in segment), initial=0))

        def original(a: int, b: int) -> tuple[int, int]:
            """Normalized chars [a, b) -> original chars, relative to the segment."""
            lo, hi = align[norm_starts[a]][0], align[norm_starts[b] - 1][1]
            return (bisect.bisect_right(seg_starts, lo) - 1, bisect.bisect_left(seg_starts, hi))

        if found is None:  # plain ranges: exempt normalized chars whose origin touches one
            if normalized == segment:  # same characters: the ranges just shift
                end = base + len(segment)
                local = [(max(a, base) - base, min(b, end) - base)
                         for a, b in plain_ranges if a < end and base < b]
            else:
                local = []
                for i in range(len(normalized)):
                    s, e = original(i, i + 1)
                    if any(a < base + e and base + s < b for a, b in plain_ranges):
                        local.append((i, i + 1))
            found = self._added_normalized.find(normalized, local)
            if not found:
                return None
        parts: list[Match | _Text] = []
        pos = 0
        for m in found:
            if m.start > pos:
                parts.append(_Text(normalized[pos:m.start],
                                   align[norm_starts[pos]:norm_starts[m.start]]))
            s, e = original(m.start, m.end)
            parts.append(Match(base + s, base + e, m.id, m.literal))
            pos = m.end
        if pos < len(normalized):
            parts.append(_Text(normalized[pos:], align[norm_starts[pos]:]))
        return parts

    def _parts_with_spans(self, segment: str, base: int, parts: list[Match | _Text]
                          ) -> tuple[list[int], list[int]]:
        """``_segment_with_spans`` for a segment cut by the second pass."""
        ids: list[int] = []
        spans: list[int] = []
        seg_starts = list(accumulate((len(c.encode("utf-8")) for c in segment), initial=0))
        for part in parts:
            if isinstance(part, Match):
                ids.append(part.id)
                spans += (seg_starts[part.start - base], seg_starts[part.end - base])
                continue
            part_ids, part_spans = self._aligned_spans(part.normalized, part.align)
            ids += part_ids
            spans += part_spans
        return ids, spans

    def _segment_with_spans(self, segment: str) -> tuple[list[int], list[int]]:
        """Ids and flat byte spans relative to the segment's own UTF-8 start."""
        normalized, align = self._normalizer.normalize(segment) if self._normalizer else (
            segment, None)
        return self._aligned_spans(normalized, align)

    def _aligned_spans(self, normalized: str, align: list[tuple[int, int]] | None
                       ) -> tuple[list[int], list[int]]:
        """Ids of normalized text and their spans in original bytes (``align``: per
        normalized byte its original span; None: the text is the original)."""
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
