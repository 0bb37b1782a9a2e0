"""Soak run: the realistic mix (locustfile.py) against one server for a long while,
printing errors, p50/p99 and every worker's RSS over time.

    python loadtests/soak.py                      # 10 minutes, 2 workers, 16 users
    python loadtests/soak.py --minutes 1 --users 8 --workers 1
    python loadtests/soak.py --url http://127.0.0.1:8000   # a server already running

Starts ``tokserve serve --workers N`` on a free loopback port (unless ``--url``), runs
locust headless (``pip install -e ".[load]"``) for the duration, and every
``--every`` seconds prints one row: elapsed time, requests and failures so far, the
p50/p99 of the last interval (locust's current percentiles), and the RSS of each worker
read from the server's own /metrics (``process_resident_memory_bytes{pid}``).
The closing lines give the totals, the RSS at start and end of each worker, and the
exit status: 1 if any request failed (a wrong body counts as a failure too).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_by_pid(url: str) -> dict[str, float]:
    """Resident memory (MB) of every worker, from the server's /metrics."""
    with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as c:
        text = c.get(url + "/metrics").text
    return {pid: float(v) / 2**20 for pid, v in re.findall(
        r'process_resident_memory_bytes\{pid="(\d+)"\} (\S+)', text)}


def last_row(history: Path) -> dict[str, str] | None:
    """The newest "Aggregated" row of locust's stats history CSV."""
    if not history.is_file():
        return None
    rows = [r for r in csv.DictReader(history.open()) if r.get("Name") == "Aggregated"]
    return rows[-1] if rows else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--every", type=float, default=60, help="seconds between rows")
    ap.add_argument("--url", default=None, help="a running server (else one is started)")
    args = ap.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tokserve-soak-"))
    server = None
    url = args.url
    if url is None:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOKSERVE_")}
        server = subprocess.Popen(
            [sys.executable, "-m", "tokserve.service", "serve", "--port", str(port),
             "--workers", str(args.workers), "--log-level", "warning"],
            env=env, stderr=(workdir / "server.log").open("w"))
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                print((workdir / "server.log").read_text()[-2000:], file=sys.stderr)
                return 2
            time.sleep(0.2)
    seconds = int(args.minutes * 60)
    prefix = workdir / "soak"
    locust = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", str(HERE / "locustfile.py"), "--headless",
         "-H", url, "-u", str(args.users), "-r", str(max(1, args.users // 4)),
         "-t", f"{seconds}s", "--csv", str(prefix), "--csv-full-history",
         "--only-summary", "--stop-timeout", "10"],
        stdout=subprocess.DEVNULL, stderr=(workdir / "locust.log").open("w"))
    started = time.monotonic()
    first = rss_by_pid(url)
    last = first
    print(f"soak: {url}, {args.users} users, {args.minutes:g} min; rows every {args.every:g}s")
    print(f"{'elapsed':>8} {'requests':>9} {'failures':>8} {'p50 ms':>7} {'p99 ms':>7}  "
          f"RSS MB per worker pid")
    try:
        while locust.poll() is None:
            time.sleep(min(args.every, max(1.0, started + seconds + 30 - time.monotonic())))
            row = last_row(Path(f"{prefix}_stats_history.csv"))
            try:
                last = rss_by_pid(url)
            except httpx.HTTPError as exc:
                print(f"  /metrics failed: {exc!r}")
            if row is not None:
                rss = "  ".join(f"{pid}:{mb:.0f}" for pid, mb in sorted(last.items()))
                print(f"{time.monotonic() - started:>7.0f}s {row['Total Request Count']:>9} "
                      f"{row['Total Failure Count']:>8} {row['50%']:>7} {row['99%']:>7}  {rss}",
                      flush=True)
    finally:
        if locust.poll() is None:
            locust.send_signal(signal.SIGINT)
            locust.wait(60)
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
    stats = [r for r in csv.DictReader(Path(f"{prefix}_stats.csv").open())]
    total = next(r for r in stats if r["Name"] == "Aggregated")
    print(f"\ntotal: {total['Request Count']} requests, {total['Failure Count']} failures, "
          f"p50 {total['50%']} ms, p99 {total['99%']} ms, {float(total['Requests/s']):.0f} req/s")
    for r in stats:
        if r["Name"] != "Aggregated":
            print(f"  {r['Name']:<16} {r['Request Count']:>8} req  {r['Failure Count']:>4} "
                  f"fail  p50 {r['50%']:>5} ms  p99 {r['99%']:>6} ms")
    for pid in sorted(set(first) | set(last)):
        start, end = first.get(pid), last.get(pid)
        print(f"  worker {pid}: RSS start {start or float('nan'):.0f} MB, "
              f"end {end or float('nan'):.0f} MB")
    failures_file = Path(f"{prefix}_failures.csv")
    if failures_file.is_file() and failures_file.stat().st_size > 0:
        print(failures_file.read_text()[:2000])
    return 1 if int(total["Failure Count"]) else 0


if __name__ == "__main__":
    sys.exit(main())
