"""Memory across ``tokserve serve --workers N``: PSS of every process, from /proc.

    python benchmarks/worker_memory.py [--workers 1,2,4] [--tables-dir DIR]

For each N it starts ``tokserve serve --workers N`` (the bundled tokenizers) on a free
port, waits for /healthz, sends a few requests to every tokenizer, and reads ``Pss``
and ``Rss`` of the supervisor and every worker from ``/proc/<pid>/smaps_rollup``. PSS
counts a page shared by k processes as 1/k to each, so the total PSS is what the
processes cost together and its growth per added worker is what one more worker costs.
The same is measured for a worker serving no tokenizer (``--allow-empty`` with the
bundled root disabled): the Python + FastAPI floor under every worker. Linux only.

The compiled tables (``TOKSERVE_TABLES_DIR``) are built by the first run if the
directory has none; ``--tables-dir ''`` turns them off to see each worker's own copy.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

TOKENIZERS = tuple(os.environ.get("WM_TOKENIZERS", "").split(",")) if os.environ.get("WM_TOKENIZERS") else ("o200k_base", "cl100k_base", "o200k_harmony", "deepseek-v4", "mistral-v0.3",
              "phi-3-mini")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return out


def _rollup(pid: int) -> dict[str, float]:
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1]) / 1024
    return values


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(workers: int, env: dict[str, str], empty: bool = False) -> list[tuple[int, str, float, float]]:
    port = _free_port()
    cmd = [sys.executable, "-m", "tokserve.service", "serve", "--workers", str(workers),
           "--port", str(port)] + (["--allow-empty"] if empty else [])
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.time() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
                break
            except urllib.error.HTTPError:  # up (an empty service answers 503)
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"server with {workers} workers did not start")
                time.sleep(0.3)
        time.sleep(2 + workers)  # every worker loaded, not just the first to answer
        for name in () if empty else TOKENIZERS:
            for _ in range(4 * workers):
                body = json.dumps({"tokenizer": name, "text": "hello world, 日本語 " * 40})
                req = urllib.request.Request(f"http://127.0.0.1:{port}/count", data=body.encode(),
                                             headers={"content-type": "application/json"})
                urllib.request.urlopen(req, timeout=10).read()
        time.sleep(1)
        pids = [proc.pid] + [w for c in _children(proc.pid) for w in [c] + _children(c)]
        rows = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline") as f:
                    cmdline = f.read()
                role = ("tracker" if "resource_tracker" in cmdline
                        else "supervisor" if pid == proc.pid and workers > 1 else "worker")
                r = _rollup(pid)
                rows.append((pid, role, r["Rss"], r["Pss"]))
            except OSError:
                pass
        return rows
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--tables-dir", default=None, help="TOKSERVE_TABLES_DIR ('' disables)")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    if args.tables_dir is not None:
        env["TOKSERVE_TABLES_DIR"] = args.tables_dir
    counts = [int(n) for n in args.workers.split(",")]
    empty = measure(2, {**env, "TOKSERVE_BUNDLED_ARTIFACTS": ""}, empty=True)
    floor = [pss for _, role, _, pss in empty if role == "worker"]
    print(f"floor: a worker serving no tokenizer: PSS {sum(floor) / len(floor):.1f} MB")
    totals = {}
    for n in counts:
        rows = measure(n, env)
        totals[n] = sum(pss for *_, pss in rows)
        worker = [pss for _, role, _, pss in rows if role == "worker"]
        print(f"workers={n}: total PSS {totals[n]:.1f} MB; per worker PSS "
              f"{sum(worker) / len(worker):.1f} MB (RSS {max(r for _, role, r, _ in rows if role == 'worker'):.1f})")
        for pid, role, rss, pss in rows:
            print(f"    {role:10} pid {pid:7}  RSS {rss:7.1f} MB  PSS {pss:7.1f} MB")
    ns = sorted(totals)
    for a, b in zip(ns, ns[1:]):
        if a > 1:  # 1 worker runs in the supervisor's process: not comparable
            print(f"each worker from {a} to {b}: +{(totals[b] - totals[a]) / (b - a):.1f} MB PSS "
                  f"({(totals[b] - totals[a]) / (b - a) - sum(floor) / len(floor):.1f} MB above the floor)")


if __name__ == "__main__":
    main()
