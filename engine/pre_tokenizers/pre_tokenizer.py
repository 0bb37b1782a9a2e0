"""Pre-tokenizer stage: split a normalized segment into the pieces BPE merges within.

Two implementations of one contract ("exactly the pieces of the artifact's regex"):

* the compiled scanner (``pretok_scan.h``), selected by ``family`` when the spec is one
  patterns.py defines with a scanner (cl100k, o200k, Llama 3, Qwen, tekken,
  DeepSeek-V4); it runs inside the BPE model's nogil loop, so no Python object is made
  per piece;
* the ``regex`` module for any other pattern or pre-tokenizer tree, with the pattern
  adapted to the reference's Unicode version and ``$`` semantics (``unicode_compat``);
  a pattern patterns.py does not define is checked when the tokenizer is built
  (pattern_check.py: valid, linear time, and, when it is the whole pre-tokenizer,
  covering every character), so a load refuses what could stall or drop text.

The fallback returns pieces as UTF-8 ``bytes`` joined into one buffer plus the
exclusive byte ends of each piece, which is what the model consumes. ByteLevel's
``add_prefix_space`` inserts bytes that are not in the original text; their positions
are reported so offsets can be mapped back.
"""

from __future__ import annotations

from functools import cached_property
from itertools import accumulate
from typing import Any

import regex

from ..errors import ArtifactError, UnsupportedArtifact
from .numeric_tables import RUST_NUMERIC
from ..patterns import BYTE_LEVEL, family_for_pre_tokenizer
from ..unicode_compat import adapt_pattern
from .pattern_check import checked_regex

# tokenizers' Digits: a character class of Rust's char::is_numeric (numeric_tables.py)
_NUMERIC = "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in RUST_NUMERIC) + "]"



class PreTokenizer:
    """Immutable after construction; ``family >= 0`` means the compiled scanner applies.

    With a scanner family the ``regex`` steps are compiled on first use only (``split``,
    used by tests and diagnostics): adapting a pattern's Unicode properties to the
    reference's version scans all of Unicode and would triple o200k_base's load time.
    Without one they are compiled here, so an unsupported spec fails at load.
    """

    def __init__(self, spec: dict[str, Any], reference: str) -> None:
        check_spec(spec)
        self.reference = reference
        self.spec = spec
        self.family = family_for_pre_tokenizer(spec, reference)
        if self.family < 0:
            self._steps  # noqa: B018 - compile (and validate) now
        self.adds_prefix_space = _adds_prefix_space(spec)

    @cached_property
    def _steps(self) -> list[tuple]:
        return _compile(self.spec, self.reference)

    @cached_property
    def _findall(self):
        single = self._steps[0] if len(self._steps) == 1 else None
        # findall gives whole matches only for a pattern without capture groups
        if single and single[0] == "findall" and single[1].groups == 0:
            return single[1].findall
        return None

    def split(self, text: str) -> list[tuple[str, bool]]:
        """Pieces of ``text`` in order, each with "a space was prepended" flag."""
        pieces: list[tuple[str, bool]] = [(text, False)] if text else []
        for step in self._steps:
            pieces = _apply(step, pieces)
        return pieces

    def encode_input(self, text: str, data: bytes | None = None
                     ) -> tuple[bytes, list[int] | None, list[int]]:
        """``(data, ends, inserted)`` for the BPE model (``data``: the UTF-8 of
        ``text`` when the caller has it already).

        ``ends`` is None when the compiled scanner will split ``data`` itself.
        ``inserted`` lists positions in ``data`` of bytes that are not in the text.
        """
        if self.family >= 0:
            return text.encode("utf-8") if data is None else data, None, []
        if self._findall is not None:
            # one regex over the whole segment (tiktoken-style pattern): piece ends come
            # from the match lengths; the pattern covers every character, checked below
            data = text.encode("utf-8")
            pieces = self._findall(text)
            lengths = map(len, pieces) if len(data) == len(text) else (
                len(p.encode("utf-8")) for p in pieces)
            ends = list(accumulate(lengths))
            if (ends[-1] if ends else 0) == len(data):  # the pieces tile the text
                return data, ends, []
        parts: list[bytes] = []
        ends: list[int] = []
        inserted: list[int] = []
        pos = 0
        for piece, prefixed in self.split(text):
            b = piece.encode("utf-8")
            if prefixed:
                inserted.append(pos)
            parts.append(b)
            pos += len(b)
            ends.append(pos)
        return b"".join(parts), ends, inserted


_BEHAVIORS = ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def check_spec(spec: Any, where: str = "pre_tokenizer") -> None:
    """Raise for a spec that is not a well-formed pre-tokenizer tree.

    Raises:
        ArtifactError: a malformed node (naming where it is and what is wrong).
        UnsupportedArtifact: a well-formed node of a kind the engine does not implement.
    """
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise ArtifactError(f"{where}: expected an object with a 'type', got {spec!r:.80}")
    kind = spec["type"]

    def need(key: str, types: type | tuple[type, ...]) -> Any:
        value = spec.get(key)
        if not isinstance(value, types):
            raise ArtifactError(f"{where} ({kind}): {key!r} must be "
                                f"{getattr(types, '__name__', types)}, got {value!r:.80}")
        return value

    if kind == "Pattern":
        need("pattern", str)
    elif kind == "Sequence":
        for i, child in enumerate(need("pretokenizers", list)):
            check_spec(child, f"{where}.pretokenizers[{i}]")
    elif kind == "Split":
        pattern = need("pattern", dict)
        if len(pattern) != 1 or not isinstance(next(iter(pattern.values())), str):
            raise ArtifactError(f"{where} (Split): pattern must be {{'Regex': str}} or "
                                f"{{'String': str}}, got {pattern!r:.80}")
        if set(pattern) - {"Regex", "String"}:
            raise UnsupportedArtifact(f"Split pattern {pattern!r}")
        if spec.get("behavior", "Isolated") not in _BEHAVIORS:
            raise UnsupportedArtifact(f"Split behavior {spec.get('behavior')!r}")
    elif kind not in ("ByteLevel", "Digits"):
        raise UnsupportedArtifact(f"pre_tokenizer {kind!r}")


def _adds_prefix_space(spec: dict[str, Any]) -> bool:
    if spec.get("type") == "Sequence":
        return any(_adds_prefix_space(child) for child in spec.get("pretokenizers", []))
    return spec.get("type") == "ByteLevel" and bool(spec.get("add_prefix_space"))


def _compile(spec: dict[str, Any], reference: str) -> list[tuple]:
    kind = spec.get("type")
    if kind == "Pattern":
        return [("findall", checked_regex(spec["pattern"], reference, whole=True))]
    if kind == "Sequence":
        steps: list[tuple] = []
        for child in spec["pretokenizers"]:
            steps.extend(_compile(child, reference))
        return steps
    if kind == "Split":
        pattern = spec["pattern"]
        rx = (checked_regex(pattern["Regex"], reference, whole=False, where="pre_tokenizer Split")
              if "Regex" in pattern else regex.compile(regex.escape(pattern["String"])))
        return [("split", rx, spec.get("behavior", "Isolated"), bool(spec.get("invert", False)))]
    if kind == "Digits":
        # Rust's char::is_numeric, not Oniguruma's \p{N} nor the regex module's (each has
        # its own Unicode version): the generated table (checked over every code point)
        rx = regex.compile(_NUMERIC + ("" if spec.get("individual_digits") else "+"))
        return [("split", rx, "Isolated", False)]
    if kind == "ByteLevel":
        steps = [("prefix",)] if spec.get("add_prefix_space") else []
        if spec.get("use_regex", True):
            steps.append(("split", regex.compile(adapt_pattern(BYTE_LEVEL.text, reference)),
                          "Isolated", False))
        return steps
    raise UnsupportedArtifact(f"pre_tokenizer {kind!r}")


def _apply(step: tuple, pieces: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    op = step[0]
    for piece, prefixed in pieces:
        if op == "prefix":
            out.append((piece, prefixed) if piece.startswith(" ") else (" " + piece, True))
            continue
        if op == "findall":
            parts = _isolate(step[1], piece)
        else:
            parts = _split(step[1], piece, step[2], step[3])
        # a prepended space stays with whichever part now starts the old piece
        for i, part in enumerate(parts):
            out.append((part, prefixed and i == 0))
    return out


def _isolate(rx: regex.Pattern, text: str) -> list[str]:
    parts: list[str] = []
    last = 0
    for m in rx.finditer(text):
        s, e = m.span()
        if s > last:
            parts.append(text[last:s])
        if e > s:
            parts.append(text[s:e])
        last = e
    if last < len(text):
        parts.append(text[last:])
    return parts


def _split(rx: regex.Pattern, text: str, behavior: str, invert: bool) -> list[str]:
    """``tokenizers``' Split, step for step: runs of (span, is_delimiter) cover the text;
    a delimiter merges into its neighbour only when that neighbour is not itself a
    delimiter (two adjacent matches stay two pieces), and Contiguous joins adjacent runs
    of the same kind. Empty matches are dropped (the references' iterators differ on
    where they allow them; no pattern we know of matches empty)."""
    runs: list[tuple[int, int, bool]] = []
    last = 0
    for m in rx.finditer(text):
        s, e = m.span()
        if e == s:
            continue
        if s > last:
            runs.append((last, s, False))
        runs.append((s, e, True))
        last = e
    if last < len(text):
        runs.append((last, len(text), False))
    if invert:
        runs = [(s, e, not d) for s, e, d in runs]
    pieces: list[list[int]] = []
    if behavior == "Isolated":
        pieces = [[s, e] for s, e, _ in runs]
    elif behavior == "Removed":
        pieces = [[s, e] for s, e, d in runs if not d]
    elif behavior == "MergedWithPrevious":
        previous = False
        for s, e, d in runs:
            if d and not previous and pieces:
                pieces[-1][1] = e
            else:
                pieces.append([s, e])
            previous = d
    elif behavior == "MergedWithNext":
        following = False
        for s, e, d in reversed(runs):
            if d and not following and pieces:
                pieces[-1][0] = s
            else:
                pieces.append([s, e])
            following = d
        pieces.reverse()
    elif behavior == "Contiguous":
        previous = False
        for s, e, d in runs:
            if d == previous and pieces:
                pieces[-1][1] = e
            else:
                pieces.append([s, e])
            previous = d
    return [text[p[0]:p[1]] for p in pieces if p[1] > p[0]]
