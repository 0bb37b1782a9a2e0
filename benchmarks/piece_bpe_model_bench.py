"""Piece BPE model benchmark: ours vs tokenizers' own BPE model, model stage only, offline.

    python benchmarks/piece_bpe_model_bench.py [--mb 0.5] [--repeat 3]
                                               [--tokenizers llama2,gemma3] [--hostile]

What is timed is the MODEL alone: each document is normalized first (outside the
clock) with the reference's own normalizer, as the pipeline hands the model the whole
normalized text as one sequence (these files have no pre-tokenizer that splits). Ours
is ``PieceBpeModel.encode`` on its UTF-8; the reference is
``tokenizers.Tokenizer.from_file(f).model.tokenize`` on the same str (it returns Token
objects, so its time includes building them: it is the reference's Python API). The
corpus is engine_bench.py's (english, code, cjk, other_scripts, emoji from what is on
disk), ``--mb`` MB per slice. Single thread, CPU time of the encoding thread, best of
``--repeat`` rounds:

* cold: our chunk cache cleared before each round and a freshly loaded reference
  (whose per-sequence cache then holds nothing: documents never repeat in a round);
* warm: a second pass right after (our cache has seen every chunk).

ids are checked equal to the reference's on every document first (differences are
printed, never hidden). ``--hostile``: one sequence of 10^4, 10^5, 10^6 characters with
no "▁" (one repeated letter, random lowercase, random CJK, random emoji), ours vs the
reference (best of 3 each), with the growth t(10^6) / t(10^5) (target: ours <= the
reference's time, growth <= 15).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "tests")]

from engine_bench import build_slices  # noqa: E402  (the shared corpus)
from shared_files import find_shared  # noqa: E402

from tokserve.models.piece_bpe._piece_bpe import from_model  # noqa: E402

NAMES = ["llama2", "tinyllama", "phi3-mini", "mistral-v0.1", "mistral-v0.3", "gemma", "gemma3",
         "yi"]


def _load(name: str):
    import tokenizers

    path = find_shared(f"artifacts/{name}/tokenizer.json")
    if path is None:
        return None
    start = time.process_time()
    with open(path, encoding="utf-8") as fh:
        model = json.load(fh)["model"]
    json_s = time.process_time() - start
    start = time.process_time()
    ours = from_model(model, path)
    ours_s = time.process_time() - start
    start = time.process_time()
    ref = tokenizers.Tokenizer.from_file(str(path))
    ref_s = time.process_time() - start
    print(f"{name}: load CPU s: ours {ours_s:.3f} (after json.load {json_s:.3f}), "
          f"tokenizers {ref_s:.3f} (whole file); chunking {ours.chunking}")
    return path, ours, ref


def _timed(fn, docs) -> float:
    start = time.thread_time()
    for d in docs:
        fn(d)
    return time.thread_time() - start


def bench(name: str, slices: dict[str, list[str]], repeat: int) -> None:
    import tokenizers

    loaded = _load(name)
    if loaded is None:
        print(f"{name}: skipped (no ../shared/artifacts/{name}/tokenizer.json)")
        return
    path, ours, ref = loaded
    norm = ref.normalizer
    rows = []
    totals = [0, 0.0, 0.0, 0.0]
    for label, docs in slices.items():
        texts = [norm.normalize_str(d) if norm else d for d in docs]
        datas = [t.encode("utf-8") for t in texts]
        size = sum(map(len, datas))
        bad = sum(ours.encode(b) != [t.id for t in ref.model.tokenize(s)]
                  for b, s in zip(datas, texts))
        cold = warm = theirs = float("inf")
        for _ in range(repeat):
            ours.clear_cache()
            cold = min(cold, _timed(ours.encode, datas))
            warm = min(warm, _timed(ours.encode, datas))
            fresh = tokenizers.Tokenizer.from_file(str(path)).model
            theirs = min(theirs, _timed(fresh.tokenize, texts))
        rows.append((label, size, cold, warm, theirs, bad))
        for k, v in enumerate((size, cold, warm, theirs)):
            totals[k] += v
    print(f"  {'slice':<14}{'MB':>6}{'ours cold':>11}{'ours warm':>11}{'tokenizers':>12}"
          f"{'cold x':>8}{'warm x':>8}  ids")
    for label, size, cold, warm, theirs, bad in rows + [("all", *totals, 0)]:
        mb = size / 1e6
        print(f"  {label:<14}{mb:>6.2f}{mb / cold:>11.1f}{mb / warm:>11.1f}{mb / theirs:>12.2f}"
              f"{theirs / cold:>8.1f}{theirs / warm:>8.1f}  "
              + ("" if label == "all" else "equal" if not bad else f"{bad} DIFFERENT"))
    print("  (MB/s of normalized UTF-8, one thread, CPU time; x = tokenizers' time / ours)")


def hostile_texts(n: int) -> dict[str, str]:
    rng = random.Random(n)
    emoji = [chr(c) for c in range(0x1F600, 0x1F650)] + [chr(c) for c in range(0x1F300, 0x1F3F0)]
    return {
        "one letter": "a" * n,
        "random lowercase": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n)),
        "random CJK": "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(n)),
        "random emoji": "".join(rng.choice(emoji) for _ in range(n)),
    }


def bench_hostile(name: str) -> None:
    import tokenizers

    loaded = _load(name)
    if loaded is None:
        return
    path, ours, _ = loaded
    times: dict[str, dict[int, tuple[float, float]]] = {}
    for n in (10**4, 10**5, 10**6):
        for label, text in hostile_texts(n).items():
            data = text.encode("utf-8")
            t_ours = t_ref = float("inf")
            for _ in range(3):  # best of 3: a 10^4 run takes milliseconds
                ours.clear_cache()
                t_ours = min(t_ours, _timed(ours.encode, [data]))
                fresh = tokenizers.Tokenizer.from_file(str(path)).model
                start = time.thread_time()
                ref_ids = [t.id for t in fresh.tokenize(text)]
                t_ref = min(t_ref, time.thread_time() - start)
            same = ours.encode(data) == ref_ids
            times.setdefault(label, {})[n] = (t_ours, t_ref)
            print(f"  {label:<17} 10^{len(str(n)) - 1}: ours {t_ours * 1e3:9.1f} ms, "
                  f"tokenizers {t_ref * 1e3:9.1f} ms  {'equal' if same else 'DIFFERENT'}")
    for label, by_n in times.items():
        g_ours = by_n[10**6][0] / max(by_n[10**5][0], 1e-9)
        g_ref = by_n[10**6][1] / max(by_n[10**5][1], 1e-9)
        print(f"  growth 10^5 -> 10^6, {label}: ours x{g_ours:.1f}, tokenizers x{g_ref:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=0.5, help="MB of UTF-8 per corpus slice")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokenizers", default="llama2,gemma3",
                        help=f"comma-separated, of {','.join(NAMES)}")
    parser.add_argument("--hostile", action="store_true", help="only the hostile inputs")
    args = parser.parse_args()
    names = [n for n in args.tokenizers.split(",") if n]
    if args.hostile:
        for name in names:
            bench_hostile(name)
        return
    slices = build_slices(args.mb)
    for name in names:
        bench(name, slices, args.repeat)


if __name__ == "__main__":
    main()
