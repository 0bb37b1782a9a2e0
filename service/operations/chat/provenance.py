"""Which characters of a rendered chat came from the caller, and from which message field.

Caller-supplied strings (message fields, tools, template_kwargs) enter the template as
``Traced``: a ``str`` subclass that carries *runs* ``(start, end, origin)`` saying which of
its characters came from which input. Being a real ``str`` it compares, hashes, formats and
serializes exactly like the plain string, so the rendered text cannot differ from
transformers'; the overridden methods only compute the same value as ``str`` and attach the
runs that the value's characters had. Anything not overridden returns a plain ``str`` and
the provenance of that value is lost (the renderer then falls back to a second check, see
``literals.py``).

Invariants: runs are sorted, non-overlapping, non-empty and inside ``[0, len)``; a Traced
value with no runs is never created (``traced()`` returns a plain ``str`` instead).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, SupportsIndex

Run = tuple[int, int, int]  # [start, end) of the string, origin id


@dataclass(frozen=True)
class Origin:
    """Where a caller string came from: a message field, ``tools`` or ``template_kwargs``."""

    message_index: int | None
    field: str
    role: str | None = None


def _shift(runs: Iterable[Run], by: int) -> list[Run]:
    return [(s + by, e + by, o) for s, e, o in runs]


def _clip(runs: Iterable[Run], a: int, b: int) -> list[Run]:
    """Runs restricted to ``[a, b)`` and re-based to start at 0."""
    out: list[Run] = []
    for s, e, o in runs:
        s2, e2 = max(s, a), min(e, b)
        if s2 < e2:
            out.append((s2 - a, e2 - a, o))
    return out


def _merge(runs: list[Run]) -> tuple[Run, ...]:
    out: list[Run] = []
    for r in runs:
        if out and out[-1][1] == r[0] and out[-1][2] == r[2]:
            out[-1] = (out[-1][0], r[1], r[2])
        else:
            out.append(r)
    return tuple(out)


def traced(value: str, runs: Iterable[Run]) -> str:
    """``value`` with ``runs`` attached, or the plain string when there are none."""
    merged = _merge([r for r in runs if r[0] < r[1]])
    if not merged:
        return str.__str__(value)
    return Traced(value, merged)


def runs_of(value: object) -> tuple[Run, ...]:
    return value._runs if isinstance(value, Traced) else ()


def concat(parts: Iterable[Any]) -> str:
    """``"".join(parts)`` keeping every Traced part's runs at its new offset."""
    parts = [p if isinstance(p, str) else str(p) for p in parts]
    runs: list[Run] = []
    pos = 0
    for p in parts:
        if isinstance(p, Traced):
            runs.extend(_shift(p._runs, pos))
        pos += len(p)
    return traced("".join(parts), runs)


def _per_char(value: str, runs: tuple[Run, ...], indices: Iterable[int]) -> list[Run]:
    starts = [r[0] for r in runs]
    out: list[Run] = []
    for j, i in enumerate(indices):
        k = bisect.bisect_right(starts, i) - 1
        if k >= 0 and runs[k][0] <= i < runs[k][1]:
            out.append((j, j + 1, runs[k][2]))
    return out


def _pieces(value: "Traced", pieces: list[str], positions: list[int]) -> list[str]:
    return [traced(p, _clip(value._runs, at, at + len(p))) for p, at in zip(pieces, positions)]


def _joined_positions(pieces: list[str], sep_len: int) -> list[int]:
    pos, out = 0, []
    for p in pieces:
        out.append(pos)
        pos += len(p) + sep_len
    return out


def _found_positions(value: str, pieces: list[str]) -> list[int]:
    pos, out = 0, []
    for p in pieces:
        at = value.find(p, pos) if p else pos
        out.append(at)
        pos = at + len(p)
    return out


class Traced(str):
    """A caller string that remembers which of its characters came from which input."""

    __slots__ = ("_runs",)
    _runs: tuple[Run, ...]

    def __new__(cls, value: str = "", runs: tuple[Run, ...] = ()) -> "Traced":
        self = super().__new__(cls, value)
        self._runs = tuple(runs)
        return self

    # ---- conversions: stay Traced through Jinja's str() output calls and soft_str
    def __str__(self) -> str:
        return self

    # ---- concatenation and repetition
    def __add__(self, other: object) -> Any:
        if not isinstance(other, str):
            return NotImplemented
        return concat((self, other))

    def __radd__(self, other: object) -> Any:
        if not isinstance(other, str):
            return NotImplemented
        return concat((other, self))

    def __mul__(self, n: SupportsIndex) -> str:  # type: ignore[override]
        return concat([self] * max(0, n.__index__()))

    __rmul__ = __mul__

    # ---- indexing and iteration
    def __getitem__(self, key: SupportsIndex | slice) -> str:  # type: ignore[override]
        value = str.__getitem__(self, key)
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step == 1:
                return traced(value, _clip(self._runs, start, max(start, stop)))
            return traced(value, _per_char(self, self._runs, range(start, stop, step)))
        i = key.__index__()
        if i < 0:
            i += len(self)
        return traced(value, _per_char(self, self._runs, [i]))

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self)):
            yield self[i]

    # ---- trimming
    def strip(self, chars: str | None = None) -> str:  # type: ignore[override]
        left = len(self) - len(str.lstrip(self, chars))
        value = str.strip(self, chars)
        return traced(value, _clip(self._runs, left, left + len(value)))

    def lstrip(self, chars: str | None = None) -> str:  # type: ignore[override]
        value = str.lstrip(self, chars)
        left = len(self) - len(value)
        return traced(value, _clip(self._runs, left, len(self)))

    def rstrip(self, chars: str | None = None) -> str:  # type: ignore[override]
        value = str.rstrip(self, chars)
        return traced(value, _clip(self._runs, 0, len(value)))

    def removeprefix(self, prefix: str) -> str:  # type: ignore[override]
        value = str.removeprefix(self, prefix)
        return traced(value, _clip(self._runs, len(self) - len(value), len(self)))

    def removesuffix(self, suffix: str) -> str:  # type: ignore[override]
        value = str.removesuffix(self, suffix)
        return traced(value, _clip(self._runs, 0, len(value)))

    # ---- splitting
    def split(self, sep: str | None = None, maxsplit: SupportsIndex = -1) -> list[str]:  # type: ignore[override]
        pieces = str.split(self, sep, maxsplit)
        pos = _found_positions(self, pieces) if sep is None else _joined_positions(pieces, len(sep))
        return _pieces(self, pieces, pos)

    def rsplit(self, sep: str | None = None, maxsplit: SupportsIndex = -1) -> list[str]:  # type: ignore[override]
        pieces = str.rsplit(self, sep, maxsplit)
        pos = _found_positions(self, pieces) if sep is None else _joined_positions(pieces, len(sep))
        return _pieces(self, pieces, pos)

    def splitlines(self, keepends: bool = False) -> list[str]:  # type: ignore[override]
        with_ends = str.splitlines(self, True)
        positions = _joined_positions(with_ends, 0)
        pieces = with_ends if keepends else str.splitlines(self, False)
        return _pieces(self, pieces, positions)

    def partition(self, sep: str) -> tuple[str, str, str]:  # type: ignore[override]
        a, s, b = str.partition(self, sep)
        return tuple(_pieces(self, [a, s, b], [0, len(a), len(a) + len(s)]))  # type: ignore[return-value]

    def rpartition(self, sep: str) -> tuple[str, str, str]:  # type: ignore[override]
        a, s, b = str.rpartition(self, sep)
        return tuple(_pieces(self, [a, s, b], [0, len(a), len(a) + len(s)]))  # type: ignore[return-value]

    # ---- rewriting
    def replace(self, old: str, new: str, count: SupportsIndex = -1) -> str:  # type: ignore[override]
        if not old:
            return str.replace(self, old, new, count)  # provenance dropped (rare, harmless)
        pieces = str.split(self, old, count)
        parts = _pieces(self, pieces, _joined_positions(pieces, len(old)))
        out: list[str] = []
        for i, p in enumerate(parts):
            if i:
                out.append(new)
            out.append(p)
        return concat(out)

    def join(self, iterable: Iterable[str]) -> str:  # type: ignore[override]
        out: list[str] = []
        for i, p in enumerate(iterable):
            if not isinstance(p, str):
                raise TypeError(f"sequence item {i}: expected str instance, {type(p).__name__} found")
            if i:
                out.append(self)
            out.append(p)
        return concat(out)

    def _same_length(self, value: str) -> str:
        if len(value) == len(self):
            return traced(value, self._runs)
        # Case mapping changed the length ('ß'.upper()): keep the union origin.
        return traced(value, [(0, len(value), self._runs[0][2])])

    def upper(self) -> str:  # type: ignore[override]
        return self._same_length(str.upper(self))

    def lower(self) -> str:  # type: ignore[override]
        return self._same_length(str.lower(self))

    def title(self) -> str:  # type: ignore[override]
        return self._same_length(str.title(self))

    def capitalize(self) -> str:  # type: ignore[override]
        return self._same_length(str.capitalize(self))

    def swapcase(self) -> str:  # type: ignore[override]
        return self._same_length(str.swapcase(self))

    def casefold(self) -> str:  # type: ignore[override]
        return self._same_length(str.casefold(self))


def spans_in(chunks: Iterable[str]) -> tuple[str, list[Run]]:
    """Join rendered chunks; return the text and the runs of every Traced chunk in it."""
    parts = list(chunks)
    runs: list[Run] = []
    pos = 0
    for p in parts:
        if isinstance(p, Traced):
            runs.extend(_shift(p._runs, pos))
        pos += len(p)
    return "".join(parts), runs


def first_origin(value: Any, _depth: int = 0) -> int | None:
    """Origin id of the first Traced string inside a JSON-like value (keys included)."""
    if isinstance(value, Traced):
        return value._runs[0][2]
    if _depth > 64:
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            o = first_origin(k, _depth + 1)
            if o is None:
                o = first_origin(v, _depth + 1)
            if o is not None:
                return o
    elif isinstance(value, (list, tuple)):
        for v in value:
            o = first_origin(v, _depth + 1)
            if o is not None:
                return o
    return None


def wrap(value: Any, oid: int) -> Any:
    """A copy of a JSON-like value whose strings (and dict keys) are Traced with ``oid``.

    Also converts the value to plain JSON types, as transformers does before rendering
    (tuples stay tuples; anything exotic becomes a placeholder naming its type).
    """
    if value is None or type(value) in (int, float, bool):
        return value
    if isinstance(value, str):
        s = str.__str__(value)
        return Traced(s, ((0, len(s), oid),)) if s else s
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, dict):
        return {wrap(k, oid): wrap(v, oid) for k, v in value.items()}
    if isinstance(value, list):
        return [wrap(v, oid) for v in value]
    if isinstance(value, tuple):
        return tuple(wrap(v, oid) for v in value)
    return f"<{type(value).__name__}>"
