"""Metrics that add up across worker processes (metrics.py), against real servers.

With ``--workers 2`` every request served by either worker is in one scrape of either:
N requests give exactly N in the request counter, the exact sum of counted tokens in the
billing counter, and a worker killed with SIGKILL leaves its counts behind and its
process series gone. In-process, a batch pushed once (``record_batch``) reads exactly as
the same observations made one by one.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from servers import ServerProcess
from tokserve.service.runtime.metrics import Metrics
from tokserve.service.runtime.telemetry import RequestRecord


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """One scrape on a new connection: {(sample name, sorted labels): value}."""
    with httpx.Client(base_url=url, timeout=10,
                      limits=httpx.Limits(max_keepalive_connections=0)) as client:
        text = client.get("/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_two_workers_count_every_request_and_every_token_in_one_scrape(tmp_path, o200k):
    log = tmp_path / "server.log"
    rng = random.Random(7)
    texts = [" ".join(rng.choice(["billing", "東京", "😀", "tokens", "x", "42"])
                      for _ in range(rng.randint(1, 60))) + f" {i}" for i in range(240)]
    bad = 17  # requests refused with 400 (special token under "reject")
    with ServerProcess("--workers", "2", "--log-level", "info", "--log-format", "json",
                       log=log) as srv:
        _until_both_workers_serve(srv.url, log)
        before = scrape(srv.url)
        counts: list[int] = []
        lock = threading.Lock()

        def client(share: list[str]) -> None:
            with httpx.Client(base_url=srv.url, timeout=30) as c:  # one connection each
                for i, text in enumerate(share):
                    r = c.post("/count", json={"text": text},
                               headers={"X-Request-ID": f"measured-{id(share)}-{i}"})
                    assert r.status_code == 200
                    with lock:
                        counts.append(r.json()["count"])

        threads = [threading.Thread(target=client, args=(texts[i::8],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            for _ in range(bad):
                assert c.post("/count", json={"text": "<|endoftext|>"}).status_code == 400
        after = scrape(srv.url)

        def delta(name: str, **labels: str) -> float:
            return value(after, name, **labels) - value(before, name, **labels)

        served = len(texts)
        tokens = sum(o200k.count(t) for t in texts)
        assert sorted(counts) == sorted(o200k.count(t) for t in texts)
        ok = {"endpoint": "/count", "method": "POST", "status": "200"}
        assert delta("tokserve_requests_total", **ok) == served
        assert delta("tokserve_request_duration_seconds_count", **ok) == served
        assert delta("tokserve_request_duration_seconds_bucket", le="+Inf", **ok) == served
        assert delta("tokserve_requests_total", endpoint="/count", method="POST",
                     status="400") == bad
        assert delta("tokserve_tokens_total", endpoint="/count",
                     tokenizer="o200k_base@1") == tokens

        # both workers served: the access lines name two pids
        time.sleep(0.2)
        access = [a for a in _access(log) if a["request_id"].startswith("measured-")]
        pids = {a["pid"] for a in access}
        assert len(pids) == 2, pids
        assert sum(a["tokens"] for a in access) == tokens

        # process series per live worker, and the build
        workers = {int(dict(k[1])["pid"]) for k in after
                   if k[0] == "process_resident_memory_bytes"}
        assert workers == pids
        assert any(k[0] == "tokserve_build_info" and dict(k[1])["engine"] == "compiled"
                   for k in after)
        assert value(after, "tokserve_artifacts_loaded", tokenizer="o200k_base@1",
                     tokenizer_hash=o200k.hash) == 1

        # a worker killed outright: its counts stay, its process series go
        victim = min(pids)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            later = scrape(srv.url)
            alive = {int(dict(k[1])["pid"]) for k in later
                     if k[0] == "process_resident_memory_bytes"}
            if victim not in alive and len(alive) == 2:
                break
            assert time.monotonic() < deadline, alive
            time.sleep(0.2)
        assert value(later, "tokserve_requests_total", **ok) == served
        assert value(later, "tokserve_tokens_total", endpoint="/count",
                     tokenizer="o200k_base@1") == tokens
        assert value(later, "tokserve_artifacts_loaded", tokenizer="o200k_base@1",
                     tokenizer_hash=o200k.hash) == 1


def _access(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()
            if '"tokserve.access"' in line]


def _until_both_workers_serve(url: str, log) -> None:
    """Each worker takes connections once its artifacts are loaded: wait for both."""
    deadline = time.monotonic() + 120
    while len({a["pid"] for a in _access(log) if a["route"] == "/healthz"}) < 2:
        assert time.monotonic() < deadline, "the second worker never served"
        with httpx.Client(base_url=url, timeout=10) as c:  # a new connection each time
            c.get("/healthz")
        time.sleep(0.05)


def test_metrics_directory_is_removed_at_exit(tmp_path):
    given = tmp_path / "metrics"
    with ServerProcess("--workers", "2", env={"PROMETHEUS_MULTIPROC_DIR": str(given)}) as srv:
        srv.client.post("/count", json={"text": "hello"})
        assert list(given.glob("*.db"))
        srv.stop(signal.SIGINT)
    assert given.is_dir() and not list(given.glob("*.db"))  # given: kept, emptied
    with ServerProcess() as srv:  # no directory given: a temporary one, removed at exit
        srv.client.post("/count", json={"text": "hello"})
        fd_dir = f"/proc/{srv.proc.pid}/fd"
        files = {os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)}
        directory = os.path.dirname(next(f for f in files if "tokserve-metrics-" in f))
        assert os.path.isdir(directory)
        srv.stop(signal.SIGTERM)
    assert not os.path.exists(directory)


def _record(route: str, status: int, seconds: float, tokens: int | None = None):
    rec = RequestRecord("rid", "POST", 0.0)
    rec.route, rec.status, rec.duration = route, status, seconds
    if tokens is not None:
        rec.tokenizer, rec.tokens, rec.tokens_endpoint = "t@1", tokens, route
    return rec


def test_a_batch_reads_as_the_same_observations_one_by_one():
    rng = random.Random(1)
    records = [_record(rng.choice(["/count", "/encode"]), rng.choice([200, 400]),
                       rng.choice([0.0001, 0.0005, 0.0007, 0.003, 0.2, 11.0, 1.0]),
                       rng.randint(0, 50)) for _ in range(300)]
    batched, single = Metrics(), Metrics()
    batched.record_batch(records[:100])
    batched.record_batch(records[100:])
    for rec in records:
        labels = (rec.route, rec.method, str(rec.status))
        single.requests.labels(*labels).inc()
        single.latency.labels(*labels).observe(rec.duration)
        single.tokens.labels(rec.tokenizer, rec.tokens_endpoint).inc(rec.tokens)

    def series(m: Metrics) -> dict:
        keep = ("tokserve_requests", "tokserve_request_duration", "tokserve_tokens")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(m.render().decode())
                for s in family.samples if s.name.startswith(keep)}

    got, expected = series(batched), series(single)
    assert got == pytest.approx(expected)  # sums: the same floats added in another order
    assert {k: v for k, v in got.items() if not k[0].endswith("_sum")} == \
        {k: v for k, v in expected.items() if not k[0].endswith("_sum")}
    assert ("tokserve_request_duration_seconds_bucket", (
        ("endpoint", "/count"), ("le", "0.0005"), ("method", "POST"), ("status", "200"))) in got
