"""Added-token scan: the first pipeline stage, before normalization.

Special and added literals are matched leftmost-longest on the ORIGINAL text (what both
references do for the artifacts we ship: tiktoken's literals are prefix-free, so its
leftmost-first equals leftmost-longest). The policy for what a match means lives here
too, so every entry point (encode, count, offsets, batch) applies it identically:

* ``reject``: any match is an error listing the literals and their positions;
* ``allow``: matches become their ids and split the text into ordinary segments;
* ``text``: no scan at all; the literal's characters are ordinary text.

``plain_ranges`` (character ranges) exempt parts of the text from matching even under
``allow``: chat rendering uses them so that message content can never forge a turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import regex

from .artifact import AddedToken
from .errors import SpecialTokenInText
from .unicode_compat import WHITE_SPACE_CHARS

Policy = Literal["reject", "allow", "text"]
POLICIES = ("reject", "allow", "text")


@dataclass(frozen=True, slots=True)
class Match:
    start: int  # char index, includes absorbed whitespace (lstrip/rstrip)
    end: int
    id: int
    literal: str


class AddedTokenScanner:
    """Finds added-token literals; immutable after construction, safe across threads."""

    def __init__(self, tokens: Sequence[AddedToken],
                 normalize: Callable[[str], str] | None = None) -> None:
        """``normalize`` gives the spelling to search for (tokenizers matches its
        ``normalized`` tokens in normalized text, by their normalized content); a
        match still reports the token's own content as its literal."""
        spell = normalize or (lambda s: s)
        self._by_literal = {spell(t.content): t for t in tokens if t.content}
        self._by_literal.pop("", None)
        literals = sorted(self._by_literal, key=lambda s: (-len(s), s))
        # Every encode call asks maybe_present, so it is a few `in` tests on a tuple
        # (a generator over a set cost 1 us a call, as much as encoding a short text).
        self._first_chars = tuple(sorted({lit[0] for lit in literals}))
        self._regex = (
            regex.compile("|".join(regex.escape(lit) for lit in literals)) if literals else None
        )

    @property
    def literals(self) -> dict[str, int]:
        return {lit: t.id for lit, t in self._by_literal.items()}

    def maybe_present(self, text: str) -> bool:
        """Cheap pre-check: False means no literal can occur in ``text``."""
        for c in self._first_chars:
            if c in text:
                return True
        return False

    def find(
        self, text: str, plain_ranges: Sequence[tuple[int, int]] | None = None
    ) -> list[Match]:
        """Non-overlapping matches, left to right, skipping any that touch a plain range."""
        if not self.maybe_present(text):
            return []
        out: list[Match] = []
        pos = 0
        ranges = sorted(plain_ranges or ())
        while True:
            m = self._regex.search(text, pos)
            if m is None:
                return out
            s, e = m.span()
            if any(a < e and s < b for a, b in ranges):
                pos = s + 1
                continue
            token = self._by_literal[m.group()]
            if token.single_word and not _is_word_boundary(text, s, e):
                pos = e  # like tokenizers: the scan resumes after the discarded match
                continue
            if token.lstrip:
                floor = out[-1].end if out else 0
                while s > floor and text[s - 1] in _WHITE_SPACE:
                    s -= 1
            if token.rstrip:
                while e < len(text) and text[e] in _WHITE_SPACE:
                    e += 1
            out.append(Match(s, e, token.id, token.content))
            pos = e

    def check(self, text: str, policy: Policy,
              plain_ranges: Sequence[tuple[int, int]] | None = None) -> list[Match]:
        """Apply ``policy``: the matches to honour (``[]`` for ``text``), or raise."""
        if policy == "text":
            return []
        if policy not in POLICIES:
            raise ValueError(f"special_tokens must be one of {POLICIES}, not {policy!r}")
        matches = self.find(text, plain_ranges)
        if matches and policy == "reject":
            raise SpecialTokenInText([m.literal for m in matches], [m.start for m in matches])
        return matches


# lstrip/rstrip strip Rust's char::is_whitespace (White_Space); str.isspace also counts
# U+001C..U+001F
_WHITE_SPACE = WHITE_SPACE_CHARS
# Rust's is_alphanumeric (Alphabetic or Numeric) or "_": single_word's word characters
_WORD_CHAR = regex.compile(r"[\p{Alphabetic}\p{N}_]")


def _is_word_boundary(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not _WORD_CHAR.match(before) and not _WORD_CHAR.match(after)
