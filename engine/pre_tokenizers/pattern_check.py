"""Load-time checks of a custom pre-tokenizer regex: linear time, and (for a pattern that
is the whole pre-tokenizer) every character covered.

Why: a pattern without a compiled scanner runs on the ``regex`` module, a backtracking
engine with no time bound at encode time, and small inputs are encoded on the service's
event loop: ``(a|a)+b|[^a]+|a`` took 9 s for 25 characters. And a tiktoken-style pattern
is the whole pre-tokenizer, so text none of its alternatives matches is dropped, ids and
all (``--pattern o200k_base`` taken as a literal regex encoded every text to ``[]``).
So import, train and load refuse such a pattern, with one line saying why:

1. it must compile (an invalid regex is named with the ``regex`` module's reason);
2. no catastrophic construct (regex_shape.py: nested quantifiers that can divide a run
   in many ways, overlapping alternatives inside a repeat), named;
3. whole patterns: every character of every coverage probe (probe_text.py: every
   general category, every script of the tests' corpus, whitespace runs, CR/LF) is
   inside a match;
4. time, bounded: short runs of each ``RUN_UNITS`` unit must finish within
   ``EXPONENTIAL_BUDGET`` of CPU time altogether, any one within ``RUN_TIMEOUT`` (what
   (2) missed, exponentially), and the time on
   runs of a few units must grow linearly as a run gets 8x longer, within
   ``RUN_TIMEOUT`` per run (what is polynomial). Growth is measured in this thread's
   CPU time from a run long enough to measure, and confirmed with the least of three
   tries, so a busy machine does not make a linear pattern look quadratic.

The patterns patterns.py defines (and tiktoken's and tokenizers' own) are not checked:
they are the references, checked by the conformance tests. A verdict is cached per
(pattern, reference, whole), so loading the same pattern again costs nothing.
"""

from __future__ import annotations

import time
import unicodedata
from functools import lru_cache

import regex

from ..errors import ArtifactError
from ..patterns import KNOWN_TEXTS
from ..unicode_compat import adapt_pattern
from .probe_text import COVERAGE_PROBES, RUN_UNITS
from .regex_shape import catastrophic_construct

#: CPU seconds all short runs (``SHORT_RUN`` characters each) may take together
EXPONENTIAL_BUDGET = 1.0
SHORT_RUN = 64
#: wall-clock seconds any one probe may take (the ``regex`` module's own bound: it stops
#: a catastrophic match); generous, so a busy machine does not refuse a linear pattern
RUN_TIMEOUT = 2.0
_GROWTH_UNITS = ("a", "0", " ", "\n", ".", "中")
_LONGEST = 16384  # characters of the longest growth run
_BASE = 0.0005   # CPU seconds a run must take for its growth to be judged
_LINEAR_LIMIT = 16.0  # 8x the text may cost 8x the time (twice that: noise); 64x is quadratic
_SUSPECT = 12.0  # above this, measured again before judging


def checked_regex(text: str, reference: str, *, whole: bool, where: str = "pre_tokenizer"
                  ) -> regex.Pattern:
    """``text`` adapted to ``reference`` (unicode_compat.py) and compiled, once it has
    passed the checks (the module docstring); ``whole``: the pattern is the whole
    pre-tokenizer (tiktoken-style), so it must also cover every character.

    Raises:
        ArtifactError: one line naming ``where``, the pattern and the reason.
    """
    check_pattern(text, reference, whole=whole, where=where)
    return regex.compile(adapt_pattern(text, reference))


def check_pattern(text: str, reference: str, *, whole: bool,
                  where: str = "pre_tokenizer") -> None:
    """Raise ``ArtifactError`` when ``checked_regex`` would (see there)."""
    reason = _verdict(text, reference, whole)
    if reason is not None:
        shown = repr(text) if len(text) <= 60 else repr(text[:57]) + "..."
        raise ArtifactError(f"{where}: pattern {shown} {reason}", pattern=text)


@lru_cache(maxsize=256)
def _verdict(text: str, reference: str, whole: bool) -> str | None:
    if text in KNOWN_TEXTS:
        return None
    try:
        rx = regex.compile(adapt_pattern(text, reference))
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError) as e:
        return f"is not a valid regex: {e}"
    construct = catastrophic_construct(text)
    if construct is not None:
        return (f"backtracks catastrophically: {construct}; make that quantifier "
                f"possessive ('++', '*+') or the group atomic ('(?>...)'), or the "
                f"alternatives disjoint")
    return _exponential(rx) or (_uncovered(rx) if whole else None) or _superlinear(rx)


def _exponential(rx: regex.Pattern) -> str | None:
    spent = 0.0
    for unit in RUN_UNITS:
        run = unit * max(SHORT_RUN // len(unit), 1)
        for text in (run, run + ("!" if unit == "\x00" else "\x00")):
            try:
                spent += _cpu_time(rx, text)
            except TimeoutError:
                spent = EXPONENTIAL_BUDGET + 1
            if spent > EXPONENTIAL_BUDGET:
                return (f"backtracks catastrophically: over {EXPONENTIAL_BUDGET:g} s on runs "
                        f"of {SHORT_RUN} characters ({unit!r} repeated); it cannot run in "
                        f"linear time")
    return None


def _uncovered(rx: regex.Pattern) -> str | None:
    for probe in COVERAGE_PROBES:
        pos = 0
        try:
            for m in rx.finditer(probe, timeout=RUN_TIMEOUT):
                start, end = m.span()
                if start > pos:
                    break
                pos = max(pos, end)
        except TimeoutError:
            return f"takes over {RUN_TIMEOUT:g} s on the probe text {probe[:40]!r}"
        if pos < len(probe):
            ch = probe[pos]
            return (f"does not match {_describe(ch)} (at {pos} of {probe[:40]!r}): "
                    f"text it does not match would be dropped, ids and all; end it with "
                    f"alternatives that match everything else (e.g. '|\\s+|[^\\s]+')")
    return None


def _superlinear(rx: regex.Pattern) -> str | None:
    """Per unit: the shortest run (doubling from 32 characters) whose time is measurable
    (``_BASE``), then one 8x as long, whose time must not grow more than ``_LINEAR_LIMIT``
    times (measured again, the least of three, before refusing)."""
    for unit in _GROWTH_UNITS:
        def run(n: int) -> str:
            return unit * max(n // len(unit), 1) + "\x00"
        try:
            n = 32
            base = _cpu_time(rx, run(n))
            while base < _BASE and n < _LONGEST // 8:
                n *= 2
                base = _cpu_time(rx, run(n))
            base = min(base, _cpu_time(rx, run(n)))  # a spike here would hide growth
            spent = _cpu_time(rx, run(8 * n))
            if spent > _SUSPECT * max(base, _BASE):
                spent = min(spent, _cpu_time(rx, run(8 * n)), _cpu_time(rx, run(8 * n)))
                base = min(base, _cpu_time(rx, run(n)), _cpu_time(rx, run(n)))
                ratio = spent / max(base, 1e-6)
                if spent > _LINEAR_LIMIT * _BASE and ratio > _LINEAR_LIMIT:
                    return (f"cannot run in linear time: 8x the text ({unit!r} repeated) "
                            f"took {ratio:.0f}x the time")
        except TimeoutError:
            return (f"cannot run in linear time: over {RUN_TIMEOUT:g} s on a run of "
                    f"{unit!r}")
    return None


def _cpu_time(rx: regex.Pattern, text: str) -> float:
    start = time.thread_time()
    rx.findall(text, timeout=RUN_TIMEOUT)
    return time.thread_time() - start


def _describe(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}{' ' + name if name else ''} ({unicodedata.category(ch)})"
