"""Added-token stage of piece tokenizers: literals, the policy, and normalization between.

The order is Hugging Face ``tokenizers``' ``extract_and_normalize``, which the files of
this family are written for:

1. tokens with ``normalized: false`` are matched on the ORIGINAL text;
2. every gap between them is normalized ON ITS OWN (so a SentencePiece ``Prepend("▁")``
   gives each gap its own ``▁``: TinyLlama ``"a</s> b"`` -> ``▁a``, ``</s>``, ``▁``, ``▁b``);
3. tokens with ``normalized: true`` are matched, spelled as the normalizer writes them, in
   each normalized gap (Llama 2's ``<s>`` is searched as ``▁<s>``: only at the start or
   after a space, taking that space with it).

Policies are the engine's (``added_tokens.py``), with one refinement this family needs:
an added token that is not special and is made only of whitespace or ``▁`` (Gemma 3 adds
6,406 of them: runs of newlines, tabs and ``▁``) is part of how ordinary text is written,
not a literal anyone could forge a turn with. It is matched under every policy, as
``tokenizers`` matches it even when told to treat special tokens as text, and ``reject``
does not refuse it.
"""

from __future__ import annotations

from typing import Union

from ..artifact import AddedToken
from ..errors import SpecialTokenInText
from ..normalizers.aligned import AlignedText, is_whitespace
from ..normalizers.piece_normalizer import PieceNormalizer
from .added_tokens import POLICIES, AddedTokenScanner, Match, PlainSpans, Ranges


#: normalized ordinary text, and whether it begins the input (a bare tuple: a text can
#: have thousands of parts, one per newline in Gemma 3, and this is built for each)
PlainPart = tuple[str, bool]
Part = Union[Match, PlainPart, AlignedText]


def is_formatting(token: AddedToken) -> bool:
    """Not special, and nothing but whitespace and ``▁`` (see the module docstring)."""
    return not token.special and all(is_whitespace(c) or c == "▁" for c in token.content)


class _Passes:
    """The two scanners (before / after normalization) over one set of tokens."""

    def __init__(self, tokens: list[AddedToken], normalizer: PieceNormalizer) -> None:
        raw = [t for t in tokens if not t.normalized]
        normed = [t for t in tokens if t.normalized]
        self.first = AddedTokenScanner(raw) if raw else None
        self.second = AddedTokenScanner(normed, normalizer.apply) if normed else None


class PieceAddedVocabulary:
    """Immutable after construction; safe across threads."""

    def __init__(self, tokens: tuple[AddedToken, ...], normalizer: PieceNormalizer) -> None:
        self._norm = normalizer
        formatting = [t for t in tokens if is_formatting(t)]
        self._formatting_ids = frozenset(t.id for t in formatting)
        self._all = _Passes(list(tokens), normalizer)
        self._some = _Passes(formatting, normalizer)

    def split(self, text: str, policy: str = "reject", plain_ranges: Ranges = None,
              aligned: bool = False) -> list[Part]:
        """``text`` cut at the literals ``policy`` honours, the rest normalized: ``Match``es
        (original character spans) and, in order, the normalized ordinary parts —
        ``AlignedText`` when ``aligned`` (offsets), else ``PlainPart``.

        Raises:
            SpecialTokenInText: under ``reject``, every literal and its position.
            ValueError: an unknown policy.
        """
        if policy not in POLICIES:
            raise ValueError(f"special_tokens must be one of {POLICIES}, not {policy!r}")
        spans = PlainSpans.of(plain_ranges) if plain_ranges is not None else None
        if policy == "reject":
            found = [m for m in self.literals(text, spans)
                     if m.id not in self._formatting_ids]
            if found:
                raise SpecialTokenInText([m.literal for m in found], [m.start for m in found])
        passes = self._all if policy == "allow" else self._some
        first = passes.first.find(text, spans) if passes.first else []
        parts: list[Part] = []
        pos = 0
        for m in first + [None]:
            stop = len(text) if m is None else m.start
            if stop > pos:
                parts += self._gap(text[pos:stop], pos, passes, spans, aligned)
            if m is not None:
                parts.append(m)
                pos = m.end
        return parts

    def literals(self, text: str, plain_ranges: Ranges | PlainSpans = None) -> list[Match]:
        """Every literal of both passes (all tokens), in original character positions."""
        spans = PlainSpans.of(plain_ranges) if plain_ranges is not None else None
        passes = self._all
        first = passes.first.find(text, spans) if passes.first else []
        if passes.second is None:
            return first
        out: list[Match] = []
        pos = 0
        for m in first + [None]:
            stop = len(text) if m is None else m.start
            if stop > pos:
                out += [p for p in self._gap(text[pos:stop], pos, passes, spans, False)
                        if isinstance(p, Match)]
            if m is not None:
                out.append(m)
                pos = m.end
        return out

    def _gap(self, gap: str, start: int, passes: _Passes, spans: PlainSpans | None,
             aligned: bool) -> list[Part]:
        """One gap of the first pass: normalized, then cut at the second pass's literals."""
        second = passes.second
        normalized = None
        if second is not None:  # the usual answer, no literal, costs one str normalization
            normalized = self._norm.apply(gap)
            if not second.maybe_present(normalized) or (
                    spans is None and not second.find(normalized)):
                second = None
        if second is None:
            if aligned:
                at = self._norm.apply_aligned(AlignedText(gap, start=start))
                return [at] if at.text else []
            if normalized is None:
                normalized = self._norm.apply(gap)
            return [(normalized, start == 0)] if normalized else []
        at = self._norm.apply_aligned(AlignedText(gap, start=start))
        local = None
        if spans:
            local = [(i, i + 1) for i, (a, b) in enumerate(at.align)
                     if b > a and spans.overlaps(a, b)]
        found = second.find(at.text, local)
        parts: list[Part] = []
        pos = 0
        for m in found + [None]:
            stop = len(at.text) if m is None else m.start
            if stop > pos:
                parts.append(at.slice(pos, stop))
            if m is not None:
                a = at.align[m.start][0]
                b = at.align[m.end - 1][1]
                parts.append(Match(a, b, m.id, m.literal))
                pos = m.end
        if aligned:
            return parts
        return [p if isinstance(p, Match) else (p.text, p.original_start() == 0)
                for p in parts]
