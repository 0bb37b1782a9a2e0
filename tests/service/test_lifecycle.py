"""Readiness and drain, against real ``tokserve serve`` processes on loopback.

* While artifacts load (in the background, after the socket opens) /readyz and /healthz
  are 503 and tokenizing operations answer 503 ``not_ready`` (reason ``loading``) with
  ``Retry-After``, in the documented envelope.
* SIGTERM under load behind a client that routes like a load balancer (it stops sending
  to a backend whose /readyz is 503): 0 failed requests, /readyz 503 ``draining`` and
  ``Connection: close`` while the process keeps serving, exit within drain + grace.
* A server whose artifacts all fail to load exits non-zero with the reason.
* ``--workers N``: a worker killed with SIGKILL is replaced; SIGHUP to the supervisor
  reloads artifacts in every worker; on Linux the workers share the supervisor's
  preloaded imports (copy-on-write pages), a replacement too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jsonschema
import pytest
import tokserve
from servers import REPO, ServerProcess

sys.path.insert(0, str(REPO / "loadtests"))
from balancer import Balancer, Load

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="needs POSIX signals")


def copies_of(bundled, root: Path, name: str, versions: int) -> Path:
    """``root`` with ``versions`` copies of a bundled artifact (slow to load on purpose)."""
    src = bundled(name)
    for v in range(1, versions + 1):
        dst = root / f"{name}-copy" / str(v)
        shutil.copytree(src, dst)
        manifest = json.loads((dst / "manifest.json").read_text())
        manifest.update(name=f"{name}-copy", version=str(v))
        (dst / "manifest.json").write_text(json.dumps(manifest))
    return root


def _schema_for(document: dict, path: str, method: str, status: int) -> dict:
    schema = document["paths"][path][method]["responses"][str(status)]["content"][
        "application/json"]["schema"]
    return {**document, **schema}


def test_readyz_and_operations_are_503_while_artifacts_load(bundled, tmp_path):
    root = copies_of(bundled, tmp_path / "root", "o200k_base", 4)
    with ServerProcess("--artifacts", str(root), ready="/openapi.json") as srv:
        document = srv.client.get("/openapi.json").json()
        seen_loading = []
        while True:
            ready = srv.client.get("/readyz")
            if ready.status_code == 200:
                break
            assert ready.status_code == 503 and ready.json()["error"]["reason"] == "loading"
            count = srv.client.post("/count", json={"text": "hi"},
                                    headers={"X-Request-ID": "while-loading"})
            health = srv.client.get("/healthz")
            if count.status_code == 503:  # still loading when /count arrived
                error = count.json()["error"]
                assert error["code"] == "not_ready" and error["reason"] == "loading"
                assert error["request_id"] == "while-loading"
                assert count.headers["retry-after"] == "1"
                assert health.status_code in (503, 200)
                jsonschema.validate(count.json(), _schema_for(document, "/count", "post", 503))
                jsonschema.validate(ready.json(), _schema_for(document, "/readyz", "get", 503))
                seen_loading.append(health.status_code)
            time.sleep(0.05)
        assert seen_loading and seen_loading[0] == 503, "the load ended before a probe"
        assert srv.client.get("/healthz").status_code == 200
        served = len(tokserve.bundled_names()) + 4  # the bundled ones and the four copies
        assert srv.client.get("/readyz").json() == {"status": "ready", "tokenizers": served}
        assert srv.client.post("/count", json={"text": "hi"}).status_code == 200


def test_a_server_with_nothing_loadable_exits_non_zero(tmp_path):
    broken = tmp_path / "root" / "broken" / "1"
    broken.mkdir(parents=True)
    (broken / "manifest.json").write_text("{not json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKSERVE_")}
    for workers in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-m", "tokserve.service", "serve", "--port", "0",
             "--workers", workers, "--artifacts", str(tmp_path / "root"), "--log-format",
             "text"], env={**env, "TOKSERVE_BUNDLED_ARTIFACTS": ""}, capture_output=True,
            text=True, timeout=120, cwd=REPO)
        assert done.returncode == 3, done.stderr[-2000:]
        assert "no tokenizer could be loaded" in done.stderr and "broken" in done.stderr


def test_sigterm_under_load_behind_a_balancer_loses_nothing(tmp_path):
    drain, grace = 2.0, 10.0
    args = ("--drain-seconds", str(drain), "--graceful-timeout", str(grace))
    with ServerProcess(*args) as a, ServerProcess(*args, log=tmp_path / "b.log") as b:
        with Balancer([a.url, b.url], poll=0.1) as balancer, Load(balancer, threads=6) as load:
            time.sleep(2)
            signalled = time.monotonic()
            b.proc.send_signal(signal.SIGTERM)
            probe = httpx.Client(base_url=b.url, timeout=5)
            ready = probe.get("/readyz")
            assert ready.status_code == 503 and ready.json()["error"]["reason"] == "draining"
            assert ready.headers["connection"] == "close"
            assert probe.get("/healthz").status_code == 200  # alive: liveness must not kill it
            served = probe.post("/count", json={"text": "still served while draining"})
            assert served.status_code == 200 and served.headers["connection"] == "close"
            probe.close()
            b.proc.wait(timeout=drain + grace + 10)
            took = time.monotonic() - signalled
            time.sleep(1)
        summary = load.summary()
        failures = load.failures()
        to_b = [o for o in load.outcomes if o.backend == b.url]
        after = [o for o in to_b if o.at > signalled]
    assert failures == [], failures[:5]
    assert summary["requests"] > 100 and to_b, summary
    assert b.proc.returncode == 0, b.logs()[-2000:]
    assert drain <= took <= drain + grace, took
    # new requests stopped going to b within about one readiness poll of the signal
    assert all(o.at < signalled + 1.0 for o in after), [o.at - signalled for o in after][-3:]


def test_workers_are_replaced_and_reload_together(tmp_path, bundled):
    root = tmp_path / "root"
    root.mkdir()
    with ServerProcess("--workers", "2", "--artifacts", str(root)) as srv:
        pids = _worker_pids(srv)
        assert len(pids) == 2
        os.kill(pids[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            current = _worker_pids(srv)
            if len(current) == 2 and pids[0] not in current:
                break
            assert time.monotonic() < deadline, current
            time.sleep(0.2)
        copies_of(bundled, root, "cl100k_base", 1)
        srv.proc.send_signal(signal.SIGHUP)  # the supervisor forwards it to every worker
        deadline = time.monotonic() + 60
        while True:
            answers = set()
            for _ in range(10):
                with _fresh(srv.url) as client:
                    answers.add(client.get("/tokenizers/cl100k_base-copy").status_code)
            if answers == {200}:
                break
            assert time.monotonic() < deadline, answers
            time.sleep(0.2)


def _fresh(url: str) -> httpx.Client:
    """A client on a new connection (the kernel spreads new connections over workers)."""
    return httpx.Client(base_url=url, timeout=10, limits=httpx.Limits(max_keepalive_connections=0))


def _worker_pids(srv: ServerProcess) -> list[int]:
    with _fresh(srv.url) as client:  # a killed worker's kept-alive connection is reset
        text = client.get("/metrics").text
    return sorted({int(p) for p in re.findall(
        r'process_resident_memory_bytes\{pid="(\d+)"\}', text)})


def _shared_dirty_mb(pid: int) -> float:
    """Anonymous pages this process shares with another: what a fork passes on and a
    spawn (a fresh interpreter) cannot."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Shared_Dirty:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no Shared_Dirty for {pid}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork workers: Linux only")
def test_workers_share_the_supervisors_preloaded_imports():
    with ServerProcess("--workers", "2") as srv:
        first = _worker_pids(srv)
        assert len(first) == 2 and srv.proc.pid not in first
        # Python, FastAPI, pydantic and uvicorn, imported once: ~24 MB here; a spawned
        # worker shares none of its heap (0.0-0.1 MB measured before the change).
        assert all(_shared_dirty_mb(pid) > 10 for pid in first), \
            {pid: _shared_dirty_mb(pid) for pid in first}
        os.kill(first[0], signal.SIGKILL)  # a replacement is forked the same way
        deadline = time.monotonic() + 60
        while len(current := _worker_pids(srv)) != 2 or first[0] in current:
            assert time.monotonic() < deadline, current
            time.sleep(0.2)
        replacement = (set(current) - set(first)).pop()
        assert _shared_dirty_mb(replacement) > 10, _shared_dirty_mb(replacement)
        assert srv.client.post("/count", json={"text": "hello world"}).json()["count"] == 2
