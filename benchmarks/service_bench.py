"""HTTP benchmark: tokserve vs a naive FastAPI + tiktoken wrapper vs a bare ASGI app.

    python benchmarks/service_bench.py [--duration 10] [--connections 16] [--workers 1]

Starts three servers on loopback, all under the same uvicorn with the same worker count:

* ``tokserve`` (``python -m tokserve.service serve``);
* ``fastapi+tiktoken``, written to a temp file by this script: the service a team would
  write in an afternoon (FastAPI, a pydantic body model, tiktoken loaded from the same
  bundled rank file, default JSON responses, ``async def`` handlers);
* ``bare-asgi``: a plain ASGI callable that reads the whole body and answers a constant
  JSON reply: no framework, no parsing, no tokenizing. It is the ceiling the server and
  the load generator allow on this machine, and every figure is also printed as a share
  of it, so what our per-request work costs is read directly.

Each is driven with the same load by ``wrk`` (install: ``apt-get install wrk``) with a
Lua script for POST bodies, else by an asyncio httpx client.

Scenarios, each at the same concurrency:

* ``count-1k``: POST /count, ~1 KB texts;
* ``encode-10k-offsets``: POST /encode with char offsets, ~10 KB texts.

Each scenario runs ``cold`` (every request text is unique: a counter is spliced in, so
our result cache never hits) and ``warm`` (a pool of 64 texts repeats, as with system
prompts and retries; our cache answers most); targets are judged on ``cold``. Each
scenario runs ``--rounds`` times per server, interleaved, with a fresh salt in the unique
texts each round; the best round counts.

Prints req/s, p50, p99 and the server's CPU time per request (user + system, from /proc,
all its processes), then the ratios: tokserve to the wrapper, and each to the bare app,
both as req/s and as CPU per request. On a machine shared with other work req/s moves
with the neighbours' load; CPU per request of a server that is saturated does not.
Timing lives here, never in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARTIFACT = REPO / "artifacts" / "o200k_base" / "1"

BASELINE_APP = textwrap.dedent('''
    """Minimal FastAPI + tiktoken tokenization service (benchmark baseline)."""
    import json
    import tiktoken, tiktoken.load
    from fastapi import FastAPI
    from pydantic import BaseModel

    art = __ART__
    manifest = json.load(open(art + "/manifest.json"))
    enc = tiktoken.Encoding(
        manifest["name"], pat_str=manifest["pattern"],
        mergeable_ranks=tiktoken.load.load_tiktoken_bpe(art + "/" + manifest["tokenizer_file"]),
        special_tokens=manifest["special_tokens"],
    )
    app = FastAPI()

    class Req(BaseModel):
        text: str
        return_offsets: bool = False

    @app.post("/count")
    async def count(req: Req):
        return {"count": len(enc.encode(req.text))}

    @app.post("/encode")
    async def encode(req: Req):
        ids = enc.encode(req.text)
        out = {"ids": ids, "count": len(ids)}
        if req.return_offsets:
            _, starts = enc.decode_with_offsets(ids)
            ends = starts[1:] + [len(req.text)]
            out["offsets"] = [[s, e] for s, e in zip(starts, ends)]
        return out
''')

BARE_APP = textwrap.dedent('''
    """Bare ASGI app: reads the body, answers a constant JSON reply (benchmark ceiling)."""
    REPLY = b\'{"tokenizer":"o200k_base@1","count":0}\'
    HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(REPLY))]

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        await send({"type": "http.response.body", "body": REPLY})
''')

WORDS = ("the of and to in is that for it as with was on be by this are from at or an have "
         "not which but all they their more one had can will would been about there when "
         "tokenizer service latency billing gateway prompt model ids offsets version cache "
         "naïve café résumé Zürich 東京 데이터 данные مرحبا 😀 🚀 1234 3.14159 2026-11-22 "
         "def return None {\"key\": [1, 2, 3]} http://example.com/a?b=c #include <stdio.h>").split()


def make_texts(n: int, size: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words: list[str] = []
        length = 0
        while length < size:
            w = rng.choice(WORDS)
            if rng.random() < 0.08:
                w += rng.choice([".", ",", "!", "?", "\n", ":"])
            words.append(w)
            length += len(w) + 1
        out.append(" ".join(words)[:size])
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server {url} exited with {proc.returncode}")
        try:
            r = httpx.post(url + "/count", json={"text": "warm up"}, timeout=2)
            if r.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server {url} did not start")


# ---- load generators -------------------------------------------------------------------

#: wrk's end-of-run hook: the latency percentiles and error count as one JSON line,
#: read back by ``wrk_stats`` (every wrk script of these benchmarks ends with it).
LUA_DONE = textwrap.dedent('''
    done = function(summary, latency, requests)
      io.write(string.format("JSON{\\"p50\\":%f,\\"p99\\":%f,\\"requests\\":%d,\\"errors\\":%d}\\n",
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests,
        summary.errors.status + summary.errors.connect + summary.errors.read +
        summary.errors.write + summary.errors.timeout))
    end
''')


def wrk_stats(out: str) -> dict:
    """req/s, p50, p99 (ms), requests and errors from a wrk run's output."""
    stats = json.loads(re.search(r"JSON(\{.*\})", out).group(1))
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))
    return {"rps": rps, "p50_ms": stats["p50"], "p99_ms": stats["p99"],
            "requests": stats["requests"], "errors": stats["errors"]}


LUA = textwrap.dedent('''
    local texts = {}
    local path = "__PATH__"
    local extra = '__EXTRA__'
    local unique = __UNIQUE__
    local counter = 0
    local threads = {}
    local n = 0
    for line in io.lines("__FILE__") do n = n + 1; texts[n] = line end
    function setup(thread) thread:set("tid", #threads); table.insert(threads, thread) end
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    request = function()
      counter = counter + 1
      local t = texts[(counter % n) + 1]
      if unique then t = "__SALT__" .. (tid or 0) .. "-" .. counter .. " " .. t end
      return wrk.format(nil, path, nil, '{"text":"' .. t .. '"' .. extra .. '}')
    end
''') + LUA_DONE


def json_escape_inner(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)[1:-1]


def run_wrk(url: str, path: str, extra: str, texts: list[str], unique: bool,
            duration: int, connections: int, threads: int, workdir: Path, salt: str) -> dict:
    data = workdir / f"texts_{abs(hash((path, len(texts[0]))))}.txt"
    data.write_text("\n".join(json_escape_inner(t) for t in texts))
    script = workdir / "bench.lua"
    lua = (LUA.replace("__PATH__", path).replace("__EXTRA__", extra).replace("__SALT__", salt)
           .replace("__UNIQUE__", "true" if unique else "false").replace("__FILE__", str(data)))
    script.write_text(lua)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "10s",
         "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout
    return wrk_stats(out)


async def _client_load(url: str, path: str, extra: dict, texts: list[str], unique: bool,
                       duration: int, connections: int, salt: str) -> dict:
    import httpx

    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + duration
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)

    async def worker(wid: int, client: httpx.AsyncClient) -> None:
        nonlocal errors
        i = 0
        while time.perf_counter() < stop:
            i += 1
            text = texts[(i * connections + wid) % len(texts)]
            if unique:
                text = f"{salt}{wid}-{i} {text}"
            t0 = time.perf_counter()
            r = await client.post(path, json={"text": text, **extra})
            latencies.append(time.perf_counter() - t0)
            errors += r.status_code != 200

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w, client) for w in range(connections)))
        elapsed = time.perf_counter() - t0
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa
    return {"rps": len(latencies) / elapsed, "p50_ms": pick(0.50), "p99_ms": pick(0.99),
            "requests": len(latencies), "errors": errors}


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` and its descendants (uvicorn workers), from
    /proc; None where there is no /proc. CPU per request does not depend on what else
    the shared machine is running, as req/s does."""
    proc = Path("/proc")
    if not (proc / str(pid) / "stat").exists():
        return None
    stats: dict[int, tuple[int, float]] = {}  # pid -> (ppid, cpu seconds)
    tick = os.sysconf("SC_CLK_TCK")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, (pp, _) in stats.items() if pp == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(stats[p][1] for p in tree if p in stats)


# ---- main ------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="wrk threads")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn workers for each server")
    ap.add_argument("--client", choices=["auto", "wrk", "python"], default="auto")
    ap.add_argument("--modes", default="cold,warm")
    ap.add_argument("--rounds", type=int, default=2,
                    help="runs per server and scenario, interleaved; the best one counts")
    ap.add_argument("--tokserve-log-level", default="warning",
                    help="tokserve's log level: info writes an access line per request "
                         "(to a file; default warning: none), to measure what it costs")
    args = ap.parse_args()
    use_wrk = args.client == "wrk" or (args.client == "auto" and shutil.which("wrk"))
    if not (ARTIFACT / "manifest.json").is_file():
        print(f"missing {ARTIFACT}/manifest.json", file=sys.stderr)
        return 2

    workdir = Path(tempfile.mkdtemp(prefix="tokserve-bench-"))
    (workdir / "baseline_app.py").write_text(BASELINE_APP.replace("__ART__", repr(str(ARTIFACT))))
    (workdir / "bare_app.py").write_text(BARE_APP)
    env = {**os.environ, "TOKSERVE_LOG_LEVEL": "warning"}
    tokserve_log = open(workdir / "tokserve.log", "w")  # noqa: SIM115 - closed in finally
    uvicorn_args = ["--workers", str(args.workers), "--log-level", "warning", "--no-access-log"]
    servers: dict[str, str] = {}
    procs = []
    for name, command, cwd in (
            ("tokserve", [sys.executable, "-m", "tokserve.service", "serve",
                          "--workers", str(args.workers),
                          "--log-level", args.tokserve_log_level], REPO),
            ("fastapi+tiktoken", [sys.executable, "-m", "uvicorn", "baseline_app:app",
                                  *uvicorn_args], workdir),
            ("bare-asgi", [sys.executable, "-m", "uvicorn", "bare_app:app", *uvicorn_args],
             workdir)):
        port = free_port()
        servers[name] = f"http://127.0.0.1:{port}"
        procs.append(subprocess.Popen([*command, "--port", str(port)], cwd=cwd, env=env,
                                      stderr=tokserve_log if name == "tokserve" else None))
    scenarios = [
        ("count-1k", "/count", {}, make_texts(64, 1000, 1)),
        ("encode-10k-offsets", "/encode", {"return_offsets": True}, make_texts(64, 10_000, 2)),
    ]
    try:
        for (name, url), proc in zip(servers.items(), procs):
            wait_ready(url, proc)
        print(f"load: {'wrk' if use_wrk else 'python httpx client'}, {args.connections} "
              f"connections, {args.duration}s per run, {args.workers} worker(s) per server, "
              f"{os.cpu_count()} CPUs\n")
        header = f"{'scenario':<20} {'mode':<5} {'server':<17} {'req/s':>9} {'p50 ms':>8} " \
                 f"{'p99 ms':>8} {'errors':>6} {'cpu us/req':>10}"
        print(header)
        print("-" * len(header))
        summary = []
        pids = dict(zip(servers, (proc.pid for proc in procs)))
        for scen, path, extra, texts in scenarios:
            for mode in args.modes.split(","):
                best: dict[str, dict] = {}
                for round_ in range(args.rounds):
                    for sname, url in servers.items():
                        salt = f"r{round_}{mode}"
                        before = cpu_seconds(pids[sname])
                        if use_wrk:
                            extra_json = "".join(f',"{k}":{json.dumps(v)}'
                                                 for k, v in extra.items())
                            res = run_wrk(url, path, extra_json, texts, mode == "cold",
                                          args.duration, args.connections, args.threads,
                                          workdir, salt)
                        else:
                            res = asyncio.run(_client_load(url, path, extra, texts,
                                                           mode == "cold", args.duration,
                                                           args.connections, salt))
                        after = cpu_seconds(pids[sname])
                        res["cpu_us"] = ((after - before) / res["requests"] * 1e6
                                         if before is not None and res["requests"] else None)
                        cpu = f"{res['cpu_us']:>10.1f}" if res["cpu_us"] else f"{'-':>10}"
                        print(f"{scen:<20} {mode:<5} {sname:<17} {res['rps']:>9.0f} "
                              f"{res['p50_ms']:>8.2f} {res['p99_ms']:>8.2f} {res['errors']:>6} "
                              f"{cpu}", flush=True)
                        if sname not in best or res["rps"] > best[sname]["rps"]:
                            best[sname] = res
                summary.append((scen, mode, best))
        print("\nbest of rounds. x = tokserve / naive wrapper (req/s; latency = wrapper / ours);"
              "\nshare = req/s as a fraction of the bare ASGI app's (cpu share: bare's CPU "
              "per request / the server's)")
        for scen, mode, best in summary:
            ours, base, bare = best["tokserve"], best["fastapi+tiktoken"], best["bare-asgi"]
            line = (f"  {scen:<20} {mode:<5} x{ours['rps'] / base['rps']:.2f} req/s, "
                    f"p50 x{base['p50_ms'] / max(ours['p50_ms'], 1e-9):.2f}, "
                    f"p99 x{base['p99_ms'] / max(ours['p99_ms'], 1e-9):.2f};  share of bare: "
                    f"tokserve {ours['rps'] / bare['rps']:.1%}, wrapper "
                    f"{base['rps'] / bare['rps']:.1%}")
            if ours["cpu_us"] and bare["cpu_us"] and base["cpu_us"]:
                line += (f";  cpu share: tokserve {bare['cpu_us'] / ours['cpu_us']:.1%}, "
                         f"wrapper {bare['cpu_us'] / base['cpu_us']:.1%}")
            print(line)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        tokserve_log.close()
        if args.tokserve_log_level == "info":
            lines = (workdir / "tokserve.log").read_text().count('"tokserve.access"')
            print(f"\ntokserve wrote {lines} access lines")
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
