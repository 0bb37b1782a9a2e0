"""The piece added-token stage in one native call, for the shape where that is exact.

Gemma 3 matches thousands of raw literals (runs of newlines, tabs and ``▁``; html tags;
``<unusedN>``) and then only replaces " " by "▁" in each gap, and its pre-tokenizer
never cuts. ``PieceAddedVocabulary.split`` does this per match and per gap in Python,
which costs more than the model on ordinary text (a newline run is a match). Here the
literals are found by ``LiteralSplitter`` (one pass over the UTF-8) and every gap is
normalized and encoded by ``PieceBpeModel.encode_gaps`` (one more call).

``PieceCuts.build`` answers None unless the result is by construction that of the
Python path (piece_added.py), so the caller keeps that path for everything else:

* no token is ``normalized`` (no second pass can match: ``_Passes.second is None``) and
  none has ``lstrip``, ``rstrip`` or ``single_word`` (the splitter's matches are then
  ``AddedTokenScanner.find``'s);
* the normalizer is ``Replace`` of a non-empty literal, optionally after ``Prepend``
  (PieceNormalizer's fused case, which encode_gaps applies on bytes);
* callers also need: the pre-tokenizer never cuts, no plain ranges, no offsets.

Policies, as ``split`` applies them: ``allow`` matches every literal, ``text`` only the
formatting ones (``is_formatting``), and ``reject`` refuses any other. Under ``reject``
the full set is searched and a refused literal sends the text to the Python path (which
raises, naming literals and positions); when none is found the full set's matches are
the formatting set's (each is the longest literal of the full set where it starts, and
every literal before it started nowhere), so they are the cuts.
"""

from __future__ import annotations

from array import array

from ..artifact import AddedToken
from ..normalizers.piece_normalizer import PieceNormalizer, Prepend, Replace
from ._literal_split import LiteralSplitter
from .piece_added import is_formatting


def _literals(tokens: list[AddedToken]) -> dict[bytes, int]:
    """Literal -> id as AddedTokenScanner keeps them (non-empty; a later token wins)."""
    return {t.content.encode("utf-8"): t.id for t in tokens if t.content}


class PieceCuts:
    """The literal cuts of a text per policy, and the fused normalizer's strings;
    immutable after construction, safe across threads."""

    def __init__(self, tokens: tuple[AddedToken, ...], normalizer: tuple[bytes, bytes, bytes]
                 ) -> None:
        every = _literals(list(tokens))
        formatting = _literals([t for t in tokens if is_formatting(t)])
        # refused under reject: a literal that is not, with the same id, a formatting one
        refused = [lit for lit, i in every.items() if formatting.get(lit) != i]
        self._every = LiteralSplitter(every.items(), refused)
        self._formatting = LiteralSplitter(formatting.items())
        #: ``(pattern, content, prefix)`` for ``encode_gaps``
        self.normalizer = normalizer

    @classmethod
    def build(cls, tokens: tuple[AddedToken, ...], normalizer: PieceNormalizer
              ) -> PieceCuts | None:
        """The native path for these tokens and normalizer, or None when it would not be
        exactly the Python path (module docstring)."""
        if any(t.normalized or t.lstrip or t.rstrip or t.single_word for t in tokens):
            return None
        steps = normalizer.steps
        kinds = [type(s) for s in steps]
        if kinds not in ([Prepend, Replace], [Replace]) or not steps[-1].pattern:
            return None
        prefix = steps[0].prepend if kinds[0] is Prepend else ""
        return cls(tokens, (steps[-1].pattern.encode("utf-8"),
                            steps[-1].content.encode("utf-8"), prefix.encode("utf-8")))

    def cuts(self, data: bytes, policy: str) -> array | None:
        """``(byte start, byte end, id)`` triples of the literals ``policy`` honours in
        ``data``; None when the Python path must decide (a literal ``reject`` refuses,
        or an unknown policy: it raises)."""
        if policy == "allow":
            return self._every.find(data)
        if policy == "reject":
            return self._every.find(data, True)
        if policy == "text":
            return self._formatting.find(data)
        return None
