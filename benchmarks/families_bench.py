"""SentencePiece-family benchmark: ours vs tokenizers and sentencepiece, in one run, offline.

    python benchmarks/families_bench.py [--mb 1.0] [--repeat 3]
                                        [--tokenizers llama2,mistral-v0.3,gemma3,t5-small]
                                        [--reference-only] [--hostile-only] [--skip-hostile]
                                        [--skip-load]

What it times (issue 30's "Speed"; see benchmarks/README.md):

* throughput, one thread, on the mixed multilingual corpus of ``engine_bench.py`` (its
  ``build_slices``: English, code, CJK, other scripts, emoji, ``--mb`` MB each): Llama 2,
  Mistral v0.3 and Gemma 3 (``tokenizer.json``) ours vs ``tokenizers``; Llama 2 and
  Mistral v0.3 (``tokenizer.model``) ours vs ``sentencepiece``; T5 ours vs
  ``tokenizers``. Ids are checked identical on every document before anything is timed
  (a speed figure for different ids would mean nothing; differences are printed).
  **Cold**: the caches emptied before every timed pass over a slice (ours:
  ``Tokenizer.clear_cache()``; tokenizers: ``Tokenizer.model._clear_cache()``, its word
  cache of up to 10,000 sequences shorter than 256 bytes; sentencepiece has no cache, so
  its cold and warm are the same work). **Warm**: after an untimed pass over the slice.
  Targets, cold: byte-fallback BPE >= 3x sentencepiece and >= 5x tokenizers; T5 >= 5x
  tokenizers;
* hostile input: one string of 10^4, 10^5 and 10^6 characters with no spaces (one
  repeated letter, random a-z, random CJK, random emoji) per tokenizer, ours vs
  tokenizers, both cold; ids compared at 10^6. Targets: ours <= tokenizers at 10^6,
  ``t(10^6) / t(10^5) <= 15`` for ours;
* load: Gemma 3's ``tokenizer.json`` (262k pieces, 6,415 added tokens), ours vs
  ``tokenizers``, each in a fresh subprocess, median of 3, with the RSS it adds.
  Target: ours <= tokenizers.

Single-thread figures are the CPU time of the encoding thread (the box is shared), the
best of ``--repeat`` rounds in which the implementations take turns, as engine_bench.py
does. Policies: ours ``special_tokens="allow"`` against tokenizers' ``encode`` (both match
special-token literals in the text), ``special_tokens="text"`` against sentencepiece
(which never does); no BOS/EOS on either side.

``--reference-only`` times the references alone (it runs before the engine supports
these files); otherwise a tokenizer ours cannot load is reported, its reference is still
timed, and the script exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "benchmarks")]

# imported after the repo's paths are first; engine_bench.py is the byte-level benchmark,
# whose corpus (build_slices) and load probe (_LOAD) this one reuses
import tokserve
from conformance.references import ARTIFACTS
from engine_bench import _LOAD, build_slices
from worst_case import best, digest
from worst_case import make as make_byte_level


@dataclass(frozen=True)
class Subject:
    """One tokenizer file and the library it is timed against."""

    name: str
    file: str       # under ../shared/artifacts
    reference: str  # "tokenizers" or "sentencepiece"
    target: float   # required cold ratio, ours / reference

    @property
    def path(self) -> Path:
        return (ARTIFACTS / self.file).resolve()

    @property
    def title(self) -> str:
        return f"{self.name} ({Path(self.file).name}) vs {self.reference}"


SUBJECTS = [
    Subject("llama2", "llama2/tokenizer.json", "tokenizers", 5.0),
    Subject("llama2", "llama2/tokenizer.model", "sentencepiece", 3.0),
    Subject("mistral-v0.3", "mistral-v0.3/tokenizer.json", "tokenizers", 5.0),
    Subject("mistral-v0.3", "mistral-v0.3/tokenizer.model", "sentencepiece", 3.0),
    Subject("gemma3", "gemma3/tokenizer.json", "tokenizers", 5.0),
    Subject("t5-small", "t5-small/tokenizer.json", "tokenizers", 5.0),
]
HOSTILE_SIZES = (10**4, 10**5, 10**6)
HOSTILE_KINDS = ("letter", "lowercase", "cjk", "emoji")
LOAD_FILE = "gemma3/tokenizer.json"
GROWTH_LIMIT = 15.0

# ============================================================================ implementations


@dataclass
class Impl:
    """One side: ``encode(text) -> ids`` and ``make_cold()`` (empty its caches)."""

    label: str
    encode: Callable[[str], list[int]]
    make_cold: Callable[[], None]


def ours_impl(subject: Subject) -> Impl:
    tok = tokserve.load(str(subject.path))
    policy = "text" if subject.reference == "sentencepiece" else "allow"
    return Impl("ours", lambda text: tok.encode(text, special_tokens=policy), tok.clear_cache)


def reference_impl(subject: Subject) -> Impl:
    if subject.reference == "sentencepiece":
        import sentencepiece

        sp = sentencepiece.SentencePieceProcessor(model_file=str(subject.path))
        return Impl("sentencepiece", sp.encode, lambda: None)  # no cache to empty
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(subject.path))
    return Impl("tokenizers", lambda text: tok.encode(text, add_special_tokens=False).ids,
                tok.model._clear_cache)


def load_ours(subject: Subject) -> tuple[Impl | None, str | None]:
    """Ours, or None and why it did not load."""
    try:
        return ours_impl(subject), None
    except Exception as exc:  # noqa: BLE001 - reported, the reference still runs
        return None, f"{type(exc).__name__}: {exc}"


# ============================================================================ throughput


def _turns(impls: list[Impl], docs: list[str], rounds: int, cold: bool) -> dict[str, float]:
    """Best CPU seconds of each implementation over ``docs``, the implementations taking
    turns (the first one rotating each round). Cold: caches emptied before each timed
    pass; warm: one untimed pass first."""
    if not cold:
        for impl in impls:
            for d in docs:
                impl.encode(d)
    times = {i.label: float("inf") for i in impls}
    for r in range(rounds):
        for impl in impls[r % len(impls):] + impls[:r % len(impls)]:
            if cold:
                impl.encode("warm up the code paths, not the cache")
                impl.make_cold()
            start = time.thread_time()
            for d in docs:
                impl.encode(d)
            times[impl.label] = min(times[impl.label], time.thread_time() - start)
    return times


def check_ids(ours: Impl, ref: Impl, slices: dict[str, list[str]]) -> bool:
    """Ours against the reference on every document; prints the verdict."""
    bad = []
    for s, docs in slices.items():
        for k, d in enumerate(docs):
            a, b = list(ours.encode(d)), list(ref.encode(d))
            if a != b:
                at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                bad.append(f"{s}[{k}] at id {at}")
    total = sum(len(docs) for docs in slices.values())
    if not bad:
        print(f"  ids ours vs {ref.label}: identical on all {total} documents")
        return True
    print(f"  ids ours vs {ref.label}: DIFFERENT on {len(bad)} of {total} documents "
          f"(first: {', '.join(bad[:5])}); the ratios below compare different work")
    return False


def _row(label: str, times: dict[str, float], impls: list[Impl], size: int) -> str:
    line = f"  {label:14}" + "".join(f"{size / 1e6 / times[i.label]:12.2f}" for i in impls)
    if len(impls) == 2:
        line += f"{times[impls[1].label] / times['ours']:11.2f}x"
    return line


def bench_subject(subject: Subject, slices: dict[str, list[str]], repeat: int,
                  reference_only: bool) -> dict[str, float | bool | None]:
    """Print one tokenizer's table; return its mixed-corpus figures."""
    ref = reference_impl(subject)
    impls, same = [ref], None
    if not reference_only:
        ours, why = load_ours(subject)
        if ours is None:
            print(f"  ours cannot load {subject.path}: {why}\n  (timing {ref.label} alone)")
        else:
            impls = [ours, ref]
            same = check_ids(ours, ref, slices)
    result: dict[str, float | bool | None] = {
        "failed": len(impls) == 1 and not reference_only, "identical": same}
    sizes = {s: sum(len(d.encode("utf-8")) for d in docs) for s, docs in slices.items()}
    header = f"  {'slice':14}" + "".join(f"{i.label:>12}" for i in impls)
    header += f"{'ours/' + ref.label[:5]:>12}" if len(impls) == 2 else ""
    for regime in ("cold", "warm"):
        print(f"  -- 1 thread, {regime}, MB/s")
        print(header)
        totals = {i.label: 0.0 for i in impls}
        for s, docs in slices.items():
            times = _turns(impls, docs, repeat, regime == "cold")
            for label, t in times.items():
                totals[label] += t
            print(_row(s, times, impls, sizes[s]))
        print(_row("mixed (all)", totals, impls, sum(sizes.values())))
        mb = sum(sizes.values()) / 1e6
        result[f"{regime}_ref"] = mb / totals[ref.label]
        if len(impls) == 2:
            result[f"{regime}_ours"] = mb / totals["ours"]
            result[f"{regime}_ratio"] = totals[ref.label] / totals["ours"]
    return result


def bench_throughput(subjects: list[Subject], mb: float, repeat: int,
                     reference_only: bool) -> bool:
    slices = build_slices(mb)
    sizes = {s: sum(len(d.encode("utf-8")) for d in docs) for s, docs in slices.items()}
    print("corpus (engine_bench.build_slices): " + ", ".join(
        f"{s} {sizes[s] / 1e6:.2f} MB ({len(slices[s])} docs)" for s in slices)
        + "; 'mixed (all)' is all of it")
    summary = []
    for subject in subjects:
        print(f"\n== {subject.title}")
        if not subject.path.is_file():
            print(f"  skipped: missing {subject.path}")
            continue
        summary.append((subject, bench_subject(subject, slices, repeat, reference_only)))
    ok = True
    print("\n== summary, mixed corpus, 1 thread MB/s (target: cold ratio)")
    for subject, r in summary:
        line = f"  {subject.title:52} {subject.reference} cold {r['cold_ref']:6.2f} warm " \
               f"{r['warm_ref']:6.2f}"
        if "cold_ratio" in r:
            met = r["cold_ratio"] >= subject.target and r["identical"]
            ok &= bool(met)
            line += (f" | ours cold {r['cold_ours']:7.2f} warm {r['warm_ours']:7.2f} | "
                     f"{r['cold_ratio']:.2f}x cold, {r['warm_ratio']:.2f}x warm "
                     f"(>= {subject.target:g}x: {'met' if met else 'MISSED'}"
                     f"{'' if r['identical'] else ', ids DIFFERENT'})")
        elif r["failed"]:
            ok = False
            line += " | ours: DID NOT LOAD"
        print(line)
    return ok


# ============================================================================ hostile


def make_hostile(kind: str, n: int) -> str:
    """``n`` characters of ``kind`` with no spaces (deterministic)."""
    if kind in ("letter", "lowercase"):
        return make_byte_level(kind, n)  # "a" * n; random a-z (worst_case.py's)
    rng = random.Random(30)
    lo, hi = {"cjk": (0x4E00, 0x9FFF), "emoji": (0x1F300, 0x1F64F)}[kind]
    return "".join(chr(rng.randint(lo, hi)) for _ in range(n))


def _cold_run(impl: Impl, text: str) -> Callable[[], list[int]]:
    def run() -> list[int]:
        impl.make_cold()
        return impl.encode(text)
    return run


def bench_hostile(subjects: list[Subject], repeat: int, reference_only: bool) -> bool:
    """The table per tokenizer.json; True when every target holds."""
    ok = True
    print("\n== hostile: one string with no spaces (ms, CPU time, cold; growth = t(10^6) / "
          f"t(10^5), target <= {GROWTH_LIMIT:g}; ours/tok = our time / tokenizers' at 10^6, "
          "target <= 1)")
    for subject in (s for s in subjects if s.reference == "tokenizers" and s.path.is_file()):
        ref = reference_impl(subject)
        ours, why = (None, "--reference-only") if reference_only else load_ours(subject)
        print(f"  -- {subject.name}" + (f" (ours not timed: {why})" if ours is None else ""))
        print(f"  {'kind':10}{'ours 10^4':>11}{'10^5':>9}{'10^6':>9}{'growth':>8}"
              f"{'tok 10^4':>10}{'10^5':>9}{'10^6':>9}{'growth':>8}{'ours/tok':>10}  ids")
        for kind in HOSTILE_KINDS:
            cells = {}
            for impl in ([ours] if ours else []) + [ref]:
                row, ids = [], None
                for n in HOSTILE_SIZES:
                    runs = repeat if n < HOSTILE_SIZES[-1] else max(1, repeat // 2)
                    took, ids = best(_cold_run(impl, make_hostile(kind, n)), runs)
                    row.append(took)
                cells[impl.label] = (row, digest(ids))
            ref_row, ref_digest = cells["tokenizers"]
            line = f"  {kind:10}"
            if ours is not None:
                row, ours_digest = cells["ours"]
                growth, ratio = row[2] / row[1], row[2] / ref_row[2]
                same = ours_digest == ref_digest
                good = growth <= GROWTH_LIMIT and ratio <= 1 and same
                ok &= good
                line += "".join(f"{t * 1e3:{w}.1f}" for t, w in zip(row, (11, 9, 9)))
                line += f"{growth:8.1f}"
            else:
                ok &= reference_only
                line += f"{'-':>11}{'-':>9}{'-':>9}{'-':>8}"
            line += "".join(f"{t * 1e3:{w}.1f}" for t, w in zip(ref_row, (10, 9, 9)))
            line += f"{ref_row[2] / ref_row[1]:8.1f}"
            if ours is not None:
                line += (f"{ratio:10.2f}  {'identical' if same else 'DIFFERENT'}"
                         f"{'' if good else '   <-- TARGET MISSED'}")
            print(line)
    return ok


# ============================================================================ load


_LOADERS = {
    "ours (tokserve.load)": ("import tokserve", "obj = tokserve.load({path!r})"),
    "tokenizers (Tokenizer.from_file)": ("from tokenizers import Tokenizer",
                                         "obj = Tokenizer.from_file({path!r})"),
}


def bench_load(runs: int, reference_only: bool) -> bool:
    """Gemma 3's load, each in a fresh subprocess (engine_bench's probe); True when ours
    is no slower than tokenizers (or ours is not measured)."""
    path = (ARTIFACTS / LOAD_FILE).resolve()
    if not path.is_file():
        print(f"\n== load: skipped, missing {path}")
        return True
    print(f"\n== load {LOAD_FILE} (fresh subprocess each, median of {runs}; RSS delta)")
    medians = {}
    for label, (imports, load) in _LOADERS.items():
        if reference_only and label.startswith("ours"):
            continue
        samples = []
        for _ in range(runs):
            code = _LOAD.format(paths=[str(REPO), str(REPO / "tests")], imports=imports,
                                load=load.format(path=str(path)), probe="hello world")
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=False)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
                print(f"  {label}: failed: {last[:300]}")
                break
            samples.append(json.loads(proc.stdout))
        if samples:
            samples.sort(key=lambda s: s["seconds"])
            mid = samples[len(samples) // 2]
            medians[label] = mid["seconds"]
            print(f"  {label:34} {mid['seconds']:7.3f} s   RSS +{mid['rss'] / 2**20:7.1f} MiB")
    if reference_only:
        return True
    ours, ref = medians.get("ours (tokserve.load)"), medians.get("tokenizers (Tokenizer.from_file)")
    if ours is None or ref is None:
        return False
    print(f"  ours / tokenizers: {ours / ref:.2f}x the time (target <= 1: "
          f"{'met' if ours <= ref else 'MISSED'})")
    return ours <= ref


# ============================================================================ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="MB of UTF-8 per corpus slice")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokenizers", default="llama2,mistral-v0.3,gemma3,t5-small")
    parser.add_argument("--reference-only", action="store_true",
                        help="time tokenizers and sentencepiece alone (ours not loaded)")
    parser.add_argument("--hostile-only", action="store_true")
    parser.add_argument("--skip-hostile", action="store_true")
    parser.add_argument("--skip-load", action="store_true")
    args = parser.parse_args(argv)
    names = [n for n in args.tokenizers.split(",") if n]
    subjects = [s for s in SUBJECTS if s.name in names]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, tokserve "
          f"{tokserve.__version__}" + (", references only" if args.reference_only else ""))
    ok = True
    if not args.hostile_only:
        ok &= bench_throughput(subjects, args.mb, args.repeat, args.reference_only)
    if not args.skip_hostile:
        ok &= bench_hostile(subjects, args.repeat, args.reference_only)
    if not args.skip_load and not args.hostile_only:
        ok &= bench_load(3, args.reference_only)
    if args.reference_only:
        print("\nreferences only: no target checked")
        return 0
    print("\nevery target met" if ok else "\nNOT every target met (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
