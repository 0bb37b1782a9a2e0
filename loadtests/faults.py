"""Fault run: two replicas under steady load behind a readiness-aware balancer
(balancer.py), while a worker is killed, artifacts are reloaded, and a replica is
stopped with SIGTERM and started again. Prints errors, p50/p99 and RSS per phase.

    python loadtests/faults.py                       # default: 2 replicas x 2 workers
    python loadtests/faults.py --sigterm-rounds 5    # only the SIGTERM comparison below
    python loadtests/faults.py --sigterm-rounds 5 --drain-seconds 0 --probe /healthz

Phases of the full run (each prints requests, errors, p50, p99 and every replica's RSS):

1. steady load;
2. kill -9 one worker of replica A (its supervisor starts another);
3. a new artifact version written to both replicas' root, then SIGHUP to both
   (hot reload in every worker);
4. SIGTERM to replica B under load: it drains and exits; then it is started again
   and rejoins when its /readyz is 200;
5. steady load again.

``--sigterm-rounds N`` runs only phase 4, N times, and prints the failed requests of
each round: the measurement behind "0 failed requests when a worker is stopped
gracefully". ``--drain-seconds 0`` shows what happens without the drain, and
``--python`` runs the servers with another interpreter (another checkout's
installation: with ``--probe /healthz`` the run measures a server that has no /readyz).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from balancer import Balancer, Load


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replica:
    def __init__(self, name: str, python: str, args: list[str], workdir: Path,
                 root: Path) -> None:
        self.name, self.python, self.args = name, python, args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"{name}.log"
        self.root = root
        self.proc: subprocess.Popen | None = None

    def start(self, probe: str) -> None:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TOKSERVE_", "PROMETHEUS_MULTIPROC_DIR"))}
        self.proc = subprocess.Popen(
            [self.python, "-m", "tokserve.service", "serve", "--port", str(self.port),
             "--log-level", "warning", "--artifacts", str(self.root), *self.args],
            env=env, stderr=self.log.open("a"), stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(self.url + probe, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start: {self.log.read_text()[-1500:]}")
            time.sleep(0.1)

    def workers(self) -> list[int]:
        """The worker pids, as the replica's own /metrics lists them."""
        with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as c:
            text = c.get(self.url + "/metrics").text
        return sorted({int(p) for p in re.findall(
            r'process_resident_memory_bytes\{pid="(\d+)"\}', text)})

    def tree(self) -> list[int]:
        """The replica's pids: its supervisor and every process it started."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        pids = [self.proc.pid]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                if ppid == self.proc.pid:
                    pids.append(int(entry.name))
        return pids

    def rss_mb(self) -> float:
        total = 0
        for pid in self.tree():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        return total / 1024

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> float:
        started = time.monotonic()
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.proc.wait(timeout)
        return time.monotonic() - started


def report(label: str, load: Load, since: float, replicas: list[Replica]) -> None:
    s = load.summary(since)
    rss = "  ".join(f"{r.name}:{r.rss_mb():.0f}MB" for r in replicas)
    print(f"{label:<34} {s['requests']:>6} req {s['errors']:>4} err  p50 {s['p50_ms']:6.1f} ms"
          f"  p99 {s['p99_ms']:7.1f} ms  RSS {rss}", flush=True)
    for outcome in [o for o in load.failures() if o.at >= since][:3]:
        print(f"    failed: {outcome.path} -> {outcome.backend}: {outcome.status} "
              f"{outcome.error[:120]}")


def sigterm_phase(b: Replica, balancer_probe: str, load: Load) -> tuple[float, int, float]:
    """SIGTERM ``b`` under load, restart it; returns (exit seconds, failures, t0)."""
    t0 = time.monotonic()
    took = b.stop(signal.SIGTERM)
    time.sleep(0.5)
    b.start(balancer_probe)
    time.sleep(1.0)
    failed = sum(1 for o in load.failures() if o.at >= t0 - 0.2)
    return took, failed, t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=6, help="client threads")
    ap.add_argument("--phase-seconds", type=float, default=10)
    ap.add_argument("--drain-seconds", type=float, default=2)
    ap.add_argument("--probe", default="/readyz", help="what the balancer polls")
    ap.add_argument("--sigterm-rounds", type=int, default=0)
    args = ap.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tokserve-faults-"))
    root = workdir / "artifacts"
    root.mkdir()
    extra = [] if args.drain_seconds is None else ["--drain-seconds", str(args.drain_seconds)]
    if args.python != sys.executable:
        help_text = subprocess.run([args.python, "-m", "tokserve.service", "serve", "--help"],
                                   capture_output=True, text=True).stdout
        if "--drain-seconds" not in help_text:
            extra = []  # a server from before the drain existed
    common = ["--workers", str(args.workers), *extra]
    replicas = [Replica(n, args.python, common, workdir, root) for n in ("A", "B")]
    for r in replicas:
        r.start(args.probe)
    a, b = replicas
    print(f"faults: 2 replicas x {args.workers} workers, {args.threads} client threads, "
          f"balancer polls {args.probe}, drain {' '.join(extra) or 'none'}")
    try:
        with Balancer([a.url, b.url], poll=0.1, probe=args.probe) as balancer:
            with Load(balancer, threads=args.threads) as load:
                if args.sigterm_rounds:
                    total = 0
                    for i in range(args.sigterm_rounds):
                        time.sleep(args.phase_seconds / 2)
                        took, failed, t0 = sigterm_phase(b, args.probe, load)
                        total += failed
                        print(f"round {i + 1}: SIGTERM -> exit in {took:.1f}s, "
                              f"{failed} failed request(s) of "
                              f"{load.summary(t0)['requests']} since the signal", flush=True)
                        for o in [o for o in load.failures() if o.at >= t0 - 0.2][:2]:
                            print(f"    {o.status} {o.error[:100]}")
                    print(f"total failed: {total}")
                    return 1 if total else 0
                t = time.monotonic()
                time.sleep(args.phase_seconds)
                report("1 steady", load, t, replicas)

                t = time.monotonic()
                victim = a.workers()[0]
                os.kill(victim, signal.SIGKILL)
                time.sleep(args.phase_seconds)
                report(f"2 kill -9 worker {victim} of A", load, t, replicas)

                t = time.monotonic()
                source = Path(__file__).resolve().parents[1] / "artifacts" / "cl100k_base" / "1"
                shutil.copytree(source, root / "cl100k_base" / "7")
                manifest = (root / "cl100k_base" / "7" / "manifest.json")
                manifest.write_text(manifest.read_text().replace('"version": "1"',
                                                                 '"version": "7"'))
                for r in replicas:
                    assert r.proc is not None
                    r.proc.send_signal(signal.SIGHUP)
                time.sleep(args.phase_seconds)
                with httpx.Client(limits=httpx.Limits(max_keepalive_connections=0)) as c:
                    seen = {c.post(r.url + "/count", json={"text": "x", "tokenizer":
                                                          "cl100k_base@7"}).status_code
                            for r in replicas for _ in range(4)}
                report(f"3 reload (SIGHUP) -> @7 {sorted(seen)}", load, t, replicas)

                took, failed, t = sigterm_phase(b, args.probe, load)
                report(f"4 SIGTERM B (exit {took:.1f}s), restart", load, t, replicas)

                t = time.monotonic()
                time.sleep(args.phase_seconds)
                report("5 steady", load, t, replicas)
                total = load.summary()
                print(f"\nall phases: {total['requests']} requests, {total['errors']} errors, "
                      f"p50 {total['p50_ms']:.1f} ms, p99 {total['p99_ms']:.1f} ms")
                return 1 if total["errors"] else 0
    finally:
        for r in replicas:
            if r.proc is not None and r.proc.poll() is None:
                r.stop(signal.SIGINT)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
