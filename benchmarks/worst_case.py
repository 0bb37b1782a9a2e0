"""Hostile inputs for ``engine_bench.py --worst``: one long pre-tokenizer piece at a time.

Each kind is a text of 10^4, 10^5 and 10^6 characters that the o200k_base and
cl100k_base patterns keep as ONE piece (or, for digits and base64, as the pieces the
pattern makes of it), so the BPE model's long-piece path is what is timed:

    letter   "a" * n           spaces   " " * n            newlines  "\\n" * n
    crlf     "\\r\\n" * (n/2)    digits   "7" * n            cjk       "中" * n
    emoji    "😀" * n          ab       "ab" * (n/2)       base64    random base64
    lowercase  random a-z (the general merge loop: nothing repeats to exploit)

For every kind and size: ours (piece cache emptied before every run, so nothing is
served from an earlier run), quicktok-v1 and tiktoken; the best CPU time of the encoding
thread over several runs in this process (at 10^6 ours and quicktok take turns), except
tiktoken, which runs once in a subprocess (its o200k_base regex overflows the stack on
10^6 spaces and kills the process). Ids are compared at 10^6: ours against
tiktoken, or against quicktok where tiktoken crashed. Targets (issue 18): ours <= quicktok
at 10^6 on every kind, and ``t(10^6) / t(10^5) <= 15`` (near-linear growth).
"""

from __future__ import annotations

import hashlib
import json
import random
import string
import subprocess
import sys
import time

SIZES = (10**4, 10**5, 10**6)
KINDS = ("letter", "spaces", "newlines", "crlf", "digits", "cjk", "emoji", "ab", "base64",
         "lowercase")


def make(kind: str, n: int) -> str:
    """``n`` characters of ``kind`` (deterministic)."""
    if kind == "base64":
        rng = random.Random(6)
        alphabet = string.ascii_letters + string.digits + "+/"
        return "".join(rng.choice(alphabet) for _ in range(n))
    if kind == "lowercase":
        rng = random.Random(7)
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))
    unit = {"letter": "a", "spaces": " ", "newlines": "\n", "crlf": "\r\n", "digits": "7",
            "cjk": "中", "emoji": "😀", "ab": "ab"}[kind]
    return (unit * (n // len(unit) + 1))[:n]


def _cold(tok, text: str) -> list[int]:
    tok.clear_cache()  # nothing of an earlier run served from the piece cache
    return tok.encode(text, special_tokens="text")


def digest(ids) -> str:
    return hashlib.sha256(json.dumps([int(i) for i in ids]).encode()).hexdigest()[:16]


_TIKTOKEN = """
import json, sys, time
sys.path[:0] = {paths!r}
from conformance.references import build_tiktoken_reference, ARTIFACTS, TOKENIZER_FILES
from worst_case import make, digest
enc = build_tiktoken_reference({name!r}, ARTIFACTS / TOKENIZER_FILES[{name!r}][0]).encoding
text = make({kind!r}, {n})
start = time.perf_counter(); ids = enc.encode_ordinary(text); took = time.perf_counter() - start
print(json.dumps({{"seconds": took, "digest": digest(ids)}}))
"""


def tiktoken_run(name: str, kind: str, n: int, paths: list[str]) -> tuple[float | None, str]:
    """(seconds or None, digest or the reason it failed), in a fresh subprocess."""
    code = _TIKTOKEN.format(paths=paths, name=name, kind=kind, n=n)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=300)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if proc.returncode != 0:
        return None, f"crash({proc.returncode})"
    out = json.loads(proc.stdout)
    return out["seconds"], out["digest"]


def best(fn, repeat: int) -> tuple[float, object]:
    """Best CPU time of the calling thread over ``repeat`` calls (the machine may be
    busy with other work: CPU time and the best of several keep that out), and the
    result."""
    took, result = float("inf"), None
    for _ in range(repeat):
        start = time.thread_time()
        result = fn()
        took = min(took, time.thread_time() - start)
    return took, result


def run(names: list[str], load_ours, load_quicktok, paths: list[str],
        reference: bool = True) -> bool:
    """Print the table; True when every target holds."""
    ok = True
    print("\n== worst case: one long piece (ms; growth = t(10^6) / t(10^5), target <= 15;"
          " ours/qt = our time / quicktok's at 10^6, target <= 1)")
    for name in names:
        ours = load_ours(name)
        qt = load_quicktok(name)
        print(f"  -- {name}")
        print(f"  {'kind':10}{'ours 10^4':>11}{'10^5':>9}{'10^6':>9}{'growth':>8}"
              f"{'quicktok 10^6':>15}{'tiktoken 10^6':>15}{'ours/qt':>9}  ids")
        for kind in KINDS:
            times, ids = [], None
            for n in SIZES[:-1]:
                text = make(kind, n)
                times.append(best(lambda: _cold(ours, text), 9)[0])
            # at 10^6, ours and quicktok take turns, so that both meet the same load
            text = make(kind, SIZES[-1])
            top, qt_time, qt_ids = float("inf"), float("inf") if qt else None, None
            for _ in range(5):
                took, ids = best(lambda: _cold(ours, text), 1)
                top = min(top, took)
                if qt:
                    took, qt_ids = best(lambda: qt.encode_ordinary(text), 1)
                    qt_time = min(qt_time, took)
            times.append(top)
            tt_time, tt_digest = (tiktoken_run(name, kind, SIZES[-1], paths) if reference
                                  else (None, "skipped"))
            ours_digest = digest(ids)
            if tt_time is not None:
                same = "= tiktoken" if ours_digest == tt_digest else "DIFFERENT from tiktoken"
            elif qt_ids is not None:
                same = ("= quicktok" if ours_digest == digest(qt_ids)
                        else "DIFFERENT from quicktok") + f" (tiktoken {tt_digest})"
            else:
                same = "unchecked"
            growth = times[2] / times[1]
            ratio = times[2] / qt_time if qt_time else float("nan")
            good = growth <= 15 and (qt_time is None or ratio <= 1) and "DIFF" not in same
            ok &= good
            print(f"  {kind:10}" + "".join(f"{t * 1e3:{w}.2f}" for t, w in zip(times, (11, 9, 9)))
                  + f"{growth:8.1f}"
                  + (f"{qt_time * 1e3:15.2f}" if qt_time else f"{'-':>15}")
                  + (f"{tt_time * 1e3:15.2f}" if tt_time is not None else f"{tt_digest:>15}")
                  + f"{ratio:9.2f}  {same}{'' if good else '   <-- TARGET MISSED'}")
    return ok


if __name__ == "__main__":  # pragma: no cover - use engine_bench.py --worst
    sys.exit("run: python benchmarks/engine_bench.py --worst")
