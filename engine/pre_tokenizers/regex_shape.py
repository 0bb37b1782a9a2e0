"""Find the constructs that make a backtracking regex take exponential (or high
polynomial) time: a quantifier whose body can match the same text in more than one way.

A backtracking engine (the ``regex`` module, the pre-tokenizer fallback) retries every
way the body of a repeat can divide a run of text before it gives up; when two ways
exist at each step, a run of n characters costs 2^n. The shapes, as the engine's users
write them:

* a variable repeat inside a repeat, where the inner run can end and the next
  iteration (or what follows it inside the body) can continue on the same characters:
  ``(a+)+``, ``(a*)*``, ``(\\w+\\s?)+$``, ``(x+x+)+y``; ``(a+b)+`` is fine (``b`` ends the
  run), so is ``(a++)+`` (possessive: never divided again);
* alternatives that can start on the same character, inside a repeat: ``(a|a)+b``,
  ``(\\w|\\d)+``.

``catastrophic_construct(pattern)`` names the first such construct, or None. It parses
the ``regex`` module's syntax (groups, classes, escapes, quantifiers with their lazy and
possessive forms, inline flags); character sets are compared on a sample alphabet (all
of ASCII and one or more characters of every general category and major script), so
the check can only err towards refusing, and only on characters outside the sample. A
pattern it cannot parse is left to the timed probe (pattern_check.py); a pattern the
``regex`` module cannot compile never gets here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import regex

from .probe_text import SAMPLE_ALPHABET

_INF = None  # an unbounded repeat's maximum


@dataclass
class _Node:
    kind: str  # "atom", "empty", "seq", "alt", "group", "repeat"
    start: int
    end: int
    children: list[_Node] = field(default_factory=list)
    atom: str = ""  # an atom's source, wrapped in its inline flags
    barrier: bool = False  # an atomic group or a lookaround: never re-entered from outside
    zero_width: bool = False  # a lookaround: matches no characters
    low: int = 1
    high: int | None = 1
    possessive: bool = False


class _Unparsed(Exception):
    """Syntax this parser does not follow (verbose mode, conditionals, recursion)."""


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.flags: list[str] = []  # scoped inline flags, outermost first

    def parse(self) -> _Node:
        node = self._alt()
        if self.i != len(self.p):
            raise _Unparsed(f"unbalanced ')' at {self.i}")
        return node

    def _alt(self) -> _Node:
        start = self.i
        branches = [self._seq()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            branches.append(self._seq())
        if len(branches) == 1:
            return branches[0]
        return _Node("alt", start, self.i, branches)

    def _seq(self) -> _Node:
        start = self.i
        items: list[_Node] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            item = self._quantified(self._item())
            if item is not None:
                items.append(item)
        return _Node("seq", start, self.i, items)

    def _item(self) -> _Node | None:
        p, i = self.p, self.i
        ch = p[i]
        if ch == "(":
            return self._group()
        if ch == "[":
            end = _class_end(p, i)
            self.i = end
            return self._atom(i, p[i:end])
        if ch == "\\":
            return self._escape()
        self.i += 1
        if ch in "^$":
            return _Node("empty", i, i + 1)
        if ch == ".":
            return self._atom(i, ".")
        if ch in "*+?" or (ch == "{" and _QUANT.match(p, i)):
            raise _Unparsed(f"quantifier without a target at {i}")
        return self._atom(i, regex.escape(ch))

    def _escape(self) -> _Node:
        p, i = self.p, self.i
        if i + 1 >= len(p):
            raise _Unparsed("trailing backslash")
        c = p[i + 1]
        end = i + 2
        if c in "pPN" and end < len(p) and p[end] == "{" or c == "x" and end < len(p) and \
                p[end] == "{":
            end = p.find("}", end) + 1
            if end == 0:
                raise _Unparsed(f"unclosed escape at {i}")
        elif c in "pP":
            end += 1
        elif c == "x":
            end += 2
        elif c == "u":
            end += 4
        elif c == "U":
            end += 8
        elif c in "gk" and end < len(p) and p[end] in "<{'":
            raise _Unparsed("named back reference")
        elif c.isdigit():
            raise _Unparsed("back reference")
        self.i = end
        if c in "AbBGKmMzZ":
            return _Node("empty", i, end)
        return self._atom(i, p[i:end])

    def _atom(self, start: int, source: str) -> _Node:
        wrapped = source
        for flags in reversed(self.flags):
            wrapped = f"(?{flags}:{wrapped})"
        return _Node("atom", start, self.i, atom=wrapped)

    def _group(self) -> _Node | None:
        """A group, or None for a comment or global flags (``(?i)``), which match nothing."""
        p, start = self.p, self.i
        self.i += 1
        barrier, zero_width, flags = False, False, None
        if p.startswith("?", self.i):
            m = _GROUP_HEAD.match(p, self.i)
            if m is None:
                raise _Unparsed(f"group syntax at {start}")
            head = m.group()
            self.i = m.end()
            if head == "?#":
                close = p.find(")", self.i)
                if close < 0:
                    raise _Unparsed("unclosed comment")
                self.i = close + 1
                return None
            if head.endswith(")"):  # global flags: (?i)
                if "x" in head:
                    raise _Unparsed("verbose mode")
                self.flags.insert(0, head[1:-1])
                return None
            if head in ("?>", "?=", "?!", "?<=", "?<!"):
                barrier, zero_width = True, head != "?>"
            elif head.endswith(":") and len(head) > 2:
                flags = head[1:-1]
                if "x" in flags:
                    raise _Unparsed("verbose mode")
            elif head.startswith(("?P<", "?<", "?'")) or head == "?:":
                pass
            else:
                raise _Unparsed(f"group {head!r}")
        if flags:
            self.flags.append(flags)
        body = self._alt()
        if flags:
            self.flags.pop()
        if self.i >= len(p) or p[self.i] != ")":
            raise _Unparsed(f"unclosed group at {start}")
        self.i += 1
        return _Node("group", start, self.i, [body], barrier=barrier, zero_width=zero_width)

    def _quantified(self, node: _Node | None) -> _Node | None:
        p = self.p
        while node is not None and self.i < len(p):
            ch = p[self.i]
            if ch in "*+?":
                low, high = {"*": (0, _INF), "+": (1, _INF), "?": (0, 1)}[ch]
                self.i += 1
            elif ch == "{" and (m := _QUANT.match(p, self.i)):
                low = int(m.group(1) or 0)
                high = low if m.group(2) is None else (int(m.group(3)) if m.group(3) else _INF)
                self.i = m.end()
            else:
                return node
            possessive = False
            if self.i < len(p) and p[self.i] in "?+":
                possessive = p[self.i] == "+"
                self.i += 1
            node = _Node("repeat", node.start, self.i, [node], low=low, high=high,
                         possessive=possessive)
        return node


_QUANT = regex.compile(r"\{(\d*)(,(\d*))?\}")
_GROUP_HEAD = regex.compile(r"\?(?:#|P?<[A-Za-z_]\w*>|'[A-Za-z_]\w*'|<=|<!|[:>=!]"
                            r"|[abefimprsuwxLV01]*(?:-[abefimprsuwxLV01]+)?[:)])")


def _class_end(p: str, i: int) -> int:
    """The index just past the character class opening at ``i``."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p):
        c = p[j]
        if c == "\\":
            j += 2
            continue
        if c == "[" and p.startswith("[:", j):
            close = p.find(":]", j + 2)
            j = close + 2 if close >= 0 else j + 1
            continue
        if c == "[":
            raise _Unparsed("nested set")
        if c == "]":
            return j + 1
        j += 1
    raise _Unparsed(f"unclosed class at {i}")


# ------------------------------------------------------------------ the analysis


@lru_cache(maxsize=4096)
def _members(atom: str) -> int:
    """The sample characters ``atom`` matches, as a bit mask over ``SAMPLE_ALPHABET``."""
    try:
        rx = regex.compile(atom)
    except regex.error:
        return (1 << len(SAMPLE_ALPHABET)) - 1  # unknown: assume it matches everything
    mask = 0
    for k, ch in enumerate(SAMPLE_ALPHABET):
        if rx.fullmatch(ch):
            mask |= 1 << k
    return mask


def _first(node: _Node) -> tuple[int, bool]:
    """(characters a match of ``node`` can start with, whether it can match empty)."""
    if node.kind == "atom":
        return _members(node.atom), False
    if node.kind == "empty":
        return 0, True
    if node.kind == "group":
        return (0, True) if node.zero_width else _first(node.children[0])
    if node.kind == "repeat":
        mask, nullable = _first(node.children[0])
        return mask, nullable or node.low == 0
    if node.kind == "alt":
        mask, nullable = 0, False
        for child in node.children:
            m, n = _first(child)
            mask, nullable = mask | m, nullable or n
        return mask, nullable
    return _first_of_seq(node.children)


def _first_of_seq(items: list[_Node]) -> tuple[int, bool]:
    mask = 0
    for item in items:
        m, nullable = _first(item)
        mask |= m
        if not nullable:
            return mask, False
    return mask, True


def _repeats(node: _Node) -> bool:
    """A backtracking repeat that can run more than one iteration."""
    return node.kind == "repeat" and not node.possessive and (node.high is _INF or
                                                             node.high > 1)


def _variable(node: _Node) -> bool:
    """A repeat whose iterations can divide a run of text in more than one way."""
    return node.kind == "repeat" and not node.possessive and node.high != node.low and (
        node.high is _INF or node.high >= 2)


class _Finder:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def src(self, node: _Node) -> str:
        return self.pattern[node.start:node.end]

    def visit(self, node: _Node, outer: _Node | None) -> str | None:
        """The first catastrophic construct in ``node``, inside the repeat ``outer``."""
        if node.kind == "group":
            return self.visit(node.children[0], None if node.barrier else outer)
        if node.kind == "repeat":
            inner_outer = outer
            if node.possessive:
                inner_outer = None
            elif _repeats(node):
                inner_outer = node
            return self.visit(node.children[0], inner_outer)
        if node.kind == "alt":
            if outer is not None:
                found = self.overlapping(node, outer)
                if found:
                    return found
            for child in node.children:
                found = self.visit(child, outer)
                if found:
                    return found
            return None
        if node.kind == "seq":
            if outer is not None:
                found = self.ambiguous_runs(node, outer)
                if found:
                    return found
            for child in node.children:
                found = self.visit(child, outer)
                if found:
                    return found
        return None

    def overlapping(self, alt: _Node, outer: _Node) -> str | None:
        firsts = [_first(branch)[0] for branch in alt.children]
        for a in range(len(firsts)):
            for b in range(a + 1, len(firsts)):
                if firsts[a] & firsts[b]:
                    return (f"alternatives {self.src(alt.children[a])!r} and "
                            f"{self.src(alt.children[b])!r} can match the same text inside "
                            f"the repeated {self.src(outer)!r}")
        return None

    def ambiguous_runs(self, seq: _Node, outer: _Node) -> str | None:
        """A variable repeat in ``seq`` (the body, or part of it, of ``outer``) whose
        characters can also start what comes after it (the rest of ``seq``, then the
        next iteration of ``outer``)."""
        items = _flatten(seq)
        for k, item in enumerate(items):
            if not _variable(item):
                continue
            run = _first(item.children[0])[0]
            follow, nullable = _first_of_seq(items[k + 1:])
            if nullable:
                follow |= _first(outer.children[0])[0]
            if run & follow:
                return (f"nested quantifier: {self.src(item)!r} inside the repeated "
                        f"{self.src(outer)!r} can divide a run of the same characters in "
                        f"many ways")
        return None


def _flatten(seq: _Node) -> list[_Node]:
    """``seq``'s items with plain (capturing or non-capturing) groups of one sequence
    opened up, so ``((a+)b?)`` is seen as ``a+ b?``."""
    out: list[_Node] = []
    for item in seq.children:
        if item.kind == "group" and not item.barrier and item.children[0].kind == "seq":
            out.extend(_flatten(item.children[0]))
        elif item.kind == "group" and not item.barrier and item.children[0].kind == "repeat":
            out.append(item.children[0])
        else:
            out.append(item)
    return out


def catastrophic_construct(pattern: str) -> str | None:
    """The first construct of ``pattern`` that backtracks catastrophically, described in
    one line naming it, or None (also for syntax this parser does not follow)."""
    try:
        tree = _Parser(pattern).parse()
    except (_Unparsed, IndexError, ValueError):
        return None
    return _Finder(pattern).visit(tree, None)
