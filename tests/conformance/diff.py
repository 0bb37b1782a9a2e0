"""Compare ours with a reference on many texts; shrink each disagreement to a minimal input.

An *outcome* is what one side did with one text: ``("ids", [...])``, ``("reject",
frozenset(literals))`` under the ``reject`` policy, or ``("error", "Type: message")``.
Two sides agree when their outcomes are equal. A disagreement is reported with the
smallest sub-text (delta debugging over characters) that still disagrees, so a failure
message is something a human can paste into a REPL.

``STATS`` accumulates what was compared, for the terminal summary (conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import tokserve

from .references import Pair, ReferenceRejected

Outcome = tuple[str, object]

#: (tokenizer, what, cases, bytes, mismatches) per comparison run
STATS: list[tuple[str, str, int, int, int]] = []


def ours_outcome(pair: Pair, text: str, policy: str, add_special_tokens: bool = False) -> Outcome:
    try:
        return ("ids", pair.ours.encode(text, special_tokens=policy,
                                        add_special_tokens=add_special_tokens))
    except tokserve.SpecialTokenInText as exc:
        return ("reject", frozenset(exc.details["literals"]))
    except Exception as exc:  # noqa: BLE001 - any crash is a reportable disagreement
        return ("error", f"{type(exc).__name__}: {exc}")


def ref_outcome(pair: Pair, text: str, policy: str, add_special_tokens: bool = False) -> Outcome:
    try:
        return ("ids", pair.ref.encode(text, policy, add_special_tokens))
    except ReferenceRejected as exc:
        return ("reject", frozenset(exc.literals))


def minimize(text: str, failing: Callable[[str], bool], budget: int = 4000) -> str:
    """Delta debugging over characters: a small sub-text on which ``failing`` still holds."""
    calls = 0
    parts = 2
    while len(text) >= 2:
        chunk = -(-len(text) // parts)
        for start in range(0, len(text), chunk):
            candidate = text[:start] + text[start + chunk:]
            calls += 1
            if calls > budget:
                return text
            if candidate and failing(candidate):
                text = candidate
                parts = max(parts - 1, 2)
                break
        else:
            if parts >= len(text):
                return text
            parts = min(len(text), parts * 2)
    return text


@dataclass
class Mismatch:
    tokenizer: str
    what: str
    label: str
    minimal: str
    expected: Outcome
    got: Outcome

    def describe(self) -> str:
        return (f"{self.tokenizer} {self.what} [{self.label}] minimal input {self.minimal!r}: "
                f"expected {_show(self.expected)} got {_show(self.got)}")


def _show(outcome: Outcome) -> str:
    kind, value = outcome
    if kind == "reject":
        return f"reject{sorted(value)}"
    if kind == "ids":
        ids = list(value)
        return str(ids) if len(ids) <= 40 else f"{ids[:40]}... ({len(ids)} ids)"
    return str(value)


@dataclass
class Report:
    tokenizer: str
    what: str
    cases: int = 0
    bytes: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    total_mismatches: int = 0

    def message(self) -> str:
        lines = [f"{self.total_mismatches} mismatch(es) in {self.cases} cases "
                 f"({self.bytes / 1e6:.2f} MB) for {self.tokenizer} {self.what}:"]
        lines += ["  " + m.describe() for m in self.mismatches]
        return "\n".join(lines)

    def check(self) -> None:
        """Fail the calling test with the minimal inputs when anything disagreed."""
        if self.total_mismatches:
            import pytest

            pytest.fail(self.message(), pytrace=False)

    def record(self) -> None:
        STATS.append((self.tokenizer, self.what, self.cases, self.bytes, self.total_mismatches))


def compare(
    tokenizer: str,
    what: str,
    cases: Iterable[tuple[str, str]],
    expected: Callable[[str], object],
    got: Callable[[str], object],
    *,
    shrink_limit: int = 40,
    show: int = 12,
) -> Report:
    """Run both sides on every case; shrink the first ``shrink_limit`` disagreements and
    keep up to ``show`` distinct minimal inputs (one bug tends to fail many cases)."""
    report = Report(tokenizer, what)

    def failing(text: str) -> bool:
        return expected(text) != got(text)

    shrunk = 0
    seen: set[str] = set()
    for label, text in cases:
        report.cases += 1
        report.bytes += len(text.encode("utf-8", "surrogatepass"))
        exp, out = expected(text), got(text)
        if exp == out:
            continue
        report.total_mismatches += 1
        if shrunk < shrink_limit and len(report.mismatches) < show:
            shrunk += 1
            small = minimize(text, failing)
            if small in seen:
                continue
            seen.add(small)
            report.mismatches.append(Mismatch(tokenizer, what, label, small, expected(small),
                                              got(small)))
    report.record()
    return report


def compare_encode(pair: Pair, cases: Iterable[tuple[str, str]], policy: str,
                   add_special_tokens: bool = False) -> Report:
    """Ids (or rejection literals) of ours vs the reference under one policy."""
    return compare(
        pair.name, f"encode policy={policy} add_special_tokens={add_special_tokens}", cases,
        lambda t: ref_outcome(pair, t, policy, add_special_tokens),
        lambda t: ours_outcome(pair, t, policy, add_special_tokens),
    )


def summary_lines() -> list[str]:
    lines = []
    for tokenizer, what, cases, size, bad in STATS:
        lines.append(f"{tokenizer:12} {what:45} {cases:6d} cases {size / 1e6:7.3f} MB "
                     f"{bad} mismatch(es)")
    return lines
