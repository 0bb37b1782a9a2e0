"""The normalizer of piece tokenizers (SentencePiece-style files), step by step.

A ``tokenizer.json`` normalizer is a tree of steps; this module turns the supported ones
into a flat list, each able to run two ways:

* ``apply(text)``: the string only, with ``str`` methods (the encode hot path);
* ``apply_aligned(at)``: on an ``AlignedText``, keeping each character's origin (offsets).

Both must give the same string: ``tests/engine/normalizers/test_piece_normalizer.py``
checks that, and the encode tests check both against ``tokenizers``.

Supported: ``Prepend``, ``Replace`` (a literal or a regex), ``NFC``/``NFD``/``NFKC``/``NFKD``,
``Lowercase``, ``Strip``, ``Precompiled`` and ``Sequence`` of them. Anything else is
refused by name and by its path in the file (``normalizer.normalizers[2]``).
"""

from __future__ import annotations

from typing import Any

import regex
import unicodedata2 as unicodedata

from ..file_checks import sequence_leaves
from ..errors import ArtifactError, UnsupportedArtifact
from .aligned import AlignedText, strip_bounds

_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
# Oniguruma's \z / \Z not preceded by an escaping backslash
_UNESCAPED_z = regex.compile(r"(?<!\\)((?:\\\\)*)\\z")
_UNESCAPED_Z = regex.compile(r"(?<!\\)(?:\\\\)*\\Z")


class Step:
    """One normalization step; subclasses define both ways of applying it."""

    def apply(self, text: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def apply_aligned(self, at: AlignedText) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class Prepend(Step):
    """``prepend`` in front of a non-empty text (the SentencePiece dummy prefix)."""

    def __init__(self, prepend: str) -> None:
        self.prepend = prepend

    def apply(self, text: str) -> str:
        return self.prepend + text if text else text

    def apply_aligned(self, at: AlignedText) -> None:
        at.prepend(self.prepend)


class Replace(Step):
    """Every occurrence of a literal ``pattern`` becomes ``content``."""

    def __init__(self, pattern: str, content: str) -> None:
        self.pattern = pattern
        self.content = content

    def apply(self, text: str) -> str:
        return text.replace(self.pattern, self.content) if self.pattern else text

    def apply_aligned(self, at: AlignedText) -> None:
        at.replace(self.pattern, self.content)


def compile_oniguruma(pattern: str, where: str) -> regex.Pattern:
    """A ``tokenizer.json`` regex (Oniguruma, Ruby syntax, as tokenizers compiles it) for
    the ``regex`` module: ``^``/``$`` match at line ends (MULTILINE) and ``\\z`` is the end
    of the text; ``\\Z`` (end or before a final newline) has no exact equivalent and is
    refused.

    Raises:
        UnsupportedArtifact: the pattern holds ``\\Z``.
        ArtifactError: it does not compile.
    """
    if _UNESCAPED_Z.search(pattern):
        raise UnsupportedArtifact(f"{where}: a regex with \\Z")
    try:
        return regex.compile(_UNESCAPED_z.sub(r"\1\\Z", pattern), regex.MULTILINE)
    except regex.error as e:
        raise ArtifactError(f"{where}: regex {pattern!r:.60} does not compile: {e}") from None


class ReplaceRegex(Step):
    """Every match of a regex (``compile_oniguruma``) becomes ``content``."""

    def __init__(self, pattern: str, content: str, where: str) -> None:
        self.regex = compile_oniguruma(pattern, where)
        self.content = content

    def apply(self, text: str) -> str:
        return self.regex.sub(lambda _: self.content, text)

    def apply_aligned(self, at: AlignedText) -> None:
        spans = [m.span() for m in self.regex.finditer(at.text)]
        if spans:
            at.replace_spans(spans, self.content)


class UnicodeForm(Step):
    """NFC/NFD/NFKC/NFKD. Offsets are per chunk (a starter and the marks after it)."""

    def __init__(self, form: str) -> None:
        self.form = form

    def apply(self, text: str) -> str:
        return unicodedata.normalize(self.form, text)

    def apply_aligned(self, at: AlignedText) -> None:
        whole = self.apply(at.text)
        if whole == at.text:
            return
        pieces: list[tuple[str, int, int]] = []
        start = 0
        text = at.text
        for i in range(1, len(text) + 1):
            if i == len(text) or unicodedata.combining(text[i]) == 0:
                pieces.append((self.apply(text[start:i]), start, i))
                start = i
        if "".join(p[0] for p in pieces) != whole:  # composition across starters
            pieces = [(whole, 0, len(text))]
        at.chunks(pieces)


class Lowercase(Step):
    """Per-character lower case, as Rust's ``char::to_lowercase`` (no final-sigma rule)."""

    def apply(self, text: str) -> str:
        lowered = text.lower()
        if "Σ" in text:  # str.lower applies the final-sigma context rule; Rust does not
            lowered = "".join(c.lower() for c in text)
        return lowered

    def apply_aligned(self, at: AlignedText) -> None:
        at.map_chars(str.lower)


class Strip(Step):
    """Leading and/or trailing whitespace removed."""

    def __init__(self, left: bool, right: bool) -> None:
        self.left = left
        self.right = right

    def apply(self, text: str) -> str:
        a, b = strip_bounds(text, self.left, self.right)
        return text[a:b]

    def apply_aligned(self, at: AlignedText) -> None:
        at.strip(self.left, self.right)


class PrecompiledStep(Step):
    """SentencePiece's compiled character map (``precompiled.py``)."""

    def __init__(self, charsmap: str, where: str) -> None:
        from .precompiled import Precompiled  # native tables: built only when a file has one

        try:
            self.map = Precompiled.from_base64(charsmap)
        except ValueError as e:
            raise ArtifactError(f"{where}: precompiled_charsmap is malformed: {e}") from None

    def apply(self, text: str) -> str:
        return self.map.normalize(text)

    def apply_aligned(self, at: AlignedText) -> None:
        out, sources = self.map.normalize_sources(at.text)
        if sources is not None:  # per new character, the old one it aligns with (-1: none)
            old = at.align
            at.text = out
            at.align = [old[i] if i >= 0 else (0, 0) for i in sources]


class PieceNormalizer:
    """The flattened steps of one ``normalizer`` spec; immutable after construction."""

    def __init__(self, spec: dict[str, Any] | None, where: str = "normalizer") -> None:
        self.steps: list[Step] = []
        self._collect(spec, where)
        # the common SentencePiece shapes get one fused str expression
        self._prefix = ""
        kinds = [type(s) for s in self.steps]
        if kinds == [Prepend, Replace] or kinds == [Replace]:
            self._fused = True
            self._prefix = self.steps[0].prepend if kinds[0] is Prepend else ""
            self._pattern, self._content = self.steps[-1].pattern, self.steps[-1].content
        else:
            self._fused = False

    def _collect(self, spec: Any, where: str) -> None:
        for step, path in sequence_leaves(spec, where, "normalizers"):
            self._add(step, path)

    def _add(self, spec: dict[str, Any], where: str) -> None:
        kind = spec.get("type")
        if kind == "Prepend":
            self.steps.append(Prepend(_string(spec, "prepend", where)))
        elif kind == "Replace":
            pattern = spec.get("pattern")
            content = _string(spec, "content", where)
            if isinstance(pattern, dict) and "Regex" in pattern:
                self.steps.append(ReplaceRegex(_string(pattern, "Regex", where), content, where))
            elif isinstance(pattern, dict) and "String" in pattern:
                self.steps.append(Replace(_string(pattern, "String", where), content))
            else:
                raise ArtifactError(f"{where}.pattern is neither {{\"String\"}} nor "
                                    f"{{\"Regex\"}}")
        elif kind in _FORMS:
            self.steps.append(UnicodeForm(kind))
        elif kind == "Lowercase":
            self.steps.append(Lowercase())
        elif kind == "Strip":
            self.steps.append(Strip(bool(spec.get("strip_left", True)),
                                    bool(spec.get("strip_right", True))))
        elif kind == "Precompiled":
            charsmap = spec.get("precompiled_charsmap")
            if charsmap is None or charsmap == "":
                return  # an empty map normalizes nothing (tokenizers does the same)
            self.steps.append(PrecompiledStep(_string(spec, "precompiled_charsmap", where),
                                              where))
        else:
            raise UnsupportedArtifact(f"{where}: normalizer {kind!r:.60}")

    def __bool__(self) -> bool:
        return bool(self.steps)

    def removes(self, literal: str) -> bool:
        """Whether ``literal`` can never occur in a normalized text: the last step is a
        literal Replace of it, and neither its content nor any prefix holds it."""
        if not self._fused or self._pattern != literal:
            return False
        return literal not in self._content and literal not in self._prefix and not any(
            c in literal for c in self._content)

    def apply(self, text: str) -> str:
        if self._fused:
            if not text:
                return text
            return self._prefix + text.replace(self._pattern, self._content)
        for step in self.steps:
            text = step.apply(text)
        return text

    def apply_aligned(self, at: AlignedText) -> AlignedText:
        for step in self.steps:
            step.apply_aligned(at)
        return at


def _string(spec: dict, key: str, where: str) -> str:
    value = spec.get(key)
    if not isinstance(value, str):
        raise ArtifactError(f"{where}.{key} is not a string")
    return value
