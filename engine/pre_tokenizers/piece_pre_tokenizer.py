"""The pre-tokenizer of piece tokenizers: where the normalized text is cut before the model.

Like the normalizer, every step runs two ways that must agree: on plain strings for
encoding (``split``) and on ``AlignedText`` for offsets (``split_aligned``). A piece is
carried with whether it begins the input, because ``Metaspace``'s ``prepend_scheme:
first`` prepends its ``▁`` only there (``tokenizers`` asks ``offsets_original().0 == 0``).

Supported (as Hugging Face ``tokenizers`` 0.23 defines them): ``Metaspace``
(``prepend_scheme`` first/always/never, legacy ``add_prefix_space``, ``split``),
``Split`` on a literal or a regex with every behaviour and ``invert``, ``WhitespaceSplit`` and
``Sequence``. No pre-tokenizer at all means the whole normalized text is one piece.
Anything else is refused by name and path.
"""

from __future__ import annotations

from typing import Any

import regex

from ..file_checks import sequence_leaves
from ..errors import ArtifactError, UnsupportedArtifact
from ..normalizers.aligned import AlignedText, is_whitespace
from ..normalizers.piece_normalizer import compile_oniguruma

#: a piece as plain text, and whether it begins the input
Plain = tuple[str, bool]
_BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


class PieceStep:
    def split(self, text: str, first: bool) -> list[Plain]:  # pragma: no cover - abstract
        raise NotImplementedError

    def split_many(self, pieces: list[Plain]) -> list[Plain]:
        return [p for t, f in pieces for p in self.split(t, f)]

    def split_aligned(self, at: AlignedText) -> list[AlignedText]:  # pragma: no cover
        raise NotImplementedError


def _cuts(segments: list[tuple[int, int, bool]], behavior: str) -> list[tuple[int, int]]:
    """tokenizers' ``NormalizedString::split``: ``segments`` tile the text as
    ``(start, end, is_match)``; the result is the kept ranges, in order, non-empty."""
    out: list[tuple[int, int]] = []
    if behavior == "Removed":
        out = [(a, b) for a, b, m in segments if not m]
    elif behavior == "Isolated":
        out = [(a, b) for a, b, _ in segments]
    elif behavior == "Contiguous":
        previous = False
        for a, b, m in segments:
            if out and m == previous:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
            previous = m
    elif behavior == "MergedWithPrevious":
        previous = False
        for a, b, m in segments:
            if m and not previous and out:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
            previous = m
    elif behavior == "MergedWithNext":
        previous = False
        for a, b, m in reversed(segments):
            if m and not previous and out:
                out[-1] = (a, out[-1][1])
            else:
                out.append((a, b))
            previous = m
        out.reverse()
    return [(a, b) for a, b in out if b > a]


def _literal_segments(text: str, pattern: str, invert: bool) -> list[tuple[int, int, bool]]:
    segments: list[tuple[int, int, bool]] = []
    pos = 0
    n = len(pattern)
    while True:
        hit = text.find(pattern, pos)
        if hit < 0:
            break
        if hit > pos:
            segments.append((pos, hit, invert))
        segments.append((hit, hit + n, not invert))
        pos = hit + n
    if pos < len(text):
        segments.append((pos, len(text), invert))
    return segments


class SplitLiteral(PieceStep):
    def __init__(self, pattern: str, behavior: str, invert: bool) -> None:
        self.pattern, self.behavior, self.invert = pattern, behavior, invert

    def _ranges(self, text: str) -> list[tuple[int, int]]:
        if self.pattern not in text and not self.invert:
            return [(0, len(text))] if text else []
        return _cuts(_literal_segments(text, self.pattern, self.invert), self.behavior)

    def split(self, text: str, first: bool) -> list[Plain]:
        return [(text[a:b], first and a == 0) for a, b in self._ranges(text)]

    def split_aligned(self, at: AlignedText) -> list[AlignedText]:
        return [at.slice(a, b) for a, b in self._ranges(at.text)]


class SplitRegex(SplitLiteral):
    """``Split`` on a regex (Oniguruma's syntax as tokenizers compiles it; SentencePiece
    models with user-defined symbols convert to an alternation of them)."""

    def __init__(self, pattern: str, behavior: str, invert: bool, where: str) -> None:
        super().__init__(pattern, behavior, invert)
        self.regex = compile_oniguruma(pattern, where)

    def _ranges(self, text: str) -> list[tuple[int, int]]:
        segments: list[tuple[int, int, bool]] = []
        pos = 0
        for m in self.regex.finditer(text):
            a, b = m.span()
            if a > pos:
                segments.append((pos, a, self.invert))
            segments.append((a, b, not self.invert))
            pos = b
        if pos < len(text):
            segments.append((pos, len(text), self.invert))
        return _cuts(segments, self.behavior)


class WhitespaceSplit(PieceStep):
    """Cut at, and drop, every run of whitespace (Unicode White_Space, as Rust's
    ``char::is_whitespace``)."""

    _WORDS = regex.compile(r"[^\p{White_Space}]+")

    def _ranges(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._WORDS.finditer(text)]

    def split(self, text: str, first: bool) -> list[Plain]:
        words = self._WORDS.findall(text)
        if not words:
            return []
        out = [(w, False) for w in words]
        if first and not is_whitespace(text[0]):
            out[0] = (words[0], True)
        return out

    def split_aligned(self, at: AlignedText) -> list[AlignedText]:
        return [at.slice(a, b) for a, b in self._ranges(at.text)]


class Metaspace(PieceStep):
    """Spaces become ``replacement``, one is put in front as the scheme says, and the
    text is cut before every ``replacement`` (``split``)."""

    def __init__(self, replacement: str, scheme: str, split: bool) -> None:
        self.rep, self.scheme, self.cut = replacement, scheme, split

    def _prepends(self, text: str, first: bool) -> bool:
        if text.startswith(self.rep) or self.scheme == "never":
            return False
        return self.scheme == "always" or first

    def _starts(self, text: str) -> list[int]:
        starts = [i for i, c in enumerate(text) if c == self.rep and i > 0]
        return [0] + starts

    def split(self, text: str, first: bool) -> list[Plain]:
        text = text.replace(" ", self.rep)
        if self._prepends(text, first):
            text = self.rep + text
        if not self.cut or self.rep not in text[1:]:
            return [(text, first)] if text else []
        bounds = self._starts(text) + [len(text)]
        return [(text[a:b], first and a == 0) for a, b in zip(bounds, bounds[1:])]

    def split_many(self, pieces: list[Plain]) -> list[Plain]:
        # T5's case, after WhitespaceSplit: words holding neither a space nor the
        # replacement each just get it in front
        if self.scheme == "always" and pieces:
            joined = "".join([t for t, _ in pieces])
            if self.rep not in joined and " " not in joined:
                rep = self.rep
                return [(rep + t, f) for t, f in pieces]
        return super().split_many(pieces)

    def split_aligned(self, at: AlignedText) -> list[AlignedText]:
        first = at.original_start() == 0
        at.replace(" ", self.rep)
        if self._prepends(at.text, first):
            at.prepend(self.rep)
        if not self.cut:
            return [at]
        bounds = self._starts(at.text) + [len(at.text)]
        return [at.slice(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


class PiecePreTokenizer:
    """The flattened steps of one ``pre_tokenizer`` spec (none: one piece)."""

    def __init__(self, spec: dict[str, Any] | None, where: str = "pre_tokenizer") -> None:
        self.steps: list[PieceStep] = []
        self._collect(spec, where)

    def _collect(self, spec: Any, where: str) -> None:
        for step, path in sequence_leaves(spec, where, "pretokenizers"):
            self._add(step, path)

    def _add(self, spec: dict[str, Any], where: str) -> None:
        kind = spec.get("type")
        if kind == "Metaspace":
            self.steps.append(_metaspace(spec, where))
        elif kind == "WhitespaceSplit":
            self.steps.append(WhitespaceSplit())
        elif kind == "Split":
            pattern = spec.get("pattern")
            behavior = spec.get("behavior")
            if behavior not in _BEHAVIORS:
                raise ArtifactError(f"{where}.behavior {behavior!r:.40} is not one of "
                                    f"{', '.join(_BEHAVIORS)}")
            invert = bool(spec.get("invert", False))
            if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
                self.steps.append(SplitRegex(pattern["Regex"], behavior, invert, where))
            elif isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
                if not pattern["String"]:
                    raise ArtifactError(f"{where}.pattern is empty")
                self.steps.append(SplitLiteral(pattern["String"], behavior, invert))
            else:
                raise ArtifactError(f"{where}.pattern is neither {{\"String\"}} nor "
                                    f"{{\"Regex\"}}")
        else:
            raise UnsupportedArtifact(f"{where}: pre_tokenizer {kind!r:.60}")

    def never_cuts(self, normalizer) -> bool:
        """Whether every normalized text is one piece as it is: no step, or only literal
        splits on a string the normalizer always replaces by one that cannot hold it."""
        for step in self.steps:
            if type(step) is not SplitLiteral or step.invert:
                return False
            if not normalizer.removes(step.pattern):
                return False
        return True

    def metaspace_words(self) -> tuple[str, str, bool] | None:
        """``(replacement, prepend_scheme, split)`` when the steps are exactly
        ``WhitespaceSplit`` then ``Metaspace`` (T5's pre-tokenizer), else None: the shape
        a Unigram model cuts natively (``UnigramModel.encode_metaspace``), whose pieces
        are by construction those of ``split``."""
        if len(self.steps) != 2 or type(self.steps[0]) is not WhitespaceSplit:
            return None
        meta = self.steps[1]
        if type(meta) is not Metaspace:
            return None
        return meta.rep, meta.scheme, meta.cut

    def split(self, text: str, first: bool) -> list[str]:
        """The pieces of normalized ``text`` (``first``: it begins the input)."""
        pieces: list[Plain] = [(text, first)] if text else []
        for step in self.steps:
            pieces = step.split_many(pieces)
        return [t for t, _ in pieces]

    def split_aligned(self, at: AlignedText) -> list[AlignedText]:
        pieces = [at] if at.text else []
        for step in self.steps:
            pieces = [p for q in pieces for p in step.split_aligned(q) if p.text]
        return pieces


def _metaspace(spec: dict, where: str) -> Metaspace:
    replacement = spec.get("replacement")
    if not isinstance(replacement, str) or len(replacement) != 1:
        raise ArtifactError(f"{where}.replacement must be one character")
    scheme = spec.get("prepend_scheme", "always")
    if spec.get("add_prefix_space") is False:
        if "prepend_scheme" in spec and scheme != "never":
            raise ArtifactError(f"{where}: add_prefix_space does not match prepend_scheme")
        scheme = "never"
    if scheme not in ("first", "always", "never"):
        raise ArtifactError(f"{where}.prepend_scheme {scheme!r:.40} is not first, always "
                            f"or never")
    return Metaspace(replacement, scheme, bool(spec.get("split", True)))
