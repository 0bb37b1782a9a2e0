"""Added-token stage: the first pipeline stage, and the only one that knows the policy.

It cuts the text at the special and added literals the special-token policy honours and
hands the rest on as ordinary text, normalized, with its alignment to the original: one
entry point, ``AddedVocabulary.split`` (Hugging Face's added vocabulary does the same
with ``split_with_indices``). Two passes, as in tokenizers:

1. tokens with ``normalized=False`` are matched on the ORIGINAL text;
2. tokens with ``normalized=True`` are matched, spelled as the normalizer writes them,
   on the normalized text of each gap the first pass left.

Tiktoken-format artifacts have only the first kind. Matching is leftmost-longest (what
both references do for the artifacts we ship: tiktoken's literals are prefix-free, so
its leftmost-first equals leftmost-longest). Policies:

* ``reject``: any literal of either pass is an error listing them and their positions;
* ``allow``: literals become their ids and cut the text into ordinary parts;
* ``text``: no scan at all; a literal's characters are ordinary text.

``plain_ranges`` (character ranges of the original text) exempt parts of the text from
matching even under ``allow``: chat rendering uses them so that message content can
never forge a turn.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal, NamedTuple

import regex

from ._literals import LiteralHeads
from ..artifact import AddedToken
from ..errors import SpecialTokenInText
from ..normalizers.normalizer import Normalizer
from ..unicode_compat import WHITE_SPACE_CHARS

Policy = Literal["reject", "allow", "text"]
POLICIES = ("reject", "allow", "text")
_SCANNED = ("reject", "allow")  # the policies that look for literals
Ranges = Sequence[tuple[int, int]] | None


@dataclass(frozen=True, slots=True)
class Match:
    """A literal in the original text: char span (absorbed whitespace included)."""

    start: int
    end: int
    id: int
    literal: str


class Text(NamedTuple):
    """Ordinary text for the pre-tokenizer: ``text`` is normalized. With ``offsets``,
    ``base`` is the original byte where it begins and ``align`` gives, per UTF-8 byte
    of ``text``, the original byte span relative to ``base`` (None: ``text`` is the
    original bytes as they are)."""

    text: str
    base: int = 0
    align: list[tuple[int, int]] | None = None


class PlainSpans:
    """Caller ranges (char spans whose literals stay text) merged into disjoint, sorted
    spans, so that an overlap test and a clip cost O(log n) however many ranges there are.

    A chat rendered with ``reserved_literals: "escape"`` has a range per caller string and
    a match per template literal, both growing with the messages: testing each match
    against every range made the escape pass quadratic (issue 33). Merging touching or
    overlapping ranges keeps their union, which is all an overlap test asks about.
    """

    __slots__ = ("starts", "ends")

    def __init__(self, ranges: Ranges = None) -> None:
        starts: list[int] = []
        ends: list[int] = []
        for a, b in sorted(ranges or ()):
            if a >= b:
                continue
            if ends and a <= ends[-1]:
                ends[-1] = max(ends[-1], b)
            else:
                starts.append(a)
                ends.append(b)
        self.starts = starts
        self.ends = ends

    @classmethod
    def of(cls, ranges: Ranges | PlainSpans) -> PlainSpans:
        return ranges if isinstance(ranges, PlainSpans) else cls(ranges)

    def __bool__(self) -> bool:
        return bool(self.starts)

    def overlaps(self, s: int, e: int) -> bool:
        """Whether ``[s, e)`` (non-empty) shares a character with a span."""
        i = bisect_left(self.starts, e) - 1
        return i >= 0 and self.ends[i] > s

    def clip(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The spans that meet ``[lo, hi)``, cut to it and made relative to ``lo``."""
        i = bisect_right(self.ends, lo)
        j = bisect_left(self.starts, hi)
        return [(max(self.starts[k], lo) - lo, min(self.ends[k], hi) - lo) for k in range(i, j)]


class AddedTokenScanner:
    """Finds the literals of one pass; immutable after construction, safe across threads."""

    def __init__(self, tokens: Sequence[AddedToken],
                 normalize: Callable[[str], str] | None = None) -> None:
        """``normalize`` gives the spelling to search for (tokenizers matches its
        ``normalized`` tokens in normalized text, by their normalized content); a match
        still reports the token's own content as its literal."""
        spell = normalize or (lambda s: s)
        self._by_literal = {spell(t.content): t for t in tokens if t.content}
        self._by_literal.pop("", None)
        literals = sorted(self._by_literal, key=lambda s: (-len(s), s))
        # Every encode call asks maybe_present: on the text's UTF-8 when the caller has it
        # (compiled, _literals.pyx), else a few `in` tests on a tuple.
        self._first_chars = tuple(sorted({lit[0] for lit in literals}))
        self.heads = LiteralHeads([lit.encode("utf-8", "surrogatepass") for lit in literals])
        #: ``maybe_present`` on UTF-8, as the C call itself (no Python frame per encode)
        self.maybe_in_utf8: Callable[[bytes], bool] = self.heads.present
        # The standard library's engine: for an alternation of escaped literals it finds
        # the same matches as ``regex``, and its compiled form is a fraction of the
        # memory (o200k_harmony's 1,088 literals, in every worker process).
        self._regex = (re.compile("|".join(map(re.escape, literals)))
                       if 0 < len(literals) <= _ALTERNATION_MAX else None)
        self._trie = LiteralTrie(literals) if len(literals) > _ALTERNATION_MAX else None

    @property
    def literals(self) -> dict[str, int]:
        return {lit: t.id for lit, t in self._by_literal.items()}

    def maybe_present(self, text: str, utf8: bytes | None = None) -> bool:
        """Cheap pre-check: False means no literal can occur in ``text`` (``utf8``: its
        UTF-8, when the caller has it: the check then runs in C over the bytes)."""
        if utf8 is not None:
            return self.maybe_in_utf8(utf8)
        for c in self._first_chars:
            if c in text:
                return True
        return False

    def find(self, text: str, plain_ranges: Ranges | PlainSpans = None,
             utf8: bytes | None = None) -> list[Match]:
        """Non-overlapping matches, left to right, skipping any that touch a plain range
        (``utf8``: the text's UTF-8, if the caller has it, for ``maybe_present``)."""
        if not self.maybe_present(text, utf8):
            return []
        out: list[Match] = []
        pos = 0
        spans = PlainSpans.of(plain_ranges)
        while True:
            if self._trie is not None:
                hit = self._trie.search(text, pos)
                if hit is None:
                    return out
                s, e = hit
            else:
                m = self._regex.search(text, pos)
                if m is None:
                    return out
                s, e = m.span()
            if spans and spans.overlaps(s, e):
                pos = s + 1
                continue
            token = self._by_literal[text[s:e]]
            if token.single_word and not _is_word_boundary(text, s, e):
                pos = e  # like tokenizers: the scan resumes after the discarded match
                continue
            if token.lstrip:
                floor = out[-1].end if out else 0
                while s > floor and text[s - 1] in WHITE_SPACE_CHARS:
                    s -= 1
            if token.rstrip:
                while e < len(text) and text[e] in WHITE_SPACE_CHARS:
                    e += 1
            out.append(Match(s, e, token.id, token.content))
            pos = e


#: above this many literals, an alternation regex costs a try of each one at every
#: position (Gemma 3's 6,415 added tokens: ~1 MB/s); a trie walks only what matches
_ALTERNATION_MAX = 256


class LiteralTrie:
    """Leftmost-longest literal search: the next position holding a literal's first
    character is found by one C-level character-class search, then a dict trie is walked
    from there; the longest literal ending on the walk wins (what an alternation sorted
    longest-first finds). Immutable after construction."""

    __slots__ = ("_root", "_heads")

    def __init__(self, literals: Sequence[str]) -> None:
        root: dict = {}
        for lit in literals:
            node = root
            for c in lit:
                node = node.setdefault(c, {})
            node[""] = True  # a literal ends here
        self._root = root
        self._heads = re.compile("[" + "".join(map(re.escape, sorted(root))) + "]")

    def search(self, text: str, pos: int) -> tuple[int, int] | None:
        """``(start, end)`` of the leftmost-longest literal at or after ``pos``."""
        heads, root, n = self._heads.search, self._root, len(text)
        while (m := heads(text, pos)) is not None:
            start = m.start()
            node, i, end = root, start, -1
            while i < n:
                node = node.get(text[i])
                if node is None:
                    break
                i += 1
                if "" in node:
                    end = i
            if end > 0:
                return start, end
            pos = start + 1
        return None


class AddedVocabulary:
    """Both passes and the policy; immutable after construction, safe across threads."""

    def __init__(self, tokens: Sequence[AddedToken], normalizer: Normalizer) -> None:
        self._normalizer = normalizer
        self._normalizes = bool(normalizer)
        self._first = AddedTokenScanner([t for t in tokens if not t.normalized])
        later = [t for t in tokens if t.normalized]
        self._second = AddedTokenScanner(later, normalizer.apply) if later else None
        # split()'s common answer in one C call: no normalizer, no second pass, and the
        # UTF-8 holds no literal's first two bytes (or the policy ignores literals)
        self._plain = not self._normalizes and self._second is None
        self._maybe_in_utf8 = self._first.maybe_in_utf8
        #: The same answer asked by the model on the UTF-8 it reads in place
        #: (``BpeModel.encode_text``): for each policy under which a text with no literal
        #: is one ordinary segment, the heads of the literals it looks for (None: it
        #: looks for none). A policy missing here takes ``split``.
        self.direct: dict[str, LiteralHeads | None] = (
            {"text": None} | {policy: self._first.heads for policy in _SCANNED}
            if self._plain else {})

    def split(self, text: str, policy: Policy = "reject",
              plain_ranges: Ranges | PlainSpans = None,
              offsets: bool = False, utf8: bytes | None = None) -> list[Match | Text] | None:
        """``text`` cut at the literals ``policy`` honours: ``Match``es and ``Text``s in
        order. None when it is one ordinary text the normalizer leaves as it is (the
        common case: the caller encodes its UTF-8 whole). ``utf8``, the text's UTF-8 when
        the caller has it, makes the usual answer (no literal) cheaper to reach.

        Raises:
            SpecialTokenInText: under ``reject``, listing every literal and position.
            ValueError: an unknown policy.
        """
        if self._plain and utf8 is not None and (
                policy == "text" or policy in _SCANNED and not self._maybe_in_utf8(utf8)):
            return None
        if plain_ranges is not None:
            plain_ranges = PlainSpans.of(plain_ranges)
        if policy == "reject":
            first = self._first.find(text, plain_ranges, utf8)
            found = self.literals(text, plain_ranges, first) if self._second else first
            if found:
                raise SpecialTokenInText([m.literal for m in found], [m.start for m in found])
            second = None
        elif policy == "allow":
            first = self._first.find(text, plain_ranges, utf8)
            second = self._second
        elif policy == "text":
            first, second = [], None
        else:
            raise ValueError(f"special_tokens must be one of {POLICIES}, not {policy!r}")
        if not (first or self._normalizes or second and second.maybe_present(text)):
            return None
        parts: list[Match | Text] = []
        base = 0
        for start, piece in _gaps(text, first):
            if isinstance(piece, Match):
                parts.append(piece)
                if offsets:
                    base += len(text[piece.start:piece.end].encode("utf-8"))
                continue
            cut = self._second_pass(piece, start, plain_ranges, second) if second else None
            if cut is None:
                normalized, align = (self._normalizer.normalize(piece) if offsets
                                     else (self._normalizer.apply(piece), None))
                parts.append(Text(normalized, base, align))
            else:
                parts += [p._replace(base=p.base + base) if isinstance(p, Text) else p
                          for p in cut]
            if offsets:
                base += len(piece.encode("utf-8"))
        return parts

    def literals(self, text: str, plain_ranges: Ranges | PlainSpans = None,
                 first: list[Match] | None = None) -> list[Match]:
        """Every literal of both passes, in original character positions."""
        if plain_ranges is not None:
            plain_ranges = PlainSpans.of(plain_ranges)
        if first is None:
            first = self._first.find(text, plain_ranges)
        if self._second is None:
            return first
        out: list[Match] = []
        for start, piece in _gaps(text, first):
            if isinstance(piece, Match):
                out.append(piece)
            else:
                cut = self._second_pass(piece, start, plain_ranges, self._second)
                if cut:
                    out += [p for p in cut if isinstance(p, Match)]
        return out

    def _second_pass(self, segment: str, start: int, plain_ranges: PlainSpans | None,
                     scanner: AddedTokenScanner) -> list[Match | Text] | None:
        """Normalized literals in one gap of the first pass (``start``: its char index
        in the text). None when none occurs, the common case; otherwise the gap as
        ``Match``es (original char positions) and ``Text``s of its normalized form,
        their ``base`` relative to the gap's first byte."""
        normalized = self._normalizer.apply(segment)
        if not scanner.maybe_present(normalized):
            return None
        found = None if plain_ranges else scanner.find(normalized)
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
            return bisect_right(seg_starts, lo) - 1, bisect_left(seg_starts, hi)

        if found is None:  # plain ranges: exempt normalized chars whose origin touches one
            if normalized == segment:  # same characters: the ranges just shift
                local = plain_ranges.clip(start, start + len(segment))
            else:
                local = []
                for i in range(len(normalized)):
                    s, e = original(i, i + 1)
                    if plain_ranges.overlaps(start + s, start + e):
                        local.append((i, i + 1))
            found = scanner.find(normalized, local)
            if not found:
                return None
        parts: list[Match | Text] = []
        pos = 0
        for m in found + [None]:
            stop = len(normalized) if m is None else m.start
            if stop > pos:
                piece_align = align[norm_starts[pos]:norm_starts[stop]]
                origin = piece_align[0][0]
                parts.append(Text(normalized[pos:stop], origin,
                                  [(a - origin, b - origin) for a, b in piece_align]))
            if m is not None:
                s, e = original(m.start, m.end)
                parts.append(Match(start + s, start + e, m.id, m.literal))
                pos = m.end
        return parts


def _gaps(text: str, matches: list[Match]):
    """``(char start, piece)`` in order: the text between matches (str) and the matches."""
    pos = 0
    for m in matches:
        if m.start > pos:
            yield pos, text[pos:m.start]
        yield m.start, m
        pos = m.end
    if pos < len(text):
        yield pos, text[pos:]


# Rust's is_alphanumeric (Alphabetic or Numeric) or "_": single_word's word characters
_WORD_CHAR = regex.compile(r"[\p{Alphabetic}\p{N}_]")


def _is_word_boundary(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not _WORD_CHAR.match(before) and not _WORD_CHAR.match(after)
