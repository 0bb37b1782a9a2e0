"""Chat cache benchmark: repeated conversations, with the result cache on and off.

    python benchmarks/chat_bench.py [--duration 10] [--connections 16] [--pool 32]

Starts two tokserve servers on loopback with the same settings but the result cache
(``TOKSERVE_CACHE_MAX_ENTRIES=0`` for the second), and drives both with the same load:
``/render_chat`` and chat ``/count`` bodies drawn round-robin from a pool of
conversations (system prompt, a few turns, tools on some), as a serving gateway sends
the same prompts again (retries, shared system prompts, agents re-rendering a turn).
One tokenizer with a template that reads the date (gpt-oss, o200k_harmony) and one
without (deepseek-v4). Load by ``wrk`` with a Lua script when installed (``apt-get
install wrk``), else an asyncio httpx client. Prints req/s, p50/p99 and the ratio.
Timing lives here, never in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_bench import LUA_DONE, REPO, free_port, wrk_stats  # noqa: E402  (same directory)

LUA = textwrap.dedent('''
    local bodies = {}
    local n = 0
    for line in io.lines("__FILE__") do n = n + 1; bodies[n] = line end
    local counter = 0
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    request = function()
      counter = counter + 1
      return wrk.format(nil, "__PATH__", nil, bodies[(counter % n) + 1])
    end
''') + LUA_DONE

TOOL = {"type": "function", "function": {
    "name": "search_orders", "description": "Find a customer's orders.",
    "parameters": {"type": "object", "properties": {
        "customer": {"type": "string", "description": "Customer id"},
        "status": {"type": "string", "enum": ["open", "shipped", "returned"]}},
        "required": ["customer"]}}}


def conversations(pool: int, tokenizer: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    system = ("You are the support assistant of an online shop. Answer briefly, cite order "
              "numbers, never invent a policy. " * 4)
    bodies = []
    for i in range(pool):
        messages = [{"role": "system", "content": system}]
        for turn in range(rng.randint(1, 4)):
            messages.append({"role": "user", "content": f"Customer {i}: where is order "
                                                        f"{1000 + turn}? It was due on Monday."})
            messages.append({"role": "assistant", "content": "Order {0} left the warehouse "
                             "yesterday and should arrive within two days.".format(1000 + turn)})
        messages.append({"role": "user", "content": f"Thanks. Anything else for customer {i}?"})
        body = {"tokenizer": tokenizer, "messages": messages, "add_generation_prompt": True}
        if i % 3 == 0:
            body["tools"] = [TOOL]
        bodies.append(body)
    return bodies


def run_wrk(url: str, path: str, bodies: list[dict], duration: int, connections: int,
            workdir: Path) -> dict:
    data = workdir / "bodies.jsonl"
    data.write_text("\n".join(json.dumps(b, ensure_ascii=True) for b in bodies))
    script = workdir / "chat.lua"
    script.write_text(LUA.replace("__FILE__", str(data)).replace("__PATH__", path))
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--timeout",
                          "10s", "-s", str(script), url],
                         capture_output=True, text=True, check=True).stdout
    return wrk_stats(out)


async def run_python(url: str, path: str, bodies: list[dict], duration: int,
                     connections: int) -> dict:
    import httpx

    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + duration

    async def worker(wid: int, client: httpx.AsyncClient) -> None:
        nonlocal errors
        i = wid
        while time.perf_counter() < stop:
            i += connections
            t0 = time.perf_counter()
            r = await client.post(path, json=bodies[i % len(bodies)])
            latencies.append(time.perf_counter() - t0)
            errors += r.status_code != 200

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w, client) for w in range(connections)))
        elapsed = time.perf_counter() - t0
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa
    return {"rps": len(latencies) / elapsed, "p50_ms": pick(0.5), "p99_ms": pick(0.99),
            "errors": errors}


def wait_ready(url: str, proc: subprocess.Popen) -> None:
    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url} exited")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not start")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--pool", type=int, default=32, help="distinct conversations")
    ap.add_argument("--client", choices=["auto", "wrk", "python"], default="auto")
    args = ap.parse_args()
    use_wrk = args.client == "wrk" or (args.client == "auto" and shutil.which("wrk"))
    workdir = Path(tempfile.mkdtemp(prefix="tokserve-chat-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKSERVE_")}
    env["TOKSERVE_LOG_LEVEL"] = "warning"
    servers, procs = {}, []
    for name, extra in (("cache on", {}), ("cache off", {"TOKSERVE_CACHE_MAX_ENTRIES": "0"})):
        port = free_port()
        servers[name] = f"http://127.0.0.1:{port}"
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tokserve.service", "serve", "--port", str(port)],
            cwd=REPO, env={**env, **extra}))
    try:
        for url, proc in zip(servers.values(), procs):
            wait_ready(url, proc)
        print(f"load: {'wrk' if use_wrk else 'python httpx client'}, {args.connections} "
              f"connections, {args.duration}s per run, {args.pool} conversations per pool, "
              f"1 worker per server, {os.cpu_count()} CPUs\n")
        header = f"{'scenario':<32} {'server':<10} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} " \
                 f"{'errors':>6}"
        print(header)
        print("-" * len(header))
        ratios = []
        for tokenizer in ("o200k_harmony", "deepseek-v4"):
            bodies = conversations(args.pool, tokenizer, seed=7)
            for path in ("/render_chat", "/count"):
                scenario = f"{path} {tokenizer}"
                results = {}
                for name, url in servers.items():
                    if use_wrk:
                        res = run_wrk(url, path, bodies, args.duration, args.connections,
                                      workdir)
                    else:
                        res = asyncio.run(run_python(url, path, bodies, args.duration,
                                                     args.connections))
                    results[name] = res
                    print(f"{scenario:<32} {name:<10} {res['rps']:>9.0f} {res['p50_ms']:>8.2f} "
                          f"{res['p99_ms']:>8.2f} {res['errors']:>6}", flush=True)
                ratios.append((scenario, results["cache on"]["rps"] /
                               results["cache off"]["rps"]))
        print("\nreq/s with the chat cache / without:")
        for scenario, ratio in ratios:
            print(f"  {scenario:<32} x{ratio:.1f}")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
