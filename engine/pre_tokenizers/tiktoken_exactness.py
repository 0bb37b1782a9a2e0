"""Which tiktoken ``pat_str`` the ``regex`` fallback runs exactly as tiktoken does.

Why: ``tokserve.Encoding(name, pat_str=..., ...)`` (tiktoken's constructor, and through
the tiktoken shim any code written for tiktoken) may be given a pattern that has no
compiled scanner (patterns.py). The engine then splits with the ``regex`` module after
``unicode_compat.adapt_pattern``. Two things can still make its ids differ from
tiktoken's, and both are refused here by name instead of answered differently:

1. **Constructs whose meaning differs.** tiktoken compiles the pattern with fancy-regex
   (Rust); ``adapt_pattern`` makes general categories, ``\\s``, ``\\d`` and ``$`` mean what
   they mean there, but not ``\\w``, ``\\b``, scripts or binary properties, negated
   properties inside a class, Rust's class set operations (``&&``, ``--``, nested ``[``),
   inline flags other than ``(?i:...)`` or non-ASCII case folding. Only the subset
   below is accepted; anything else raises ``UnsupportedArtifact`` naming the construct.
2. **Text the pattern does not match.** tiktoken keeps only the matches of its pattern
   (``find_iter``): characters no alternative matches are dropped from the ids. The
   engine keeps every character. So a pattern is accepted only when it provably matches
   a non-empty piece at every position: no alternative can match the empty string, and
   the characters each alternative is sure to match from (``_sure``) cover all of
   Unicode. Then nothing is dropped and both split the same.

The accepted subset: literals; ``.``; ``^``/``$``/``\\A``; classes ``[...]``/``[^...]`` of
literals, ranges, ``\\p{GC}`` (general categories), ``\\s``, ``\\d``; outside classes also
``\\P{GC}``, ``\\S``, ``\\D``; escapes ``\\t \\n \\r \\f \\v \\xHH`` and escaped ASCII
punctuation; groups ``(...)``, ``(?:...)``, ``(?P<n>...)``, ``(?i:...)`` over ASCII,
atomic ``(?>...)``, lookarounds; quantifiers ``* + ? {n} {n,} {n,m}``, lazy or possessive.
The known patterns (patterns.py) are all inside it (tests/engine/test_tiktoken_shim.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import UnsupportedArtifact
from ..unicode_compat import WHITE_SPACE_CHARS, category_ranges, intersect_ranges

Ranges = tuple[tuple[int, int], ...]
_MAX = 0x10FFFF
_SCALARS: Ranges = ((0, 0xD7FF), (0xE000, _MAX))  # what text can hold after repair
_CONTROL = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}
_PUNCT = set("!\"#$%&'()*+,-./:;=?@[\\]^_`{|}~ ")  # escapable to themselves in both


# ---------------------------------------------------------------- code point sets

def _norm(ranges) -> Ranges:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def _complement(ranges: Ranges) -> Ranges:
    out, start = [], 0
    for a, b in _norm(ranges):
        if a > start:
            out.append((start, a - 1))
        start = b + 1
    if start <= _MAX:
        out.append((start, _MAX))
    return tuple(out)


def _minus(a: Ranges, b: Ranges) -> Ranges:
    return _norm(_intersect(a, _complement(b)))


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    return tuple(intersect_ranges(_norm(a), _norm(b)))


_WHITE_SPACE = _norm((ord(c), ord(c)) for c in WHITE_SPACE_CHARS)  # \\s, as adapted


# ---------------------------------------------------------------- syntax tree

@dataclass
class _Node:
    kind: str  # "set", "seq", "alt", "group", "look", "anchor", "repeat"
    chars: Ranges = ()  # set: the characters one step matches
    items: list[_Node] = field(default_factory=list)  # seq/alt: parts; group/look/repeat: [inner]
    low: int = 1  # repeat: bounds and mode
    high: int | None = 1
    possessive: bool = False  # repeat; also an atomic group


class _Refused(Exception):
    def __init__(self, construct: str, why: str) -> None:
        super().__init__(f"{construct} ({why})")


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p, self.i, self.fold = pattern, 0, False

    def peek(self, k: int = 0) -> str:
        return self.p[self.i + k] if self.i + k < len(self.p) else ""

    def alternation(self) -> _Node:
        alts = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.sequence())
        return _Node("alt", items=alts)

    def sequence(self) -> _Node:
        items: list[_Node] = []
        while self.peek() not in ("", "|", ")"):
            ch = self.peek()
            if ch in "*+?{":
                if not items or items[-1].kind in ("repeat", "look", "anchor"):
                    raise _Refused(repr(ch), "a quantifier with nothing to repeat")
                items[-1] = self.quantifier(items[-1])
            else:
                items.append(self.atom())
        return _Node("seq", items=items)

    def quantifier(self, node: _Node) -> _Node:
        ch = self.p[self.i]
        self.i += 1
        low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}.get(ch, (None, None))
        if ch == "{":
            close = self.p.find("}", self.i)
            body = self.p[self.i:close] if close > 0 else ""
            lo, comma, hi = body.partition(",")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise _Refused("{" + body, "only {n}, {n,} and {n,m}")
            low, high = int(lo), (int(hi) if hi else None) if comma else int(lo)
            self.i = close + 1
        possessive = self.peek() == "+"
        if self.peek() in ("+", "?"):
            self.i += 1
        return _Node("repeat", items=[node], low=low, high=high, possessive=possessive)

    def atom(self) -> _Node:
        ch = self.p[self.i]
        self.i += 1
        if ch == "(":
            return self.group()
        if ch == "[":
            return _Node("set", chars=self.char_class())
        if ch == ".":
            return _Node("set", chars=_complement(((10, 10),)))
        if ch in "^$":
            return _Node("anchor")
        if ch == "\\":
            return self.escape(in_class=False)
        if ch in "]}":
            raise _Refused(repr(ch), "an unescaped closing bracket")
        return _Node("set", chars=self.literal(ord(ch)))

    def group(self) -> _Node:
        kind, possessive, fold = "group", False, self.fold
        if self.peek() == "?":
            for opener, what in (("?:", "group"), ("?i:", "fold"), ("?>", "atomic"),
                                 ("?=", "look"), ("?!", "look"), ("?<=", "look"),
                                 ("?<!", "look"), ("?P<", "named"), ("?<", "named")):
                if self.p.startswith(opener, self.i):
                    self.i += len(opener)
                    break
            else:
                raise _Refused("(" + self.p[self.i:self.i + 3], "only (?:, (?i:, (?>, "
                               "lookarounds and named groups; no other flags")
            if what == "named":
                close = self.p.find(">", self.i)
                if close < 0:
                    raise _Refused("(?<", "an unclosed group name")
                self.i = close + 1
            kind = "look" if what == "look" else "group"
            possessive = what == "atomic"
            self.fold = self.fold or what == "fold"
        inner = self.alternation()
        self.fold = fold
        if self.peek() != ")":
            raise _Refused("(", "an unclosed group")
        self.i += 1
        return _Node(kind, items=[inner], possessive=possessive)

    def literal(self, cp: int) -> Ranges:
        if self.fold and cp > 0x7F:
            raise _Refused(repr(chr(cp)), "case-insensitive matching of a non-ASCII character")
        return ((cp, cp),)

    def escape(self, in_class: bool) -> _Node:
        ch = self.peek()
        self.i += 1
        if ch == "":
            raise _Refused("\\", "a trailing backslash")
        if ch in "pP":
            return _Node("set", chars=self.property(ch == "P", in_class))
        if ch in "sSdD":
            if in_class and ch in "SD":
                raise _Refused("\\" + ch, "a negated class inside a class")
            if self.fold and ch in "dD":
                raise _Refused("\\" + ch, "inside (?i:...)")
            chars = _WHITE_SPACE if ch in "sS" else category_ranges("Nd", "tiktoken")
            return _Node("set", chars=_complement(chars) if ch in "SD" else chars)
        if ch in _CONTROL:
            return _Node("set", chars=((_CONTROL[ch],) * 2,))
        if ch == "x":
            digits = self.p[self.i:self.i + 2]
            if len(digits) != 2 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise _Refused("\\x" + digits, "only \\x followed by two hex digits")
            self.i += 2
            return _Node("set", chars=self.literal(int(digits, 16)))
        if ch == "A" and not in_class:
            return _Node("anchor")
        if ch in _PUNCT:
            return _Node("set", chars=self.literal(ord(ch)))
        raise _Refused("\\" + ch, _ESCAPES.get(ch, "not an escape both engines read alike"))

    def property(self, negated: bool, in_class: bool) -> Ranges:
        start = self.i - 2
        if self.peek() == "{":
            close = self.p.find("}", self.i)
            if close < 0:
                raise _Refused(self.p[start:], "an unclosed property name")
            name, self.i = self.p[self.i + 1:close], close + 1
        else:
            name, self.i = self.peek(), self.i + 1
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        construct = self.p[start:self.i]
        if in_class and negated:
            raise _Refused(construct, "a negated property inside a class")
        if self.fold:
            raise _Refused(construct, "a property inside (?i:...)")
        try:
            chars = category_ranges(name, "tiktoken")
        except KeyError:
            raise _Refused(construct, "not a general category: scripts and binary "
                                      "properties follow each library's Unicode version"
                           ) from None
        return _complement(chars) if negated else chars

    def char_class(self) -> Ranges:
        start = self.i - 1
        negated = self.peek() == "^"
        self.i += negated
        if negated and self.fold:
            raise _Refused(self.p[start:start + 2], "a negated class inside (?i:...)")
        parts: list[tuple[int, int]] = []
        first = True
        while first or self.peek() != "]":
            if self.peek() == "":
                raise _Refused(self.p[start:], "an unclosed class")
            self.no_set_operation(start)
            first = False
            low = self.class_item()
            self.no_set_operation(start)
            if self.peek() != "-" or self.peek(1) in ("]", ""):
                parts.extend(low)
                continue
            self.i += 1
            high = self.class_item()
            if len(low) != 1 or len(high) != 1 or low[0][0] != low[0][1] \
                    or high[0][0] != high[0][1] or high[0][0] < low[0][0]:
                raise _Refused(self.p[start:self.i], "a range between two characters")
            if self.fold and high[0][0] > 0x7F:
                raise _Refused(self.p[start:self.i], "a non-ASCII range inside (?i:...)")
            parts.append((low[0][0], high[0][0]))
        self.i += 1
        chars = _norm(parts)
        return _complement(chars) if negated else chars

    def no_set_operation(self, start: int) -> None:
        if self.peek() == "[" or self.p.startswith(("&&", "--", "~~"), self.i):
            raise _Refused(self.p[start:self.i + 2], "nested classes and set operations "
                                                      "mean other things to Rust")

    def class_item(self) -> Ranges:
        """One class member: a character or a set (an escape such as ``\\p{L}``)."""
        ch = self.p[self.i]
        self.i += 1
        if ch != "\\":
            return self.literal(ord(ch))
        node = self.escape(in_class=True)
        if node.kind != "set":
            raise _Refused("\\" + self.p[self.i - 1], "not allowed inside a class")
        return node.chars


_ESCAPES = {
    "w": "Unicode word characters differ between the libraries' Unicode versions",
    "W": "Unicode word characters differ between the libraries' Unicode versions",
    "b": "word boundaries follow \\w", "B": "word boundaries follow \\w",
    "z": "write $ (end of text)", "Z": "write $ (end of text)",
}


# ---------------------------------------------------------------- properties

def _min_len(node: _Node) -> int:
    if node.kind == "set":
        return 1
    if node.kind in ("look", "anchor"):
        return 0
    if node.kind == "seq":
        return sum(_min_len(n) for n in node.items)
    if node.kind == "alt":
        return min(_min_len(n) for n in node.items)
    if node.kind == "repeat":
        return node.low * _min_len(node.items[0])
    return _min_len(node.items[0])  # group


def _free(node: _Node) -> bool:
    """Always able to match the empty string, whatever surrounds it."""
    if node.kind == "repeat":
        return node.low == 0 or _free(node.items[0])
    if node.kind == "seq":
        return all(_free(n) for n in node.items)
    if node.kind == "alt":
        return any(_free(n) for n in node.items)
    if node.kind == "group":
        return _free(node.items[0])
    return False  # a character, a lookaround or an anchor is a condition


def _sure(node: _Node) -> Ranges:
    """Characters from which ``node`` certainly matches (a subset; empty when unsure)."""
    if node.kind == "alt":
        return _norm(r for n in node.items for r in _sure(n))
    if node.kind == "set":
        return node.chars
    if node.kind == "group":
        return _sure(node.items[0])
    if node.kind == "repeat":
        return _sure(node.items[0]) if node.low >= 1 else ()
    if node.kind != "seq":
        return ()
    taken: Ranges = ()  # characters a possessive optional prefix would consume
    for k, item in enumerate(node.items):
        if _min_len(item) >= 1:
            if not all(_free(rest) for rest in node.items[k + 1:]):
                return ()
            return _minus(_sure(item), taken)
        if item.kind != "repeat" or item.low != 0:
            return ()  # a lookaround or an anchor first: a condition
        if item.possessive:
            inner = item.items[0]
            if inner.kind != "set":
                return ()
            taken = _norm(taken + inner.chars)
    return ()


@lru_cache(maxsize=64)
def check_tiktoken_pattern(pattern: str) -> None:
    """Raise unless the fallback splits ``pattern`` exactly as tiktoken does (see the
    module docstring for why and for the accepted subset).

    Raises:
        UnsupportedArtifact: naming the construct, or saying which text would be dropped.
    """
    parser = _Parser(pattern)
    try:
        tree = parser.alternation()
        if parser.i != len(pattern):
            raise _Refused(repr(pattern[parser.i]), "an unbalanced parenthesis")
    except _Refused as e:
        raise UnsupportedArtifact(f"pattern construct {e} in {pattern!r}") from None
    if _min_len(tree) == 0:
        raise UnsupportedArtifact(
            f"pattern {pattern!r} can match the empty string (the libraries place empty "
            f"matches differently)")
    missing = _minus(_SCALARS, _sure(tree))
    if missing:
        a, b = missing[0]
        raise UnsupportedArtifact(
            f"pattern {pattern!r} may not match every character (e.g. U+{a:04X}"
            f"{f'..U+{b:04X}' if b > a else ''}): tiktoken drops text its pattern does not "
            f"match and the engine keeps it; end it with an alternative that "
            f"matches any character, such as '|\\s+|.'")
