"""A load generator that routes like a load balancer, for drain and fault runs.

``Balancer(backends)`` polls every backend's ``/readyz`` (``probe``; every ``poll`` seconds, on a
fresh connection, 1 s timeout) and sends requests only to backends whose last answer
was 200, round robin, each over its own pool of kept-alive connections (httpx: a
response with ``Connection: close`` closes its connection, as a proxy does). This is
what a Kubernetes Service (endpoints follow readiness) or nginx with health checks does
when a replica starts draining: new requests go elsewhere, the ones already sent finish.

``Load(balancer, threads)`` keeps ``threads`` clients sending /count and /encode
requests of varied sizes until stopped, and records every outcome: a failure is a
connection error or any status other than 200. Used by tests/service/test_lifecycle.py
and loadtests/faults.py; it is not a benchmark.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

import httpx

_WORDS = ("tokenizer service billing prompt 東京 données 😀 42 café "
          "def return {\"k\": 1} https://example.com").split(" ")


class Balancer:
    def __init__(self, backends: list[str], poll: float = 0.1, probe: str = "/readyz") -> None:
        self.backends = list(backends)
        self.probe = probe
        self.ready = {url: False for url in self.backends}
        self.poll = poll
        self._next = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._clients = {url: httpx.Client(base_url=url, timeout=30) for url in self.backends}
        self._poller = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Balancer:
        self._check_all()
        self._poller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._poller.join(5)
        for client in self._clients.values():
            client.close()

    def _check_all(self) -> None:
        for url in self.backends:
            try:
                ok = httpx.get(url + self.probe, timeout=1).status_code == 200
            except httpx.HTTPError:
                ok = False
            self.ready[url] = ok

    def _watch(self) -> None:
        while not self._stop.wait(self.poll):
            self._check_all()

    def pick(self) -> str | None:
        with self._lock:
            for _ in range(len(self.backends)):
                url = self.backends[self._next % len(self.backends)]
                self._next += 1
                if self.ready[url]:
                    return url
        return None

    def post(self, path: str, payload: dict) -> tuple[str, httpx.Response]:
        """Send to a ready backend; waits (up to 10 s) while none is ready."""
        deadline = time.monotonic() + 10
        url = self.pick()
        while url is None:
            if time.monotonic() > deadline:
                raise httpx.ConnectError("no ready backend")
            time.sleep(0.02)
            url = self.pick()
        return url, self._clients[url].post(path, json=payload)


@dataclass
class Outcome:
    backend: str
    path: str
    status: int | None  # None: no response
    seconds: float
    at: float  # time.monotonic() when sent
    error: str = ""


@dataclass
class Load:
    balancer: Balancer
    threads: int = 8
    outcomes: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._workers = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(self.threads)]

    def __enter__(self) -> Load:
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(60)

    def _run(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self._stop.is_set():
            text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 400)))
            path = "/count" if rng.random() < 0.7 else "/encode"
            started = time.monotonic()
            try:
                backend, response = self.balancer.post(path, {"text": text})
                outcome = Outcome(backend, path, response.status_code,
                                  time.monotonic() - started, started,
                                  "" if response.status_code == 200 else response.text[:200])
            except httpx.HTTPError as exc:
                outcome = Outcome("?", path, None, time.monotonic() - started, started,
                                  repr(exc))
            with self._lock:
                self.outcomes.append(outcome)

    def failures(self) -> list[Outcome]:
        with self._lock:
            return [o for o in self.outcomes if o.status != 200]

    def summary(self, since: float = 0.0) -> dict[str, float]:
        with self._lock:
            done = [o for o in self.outcomes if o.at >= since]
        latencies = sorted(o.seconds for o in done if o.status == 200)
        pick = (lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
                if latencies else float("nan"))
        return {"requests": len(done), "errors": sum(o.status != 200 for o in done),
                "p50_ms": pick(0.50), "p99_ms": pick(0.99)}
