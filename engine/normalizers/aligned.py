"""AlignedText: a normalized string that remembers where each character came from.

Offsets must point into the caller's text, so every normalizer and pre-tokenizer step of
the piece family (SentencePiece-style tokenizers) edits the text *and* an alignment: per
character of the normalized text, the span ``(start, end)`` of ORIGINAL characters it was
made from. The rules are Hugging Face ``tokenizers``' ``NormalizedString`` rules (that
library is the reference for these files), restated per character instead of per byte,
which is equivalent because every step there edits whole characters:

* a replaced character keeps the span of the one it replaces;
* an inserted character takes the span of the character before it in the OLD text
  (``(0, 0)`` at the very start), so ``Replace(" " -> "▁")`` keeps the space's span and a
  prepended ``▁`` shares the span of the character it was put in front of;
* removed characters vanish with their spans.

Offsets then follow ``realign``: a token over normalized characters ``[a, b)`` covers
``align[a].start .. align[b-1].end`` of the original.
"""

from __future__ import annotations

from collections.abc import Iterable

Span = tuple[int, int]


class AlignedText:
    """Mutable while a pipeline step works on it; ``text`` and ``align`` stay equal
    length. Spans are absolute: ``start`` is where ``text`` begins in the whole original
    (the pre-tokenizer's ``prepend_scheme: first`` asks whether a piece starts it).
    """

    __slots__ = ("align", "text")

    def __init__(self, text: str, align: list[Span] | None = None, start: int = 0) -> None:
        self.text = text
        self.align = (align if align is not None
                      else [(start + i, start + i + 1) for i in range(len(text))])

    def __repr__(self) -> str:
        return f"AlignedText({self.text!r})"

    def __bool__(self) -> bool:
        return bool(self.text)

    def original_start(self) -> int:
        """Where this text's first character comes from in the whole original (tokenizers'
        ``offsets_original().0``)."""
        return self.align[0][0] if self.align else 0

    def slice(self, start: int, end: int) -> AlignedText:
        return AlignedText(self.text[start:end], self.align[start:end])

    # ---------------------------------------------------------------- edits

    def transform(self, changes: Iterable[tuple[str, int]], removed_first: int = 0) -> None:
        """Replace the whole text by ``changes``, tokenizers' transformation list: per new
        character ``(char, change)`` with change 1 = inserted, 0 = replaces the next old
        character, -n = replaces it and removes the n after it. ``removed_first`` old
        characters at the start are dropped before anything else."""
        old = self.align
        pos = removed_first  # next old character
        chars: list[str] = []
        align: list[Span] = []
        for c, change in changes:
            if change > 0:
                align.append(old[pos - 1] if pos >= 1 else (0, 0))
            else:
                align.append(old[pos])
                pos += 1 - change
            chars.append(c)
        self.text = "".join(chars)
        self.align = align

    def prepend(self, s: str) -> None:
        """``s`` in front of the first character, sharing its span (no-op when empty)."""
        if self.text and s:
            self.align = [self.align[0]] * len(s) + self.align
            self.text = s + self.text

    def replace(self, pattern: str, content: str) -> None:
        """Every occurrence of ``pattern`` (left to right, non-overlapping) becomes
        ``content``, each new character spanning the LAST character matched."""
        if not pattern or pattern not in self.text:
            return
        spans = []
        pos = 0
        while (hit := self.text.find(pattern, pos)) >= 0:
            spans.append((hit, hit + len(pattern)))
            pos = hit + len(pattern)
        self.replace_spans(spans, content)

    def replace_spans(self, spans: list[tuple[int, int]], content: str) -> None:
        """The characters in each ``[start, end)`` of ``spans`` (sorted, disjoint) become
        ``content``: each new character spans the last character replaced (``(0, 0)`` for
        an empty match at the start), as tokenizers aligns a replacement."""
        text, old = self.text, self.align
        chars: list[str] = []
        align: list[Span] = []
        pos = 0
        for start, end in spans:
            chars.append(text[pos:start])
            align += old[pos:start]
            chars.append(content)
            align += [old[end - 1] if end >= 1 else (0, 0)] * len(content)
            pos = end
        chars.append(text[pos:])
        align += old[pos:]
        self.text = "".join(chars)
        self.align = align

    def map_chars(self, per_char) -> None:
        """Each character becomes ``per_char(c)`` (one or more characters): the first
        replaces it, the rest are inserted after it (lowercase's expansions)."""
        changes: list[tuple[str, int]] = []
        for c in self.text:
            out = per_char(c)
            changes += [(d, 1 if i else 0) for i, d in enumerate(out)]
            if not out:
                raise ValueError("map_chars maps a character to nothing")
        self.transform(changes)

    def strip(self, left: bool, right: bool) -> None:
        """Leading / trailing whitespace removed (Rust's ``char::is_whitespace``)."""
        a, b = strip_bounds(self.text, left, right)
        if a or b != len(self.text):
            self.text, self.align = self.text[a:b], self.align[a:b]

    def chunks(self, pieces: list[tuple[str, int, int]]) -> None:
        """Replace by per-chunk results: ``(new text, old start, old end)`` tiling the old
        text in order; every new character of a chunk spans the whole old chunk
        (Unicode normalization, done per starter and its combining marks)."""
        chars: list[str] = []
        align: list[Span] = []
        old = self.align
        for new, a, b in pieces:
            if not new:
                continue
            span = (old[a][0], old[b - 1][1])
            chars.append(new)
            align += [span] * len(new)
        self.text = "".join(chars)
        self.align = align


def is_whitespace(c: str) -> bool:
    """Rust's ``char::is_whitespace`` (Unicode White_Space): ``str.isspace`` minus the
    four information separators U+001C..U+001F."""
    return c.isspace() and c not in "\x1c\x1d\x1e\x1f"


def strip_bounds(text: str, left: bool, right: bool) -> tuple[int, int]:
    """``[a, b)``: ``text`` without its leading (``left``) / trailing (``right``)
    whitespace."""
    a, b = 0, len(text)
    if left:
        while a < b and is_whitespace(text[a]):
            a += 1
    if right:
        while b > a and is_whitespace(text[b - 1]):
            b -= 1
    return a, b
