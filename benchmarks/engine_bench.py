"""Engine benchmark: ours vs tiktoken, tokenizers and quicktok-v1, in one run, offline.

    python benchmarks/engine_bench.py [--mb 1.0] [--repeat 3] [--tokenizers o200k_base,cl100k_base]
                                      [--worst] [--skip-worst] [--skip-load]

Corpus (built from what is on disk, no network; see benchmarks/README.md):

* ``english``: docstrings of the Python standard library plus the licence texts in
  /usr/share/common-licenses (when present);
* ``code``: Python standard library source files;
* ``cjk``: translated messages (``msgstr``) of the system's zh_CN, zh_TW, ja and ko
  gettext catalogs (/usr/share/locale), else generated CJK text;
* ``other_scripts``: the same from ru, uk, el, ar, fa, he, hi, bn, ta, th, ka, hy catalogs;
* ``emoji``: seeded emoji text (ZWJ sequences, skin tones, flags) between short words.

Each slice is cut to ``--mb`` MB of UTF-8 and kept as its natural documents. For every
tokenizer it prints single-thread MB/s cold (fresh instances, every document encoded
once: what a stream of new text costs, the headline figure), unseen (fresh instances
that first encoded half of each slice, timed on the other half: a running service
meeting new documents) and warm (a loop of
``encode`` over the documents, best of ``--repeat``, after the exactness pass: our piece
cache has seen every piece, as in a service answering repeated text), and 2-thread MB/s
(each library's own batch API with 2 threads, warm), per slice and overall, with ratios
to tiktoken, after checking that every implementation's ids are identical to the
reference on every document (differences are printed, never hidden).

Then the hostile inputs (``worst_case.py``; ``--worst`` runs only those: one piece of
10^4, 10^5 and 10^6 characters of each kind, ours vs quicktok vs tiktoken; targets: ours
no slower than quicktok, ``t(10^6) / t(10^5) <= 15``), and load time plus resident memory (RSS
delta, each measured in a fresh subprocess) of o200k_base for ours and tiktoken.
Policies: ours runs ``special_tokens="text"`` (literals are ordinary text), the same work as
tiktoken's and quicktok's ``encode_ordinary``; tokenizers runs its default ``encode``
(``add_special_tokens=False``), which is the reference for deepseek-v4.
"""

from __future__ import annotations

import argparse
import ast
import gettext
import glob
import json
import os
import random
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from conformance.references import (  # noqa: E402  (repo paths first)
    ARTIFACTS,
    TOKENIZER_FILES,
    build_tiktoken_reference,
    build_tokenizers_reference,
)

import tokserve  # noqa: E402

QUICKTOK_NAMES = {"cl100k_base": "cl100k_base", "o200k_base": "o200k_base", "llama3": "llama3",
                  "qwen": "qwen3"}

# ============================================================================ corpus


def _cut(docs: list[str], limit: int) -> list[str]:
    out, size = [], 0
    for doc in docs:
        if not doc.strip():
            continue
        raw = doc.encode("utf-8")
        if size + len(raw) > limit:
            rest = raw[: limit - size].decode("utf-8", "ignore")
            if rest:
                out.append(rest)
            break
        out.append(doc)
        size += len(raw)
    return out


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py"))
    files += sorted(p for p in root.glob("*/*.py") if "test" not in p.parts[-2])
    return files


def english_docs(limit: int) -> list[str]:
    docs: list[str] = []
    for lic in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(lic):
            docs.append(Path(lic).read_text("utf-8", "ignore"))
    for path in _stdlib_files():
        try:
            tree = ast.parse(path.read_text("utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 80:
                    docs.append(doc)
    random.Random(1).shuffle(docs)
    return _cut(docs, limit)


def code_docs(limit: int) -> list[str]:
    docs = []
    for path in _stdlib_files():
        try:
            docs.append(path.read_text("utf-8"))
        except UnicodeDecodeError:
            continue
    random.Random(2).shuffle(docs)
    chunks = [d[k:k + 8000] for d in docs for k in range(0, len(d), 8000)]
    return _cut(chunks, limit)


def locale_docs(langs: list[str], limit: int) -> list[str]:
    """Translated messages from the system's gettext catalogs, ~4 KB per document."""
    messages: list[str] = []
    for lang in langs:
        for mo in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
            try:
                with open(mo, "rb") as fh:
                    catalog = gettext.GNUTranslations(fh)._catalog  # noqa: SLF001
            except Exception:  # noqa: BLE001 - a broken catalog is just skipped
                continue
            for value in catalog.values():
                if isinstance(value, str) and value and not value.startswith("Project-Id"):
                    messages.append(value)
    random.Random(3).shuffle(messages)
    docs, current = [], []
    for m in messages:
        current.append(m)
        if sum(map(len, current)) > 4000:
            docs.append("\n".join(current))
            current = []
    if current:
        docs.append("\n".join(current))
    return _cut(docs, limit)


def generated_cjk(limit: int) -> list[str]:
    rng = random.Random(4)
    docs = []
    for _ in range(limit // 3000 + 1):
        docs.append("".join(chr(rng.randint(0x4E00, 0x9FA5)) if rng.random() < 0.9
                            else rng.choice("，。、！？ 1") for _ in range(1000)))
    return _cut(docs, limit)


def emoji_docs(limit: int) -> list[str]:
    rng = random.Random(5)
    seqs = ["😀", "👍🏽", "❤️", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈", "🇺🇸", "🇯🇵", "1️⃣", "🎉", "🔥", "🙏🏿",
            "🧑‍🤝‍🧑", "😂", "🤷🏻‍♂️", "🐈‍⬛", "✨", "🚀", "🥲", "🫠"]
    words = ["lol", "great", "see you", "ok", "happy birthday", "!!!", "thanks", "wow", "ja", "好"]
    docs = []
    for _ in range(limit // 2000 + 1):
        parts = []
        for _ in range(300):
            parts.append(rng.choice(seqs) * rng.randint(1, 3) if rng.random() < 0.6
                         else rng.choice(words))
            parts.append(rng.choice([" ", "", "\n", " "]))
        docs.append("".join(parts))
    return _cut(docs, limit)


def build_slices(mb: float) -> dict[str, list[str]]:
    limit = int(mb * 1_000_000)
    cjk = locale_docs(["zh_CN", "zh_TW", "ja", "ko"], limit)
    other = locale_docs(["ru", "uk", "el", "ar", "fa", "he", "hi", "bn", "ta", "th", "ka", "hy"],
                        limit)
    return {
        "english": english_docs(limit),
        "code": code_docs(limit),
        "cjk": cjk if sum(len(d.encode()) for d in cjk) > limit // 2 else generated_cjk(limit),
        "other_scripts": other,
        "emoji": emoji_docs(limit),
    }


# ============================================================================ implementations


class Impl:
    """One implementation of one tokenizer: single encode and a 2-thread batch."""

    def __init__(self, label: str, encode, batch) -> None:
        self.label, self.encode, self.batch = label, encode, batch


def implementations(name: str, quiet: bool = False) -> tuple[list[Impl], str]:
    """[ours, reference, peers...] and the reference's label."""
    relative, preset = TOKENIZER_FILES[name]
    path = ARTIFACTS / relative
    ours = tokserve.load(str(path), preset=preset) if preset else tokserve.load(str(path))
    impls = [Impl("ours", lambda t: ours.encode(t, special_tokens="text"),
                  lambda ts: ours.encode_batch(ts, special_tokens="text", num_threads=2))]
    if preset:
        enc = build_tiktoken_reference(name, path).encoding
        impls.append(Impl("tiktoken", enc.encode_ordinary,
                          lambda ts: enc.encode_ordinary_batch(ts, num_threads=2)))
        try:
            import quicktok

            # a new instance, not get_encoding's: that returns one cached object per
            # name, whose piece cache would be warm in every "cold" round after the first
            qt = quicktok.Tokenizer(QUICKTOK_NAMES[name], "")
            impls.append(Impl("quicktok", qt.encode_ordinary, lambda ts: _qt_batch(qt, ts)))
        except Exception as exc:  # noqa: BLE001 - a missing peer is reported, not fatal
            if not quiet:
                print(f"  (quicktok unavailable for {name}: {exc})")
        return impls, "tiktoken"
    ref = build_tokenizers_reference(name, path)
    full = ref.full
    impls.append(Impl("tokenizers", lambda t: full.encode(t, add_special_tokens=False).ids,
                      lambda ts: [e.ids for e in full.encode_batch(ts, add_special_tokens=False)]))
    return impls, "tokenizers"


def _qt_batch(qt, texts: list[str]) -> list[list[int]]:
    tokens, offsets = qt.encode_batch(texts, 2)
    return [tokens[offsets[i]:offsets[i + 1]] for i in range(len(texts))]


def _turns(make, docs: list[str], rounds: int, fresh: bool, warmup: list[str] = ()) -> dict[str, float]:
    """Best CPU seconds of each implementation over ``docs`` in ``rounds`` rounds, the
    implementations taking turns (the first one rotating each round) so that they share
    whatever else the machine is doing. ``make()`` gives the implementations: called
    once, or each round for ``fresh`` instances (whose caches have seen nothing but
    ``warmup``)."""
    impls = make()
    best = {i.label: float("inf") for i in impls}
    for r in range(rounds):
        if fresh and r:
            impls = make()
        for impl in impls[r % len(impls):] + impls[:r % len(impls)]:
            if fresh:
                impl.encode("warm up the code paths, not the cache")
                for d in warmup:
                    impl.encode(d)
            start = time.thread_time()
            for d in docs:
                impl.encode(d)
            best[impl.label] = min(best[impl.label], time.thread_time() - start)
    return best


def bench_throughput(names: list[str], slices: dict[str, list[str]], repeat: int) -> None:
    sizes = {s: sum(len(d.encode("utf-8")) for d in docs) for s, docs in slices.items()}
    print("corpus: " + ", ".join(f"{s} {sizes[s] / 1e6:.2f} MB ({len(slices[s])} docs)"
                                 for s in slices) + "; 'mixed (all)' is all of it")
    print("best of --repeat rounds, the implementations taking turns per slice; 1 thread: CPU "
          "time of the encoding thread\n(cold: fresh instances each round); 2 threads: wall "
          "time of each library's batch API")
    for name in names:
        if not (ARTIFACTS / TOKENIZER_FILES[name][0]).is_file():
            print(f"\n== {name}: skipped, missing {ARTIFACTS / TOKENIZER_FILES[name][0]}")
            continue
        impls, ref_label = implementations(name)
        ref = next(i for i in impls if i.label == ref_label)
        qt = any(i.label == "quicktok" for i in impls)
        print(f"\n== {name} (reference: {ref_label}); MB/s, ratio = x {ref_label}"
              + ("; ours/qt = x quicktok" if qt else ""))
        header = f"  {'slice':14}" + "".join(f"{i.label:>11}" for i in impls)
        ratios = [i for i in impls if i is not ref]
        header += "".join(f"{i.label + '/' + ref_label[:2]:>14}" for i in ratios)
        header += f"{'ours/qt':>10}" if qt else ""
        # cold first: fresh instances per slice, every document encoded once, so no
        # cache of ours (or of a peer) has seen the text before it is timed; then
        # "unseen": fresh instances that encoded the first half of each slice, timed on
        # the second half (a running service meeting new documents)
        for title, warmup in (("cold (fresh instances, each document once)", False),
                              ("unseen (caches filled on the slice's first half, "
                               "timed on its second half)", True)):
            print(f"  -- 1 thread, {title}")
            print(header)
            totals = {i.label: 0.0 for i in impls}
            total_size = 0
            for s, docs in slices.items():
                timed = docs[len(docs) // 2:] if warmup else docs
                size = sum(len(d.encode("utf-8")) for d in timed)
                total_size += size
                row = _turns(lambda: implementations(name, quiet=True)[0], timed, repeat, True,
                             docs[:len(docs) // 2] if warmup else ())
                for label, t in row.items():
                    totals[label] += t
                _print_row(s, row, impls, ref, size)
            _print_row("mixed (all)", totals, impls, ref, total_size)
        # exactness first: every implementation against the reference, every document
        for impl in impls:
            if impl is ref:
                continue
            bad = [(s, k) for s, docs in slices.items() for k, d in enumerate(docs)
                   if list(impl.encode(d)) != list(ref.encode(d))]
            bad_batch = sum(1 for s, docs in slices.items()
                            for a, b in zip(impl.batch(docs), map(ref.encode, docs))
                            if list(a) != list(b))
            verdict = "identical" if not bad and not bad_batch else (
                f"DIFFERENT on {len(bad)} docs (batch: {bad_batch}); first: {bad[:3]}")
            print(f"  ids {impl.label} vs {ref_label}: {verdict}")
        print("  -- 1 thread, warm (after the exactness pass)")
        print(header)
        totals = {i.label: 0.0 for i in impls}
        for s, docs in slices.items():
            row = _turns(lambda: impls, docs, repeat, False)
            for label, t in row.items():
                totals[label] += t
            _print_row(s, row, impls, ref, sizes[s])
        _print_row("mixed (all)", totals, impls, ref, sum(sizes.values()))
        print("  -- 2 threads, warm (each library's batch API)")
        print(header)
        totals = {i.label: 0.0 for i in impls}
        for s, docs in slices.items():
            row = {i.label: float("inf") for i in impls}
            for r in range(repeat):
                for impl in impls[r % len(impls):] + impls[:r % len(impls)]:
                    start = time.perf_counter()
                    impl.batch(docs)
                    row[impl.label] = min(row[impl.label], time.perf_counter() - start)
            for label, t in row.items():
                totals[label] += t
            _print_row(s, row, impls, ref, sizes[s])
        _print_row("mixed (all)", totals, impls, ref, sum(sizes.values()))


def _print_row(label: str, times: dict[str, float], impls: list[Impl], ref: Impl, size: int) -> None:
    line = f"  {label:14}" + "".join(f"{size / 1e6 / times[i.label]:11.1f}" for i in impls)
    line += "".join(f"{times[ref.label] / times[i.label]:13.2f}x" for i in impls if i is not ref)
    if "quicktok" in times:
        line += f"{times['quicktok'] / times['ours']:9.2f}x"
    print(line)


def bench_worst(names: list[str], reference: bool) -> bool:
    """The hostile-input table (``worst_case.py``) for the tiktoken-format tokenizers."""
    import worst_case

    def load_ours(name: str):
        relative, preset = TOKENIZER_FILES[name]
        return tokserve.load(str(ARTIFACTS / relative), preset=preset)

    def load_quicktok(name: str):
        try:
            import quicktok

            return quicktok.get_encoding(QUICKTOK_NAMES[name])
        except Exception as exc:  # noqa: BLE001 - a missing peer is reported, not fatal
            print(f"  (quicktok unavailable for {name}: {exc})")
            return None

    paths = [str(REPO), str(REPO / "tests"), str(REPO / "benchmarks")]
    chosen = [n for n in names if TOKENIZER_FILES[n][1] and (ARTIFACTS / TOKENIZER_FILES[n][0]).is_file()]
    return worst_case.run(chosen, load_ours, load_quicktok, paths, reference)


_LOAD = """
import json, sys, time
sys.path[:0] = {paths!r}
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) * 1024
{imports}
r0 = rss(); t0 = time.perf_counter()
{load}
t1 = time.perf_counter(); r1 = rss()
assert obj.encode({probe!r}) is not None
print(json.dumps({{"seconds": t1 - t0, "rss": r1 - r0}}))
"""

_LOADERS = {
    "ours (rank file + preset)": (
        "import tokserve",
        "obj = tokserve.load({path!r}, preset='o200k_base')"),
    "ours (bundled artifact dir, sha256 verified)": (
        "import tokserve",
        "obj = tokserve.load('o200k_base')"),
    "ours (the same, tables mapped from their file)": (
        "import tokserve",
        "obj = tokserve.load('o200k_base', tables={tables!r})"),
    "tiktoken (parse rank file + Encoding)": (
        "import tiktoken\nfrom conformance.references import build_tiktoken_reference\n"
        "from pathlib import Path",
        "obj = build_tiktoken_reference('o200k_base', Path({path!r})).encoding"),
}


def bench_load(runs: int) -> None:
    import tempfile

    path = str(ARTIFACTS / TOKENIZER_FILES["o200k_base"][0])
    tables = tempfile.mkdtemp(prefix="tokserve-tables-")
    tokserve.load("o200k_base", tables=tables)  # the file the mapped loads find
    print(f"\n== load o200k_base (fresh subprocess each, median of {runs}; RSS delta of the load)")
    for label, (imports, load) in _LOADERS.items():
        samples = []
        for _ in range(runs):
            code = _LOAD.format(paths=[str(REPO), str(REPO / "tests")], imports=imports,
                                load=load.format(path=path, tables=tables), probe="hello world")
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"  {label}: failed: {proc.stderr.strip()[-300:]}")
                break
            samples.append(json.loads(proc.stdout))
        if samples:
            samples.sort(key=lambda s: s["seconds"])
            mid = samples[len(samples) // 2]
            print(f"  {label:46} {mid['seconds']:7.3f} s   RSS +{mid['rss'] / 2**20:7.1f} MiB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="MB of UTF-8 per corpus slice")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokenizers", default="o200k_base,cl100k_base,llama3,qwen,deepseek-v4")
    parser.add_argument("--worst", action="store_true",
                        help="only the hostile-input table (one long piece per kind)")
    parser.add_argument("--skip-worst", action="store_true")
    parser.add_argument("--no-reference-worst", action="store_true",
                        help="do not time tiktoken on the hostile inputs")
    parser.add_argument("--skip-load", action="store_true")
    args = parser.parse_args(argv)
    names = [n for n in args.tokenizers.split(",") if n]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    worst_names = [n for n in names if n in ("o200k_base", "cl100k_base")] or names[:1]
    if args.worst:
        bench_worst(worst_names, not args.no_reference_worst)
        return
    bench_throughput(names, build_slices(args.mb), args.repeat)
    if not args.skip_worst:
        bench_worst(worst_names, not args.no_reference_worst)
    if not args.skip_load:
        bench_load(3)


if __name__ == "__main__":
    main()
