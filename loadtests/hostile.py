"""Hostile requests against a real server: each answered and bounded, the memory given back.

    python loadtests/hostile.py [--workers 1] [--rounds 2]

Starts ``tokserve serve`` on a free loopback port, then sends each probe ``--rounds`` times
while a thread asks ``/healthz`` every 50 ms, and prints per probe: the status, the time
to the answer, the worst ``/healthz`` latency meanwhile, and every worker's RSS growth
over its baseline once the answer is in (issue 33's bounds: ``/healthz`` within 0.5 s,
RSS back within 64 MiB). The probes are the bodies issue 33 named: wrong-typed id lists
of 10^6 items on ``/decode`` and the compat detokenize routes (12.6 MiB on vLLM's), a
16,000-message chat rendered with ``reserved_literals: "escape"`` (600 kB), and
too-long prompts on the compat routes. Timing lives here, never in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

LITERAL = "<｜end▁of▁sentence｜>"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _workers(pid: int) -> list[int]:
    """The server's worker processes (itself, with one worker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children] or [pid]


def _probes() -> list[tuple[str, str, bytes]]:
    chat = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} {LITERAL}"}
            for i in range(16_000)]
    return [
        ("ids: 10^6 strings", "/decode", json.dumps({"ids": ["x"] * 10**6}).encode()),
        ("batch_ids: 10^3 x 10^3 strings", "/decode",
         json.dumps({"batch_ids": [["x"] * 1000] * 1000}).encode()),
        ("texts: 10^6 ints", "/encode", json.dumps({"texts": [1] * 10**6}).encode()),
        ("vLLM detokenize 12.6 MiB", "/compat/vllm/detokenize",
         json.dumps({"tokens": ["x"] * 2_600_000}).encode()),
        ("SGLang detokenize 10^6", "/compat/sglang/detokenize",
         json.dumps({"tokens": ["x"] * 10**6}).encode()),
        ("chat 16,000 messages, escape", "/render_chat",
         json.dumps({"tokenizer": "deepseek-v4", "messages": chat,
                     "reserved_literals": "escape"}).encode()),
        ("vLLM chat 16,000 messages", "/compat/vllm/tokenize",
         json.dumps({"model": "deepseek-v4", "messages": chat}).encode()),
        ("llama.cpp prompt 4,000,001 chars", "/compat/llamacpp/tokenize",
         json.dumps({"content": "a" * 4_000_001}).encode()),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tempfile.TemporaryFile()
    server = subprocess.Popen([sys.executable, "-m", "tokserve.service", "serve", "--port",
                               str(port), "--workers", str(args.workers)],
                              stdout=log, stderr=log, cwd=tempfile.gettempdir(),
                              env={**os.environ, "TOKSERVE_LOG_LEVEL": "warning"})
    client = httpx.Client(base_url=url, timeout=120)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if client.get("/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print("server did not become ready", file=sys.stderr)
                return 1
            time.sleep(0.2)
        for _ in range(4):  # warm every worker: imports, threads, caches
            client.post("/decode", json={"ids": [1, 2, 3]})
        time.sleep(1)
        workers = _workers(server.pid)
        baseline = {w: _rss_mib(w) for w in workers}
        print(f"{args.workers} worker(s), baseline RSS "
              + ", ".join(f"{v:.0f}" for v in baseline.values()) + " MiB")
        print(f"{'probe':34} {'status':>6} {'answer s':>9} {'healthz max s':>14} "
              f"{'RSS growth MiB (max over workers)':>34}")
        for name, path, body in _probes():
            for _ in range(args.rounds):
                worst = [0.0]
                stop = threading.Event()

                def ping() -> None:
                    with httpx.Client(base_url=url, timeout=60) as c:
                        while not stop.is_set():
                            t = time.monotonic()
                            c.get("/healthz")
                            worst[0] = max(worst[0], time.monotonic() - t)
                            stop.wait(0.05)

                pinger = threading.Thread(target=ping)
                pinger.start()
                t = time.monotonic()
                r = client.post(path, content=body, headers={"content-type": "application/json"})
                took = time.monotonic() - t
                time.sleep(0.5)
                stop.set()
                pinger.join()
                grown = max(_rss_mib(w) - baseline[w] for w in workers)
                print(f"{name:34} {r.status_code:>6} {took:>9.2f} {worst[0]:>14.3f} "
                      f"{grown:>34.0f}")
        return 0
    finally:
        server.terminate()
        server.wait(60)


if __name__ == "__main__":
    sys.exit(main())
