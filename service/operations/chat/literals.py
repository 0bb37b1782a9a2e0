"""The reserved-literal policy: special-token literals in caller strings cannot forge turns.

``reject``  any caller string (message fields, tools, template_kwargs) holding a special or
            added-token literal → ReservedLiteralInContent naming where and which literal.
``escape``  the text is rendered unchanged, but every character that came from a caller
            string is encoded as ordinary text (``plain_ranges``), so only literals the
            template itself wrote become special ids.
``allow``   trusted pipelines: every literal in the rendered text becomes its special id.

The caller ranges for ``escape`` come from provenance (provenance.py) and, whenever a caller
string actually holds a literal, from an independent second render in which every such
literal is wrapped in two marker characters that occur nowhere in the inputs or the
template. If that render equals the real one once the markers are removed, every literal
with a marker beside it is content and is added to the plain ranges. The union is used, so
a template operation that loses provenance still cannot turn content into a special id.
Last, the encoded ids are checked against a render with every caller literal replaced by
``_`` (render.py, ``_check_escaped``): more special ids than that render's literals means
some came from the caller, and the request is refused rather than answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ...errors import ReservedLiteralInContent

POLICIES = ("reject", "escape", "allow")

#: Marker candidates. Printable, caseless symbols first (Tai Xuan Jing, U+1D300..): a
#: template that prints a value with Python's repr (a list of content parts, say) keeps
#: them as they are, where it would write a noncharacter as "\ufdd0" and the marked render
#: would no longer line up with the real one. Then Unicode noncharacters and the ends of
#: the supplementary PUAs.
_MARKER_CANDIDATES = [chr(c) for c in range(0x1D300, 0x1D357)] + \
    [chr(c) for c in range(0xFDD0, 0xFDF0)] + \
    [chr(c) for c in range(0xFFFF0, 0xFFFFE)] + [chr(c) for c in range(0x10FFF0, 0x10FFFE)]


def caller_strings(messages: list[Any], tools: Any, template_kwargs: dict[str, Any] | None
                   ) -> Iterator[tuple[int | None, str, str]]:
    """Every caller-supplied string (dict keys inside values included) as
    ``(message_index, field, string)``; field is the top-level key (``tools`` and
    ``template_kwargs.<name>`` for the non-message inputs)."""
    for i, message in enumerate(messages):
        if isinstance(message, dict):
            for key, value in message.items():
                for s in _strings(value):
                    yield i, str(key), s
    for s in _strings(tools):
        yield None, "tools", s
    for key, value in (template_kwargs or {}).items():
        for s in _strings(value):
            yield None, f"template_kwargs.{key}", s


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth > 100:
        return
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, depth + 1)
            yield from _strings(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v, depth + 1)


def check_reject(tok: Any, messages: list[Any], tools: Any,
                 template_kwargs: dict[str, Any] | None) -> None:
    """Raise ReservedLiteralInContent for the first caller string holding a literal."""
    for index, fld, s in caller_strings(messages, tools, template_kwargs):
        found = tok.find_literals(s)
        if found:
            literal, at = found[0]
            where = f"message {index} ({fld})" if index is not None else fld
            raise ReservedLiteralInContent(
                f"{where} contains the special-token literal {literal!r} at character {at}; "
                f"send it as text with reserved_literals=\"escape\", or as a token with "
                f"\"allow\" for trusted input",
                message_index=index, literal=literal, field=fld, position=at,
            )


def literals_in_inputs(tok: Any, messages: list[Any], tools: Any,
                       template_kwargs: dict[str, Any] | None) -> set[str]:
    """The distinct literals occurring in any caller string."""
    out: set[str] = set()
    for _, _, s in caller_strings(messages, tools, template_kwargs):
        out.update(lit for lit, _ in tok.find_literals(s))
    return out


def pick_markers(texts: list[str]) -> tuple[str, str] | None:
    """Two marker characters that occur in none of ``texts``."""
    free = [m for m in _MARKER_CANDIDATES if not any(m in t for t in texts)]
    return (free[0], free[1]) if len(free) >= 2 else None


def mark_value(value: Any, tok: Any, start: str, end: str) -> Any:
    """``value`` with every special literal inside its strings wrapped as start+lit+end."""
    return _map_literals(value, tok, lambda lit: start + lit + end)


def neutralize_value(value: Any, tok: Any) -> Any:
    """``value`` with every special literal inside its strings replaced by ``_``: what the
    template writes for such inputs holds only the template's own literals."""
    return _map_literals(value, tok, lambda lit: "_")


def _map_literals(value: Any, tok: Any, replace: Callable[[str], str], depth: int = 0) -> Any:
    """``value`` (strings, dicts with their keys, lists, tuples) with each literal found
    in its strings replaced by ``replace(literal)``; anything else as it is."""
    if isinstance(value, str):
        found = tok.find_literals(value)
        if not found:
            return value
        out, pos = [], 0
        for lit, at in found:
            out += [value[pos:at], replace(lit)]
            pos = at + len(lit)
        out.append(value[pos:])
        return "".join(out)
    if depth > 100:
        return value
    if isinstance(value, dict):
        return {_map_literals(k, tok, replace, depth + 1):
                _map_literals(v, tok, replace, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_literals(v, tok, replace, depth + 1) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_literals(v, tok, replace, depth + 1) for v in value)
    return value


def marked_literal_ranges(marked: str, text: str, literals: set[str], start: str, end: str
                          ) -> list[tuple[int, int]] | None:
    """Ranges of ``text`` holding a literal opened by ``start`` or closed by ``end`` in
    ``marked`` (one of the two is enough: a template's split can separate them).

    Returns None when ``marked`` minus its markers is not ``text`` (the template reacted to
    the markers, so their positions say nothing about ``text``)."""
    plain_chars: list[str] = []
    keep_index: list[int] = []  # for each char of text: its index in marked
    for j, ch in enumerate(marked):
        if ch != start and ch != end:
            plain_chars.append(ch)
            keep_index.append(j)
    if "".join(plain_chars) != text:
        return None
    ranges: list[tuple[int, int]] = []
    by_len = sorted(literals, key=len, reverse=True)
    i = 0
    n = len(text)
    while i < n:
        for lit in by_len:
            if text.startswith(lit, i):
                a, b = keep_index[i], keep_index[i + len(lit) - 1]
                before = marked[a - 1] if a > 0 else ""
                after = marked[b + 1] if b + 1 < len(marked) else ""
                if before == start or after == end:
                    ranges.append((i, i + len(lit)))
                i += len(lit)
                break
        else:
            i += 1
    return ranges


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[0] < r[1]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
