"""Hot reload under load: versions come and go with zero failed requests.

The server is a real ``python -m service serve`` subprocess (so it owns its signals and
SIGHUP can be sent to it) on a free loopback port, with an extra artifact root in a temp
dir. Client threads keep requesting /count and /encode throughout, at the bare name (which
must follow the newest version) and at versions that stay; every non-200 among them is a
failure. Versions are written by ``tokserve artifact import``, as an operator would.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from servers import ServerProcess

REPO = Path(__file__).resolve().parents[2]
RANKS = {"cl100k_base": REPO / "artifacts/cl100k_base/1/cl100k_base.tiktoken",
         "o200k_base": REPO / "artifacts/o200k_base/1/o200k_base.tiktoken"}
ADMIN = "admin-secret"
TEXT = "Hot reload must not drop a single request: 東京 😀 " * 20

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="needs POSIX signals")


def import_version(root: Path, name: str, version: str, preset: str) -> Path:
    out = subprocess.run(
        [sys.executable, "-m", "tokserve.service", "artifact", "import", str(RANKS[preset]),
         "--preset", preset, "--name", name, "--version", version, "--out", str(root)],
        capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    return root / name / version


class Server(ServerProcess):
    def __init__(self, root: Path, admin_token: str | None = ADMIN) -> None:
        env = {"TOKSERVE_ADMIN_TOKEN": admin_token} if admin_token else {}
        super().__init__("--artifacts", str(root), env=env)

    def refs(self) -> list[str]:
        return [t["tokenizer"] for t in self.client.get("/tokenizers").json()["tokenizers"]]


class Stream:
    """Client threads hammering the server; records every non-200 answer."""

    def __init__(self, url: str, targets: list[str], threads: int = 4) -> None:
        self.url, self.targets = url, targets
        self.stop = threading.Event()
        self.failures: list[str] = []
        self.served: dict[str, int] = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(i,)) for i in range(threads)]

    def _run(self, i: int) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                target = self.targets[(i + n) % len(self.targets)]
                path = "/count" if n % 2 else "/encode"
                n += 1
                try:
                    r = client.post(path, json={"tokenizer": target, "text": TEXT})
                except httpx.HTTPError as exc:
                    with self.lock:
                        self.failures.append(f"{path} {target}: {exc!r}")
                    continue
                with self.lock:
                    if r.status_code != 200:
                        self.failures.append(f"{path} {target}: {r.status_code} {r.text[:200]}")
                    else:
                        ref = r.json()["tokenizer"]
                        self.served[ref] = self.served.get(ref, 0) + 1

    def __enter__(self) -> Stream:
        for t in self.threads:
            t.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)


def wait_for(predicate, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_versions_added_and_removed_under_load_with_zero_failed_requests(tmp_path):
    root = tmp_path / "root"
    v1 = import_version(root, "tenant", "1", "cl100k_base")
    server = Server(root)
    try:
        admin = {"Authorization": f"Bearer {ADMIN}"}
        expected_v1 = server.client.post("/count", json={"tokenizer": "tenant",
                                                         "text": TEXT}).json()["count"]
        with Stream(server.url, ["tenant", "o200k_base", "cl100k_base@1"]) as stream:
            # 1. add tenant@2 (a different vocabulary: o200k) and reload via the endpoint
            import_version(root, "tenant", "2", "o200k_base")
            r = server.client.post("/admin/reload", headers=admin)
            assert r.status_code == 200, r.text
            assert r.json()["added"] == ["tenant@2"] and r.json()["failed"] == []
            bare = server.client.post("/count", json={"tokenizer": "tenant", "text": TEXT})
            assert bare.json()["tokenizer"] == "tenant@2"
            o200k = server.client.post("/count", json={"tokenizer": "o200k_base",
                                                       "text": TEXT}).json()["count"]
            assert bare.json()["count"] == o200k != expected_v1  # no stale cache answer
            pinned = server.client.post("/count", json={"tokenizer": "tenant@1", "text": TEXT})
            assert pinned.json()["count"] == expected_v1
            time.sleep(1)

            # 2. remove tenant@1 and reload via SIGHUP
            shutil.rmtree(v1)
            server.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "tenant@1" not in server.refs())
            gone = server.client.post("/count", json={"tokenizer": "tenant@1", "text": TEXT})
            assert gone.status_code == 404
            assert gone.json()["error"]["code"] == "tokenizer_not_found"

            # 3. a tampered new version is refused; everything else keeps serving
            v3 = import_version(root, "tenant", "3", "cl100k_base")
            rank_file = v3 / "cl100k_base.tiktoken"
            data = bytearray(rank_file.read_bytes())
            data[200] ^= 0x01
            rank_file.write_bytes(bytes(data))
            r = server.client.post("/admin/reload", headers=admin)
            assert r.status_code == 200
            failed = r.json()["failed"]
            assert len(failed) == 1 and "cl100k_base.tiktoken" in failed[0]["reason"]
            assert "tenant@3" not in r.json()["tokenizers"]
            assert server.client.post("/count", json={"tokenizer": "tenant", "text": TEXT}
                                      ).json()["tokenizer"] == "tenant@2"
            time.sleep(1)
        assert stream.failures == []
        assert stream.served.get("tenant@1", 0) > 0 and stream.served.get("tenant@2", 0) > 0
        assert sum(stream.served.values()) > 100
        metrics = server.client.get("/metrics").text
        assert 'tokserve_artifact_reloads_total{outcome="ok",trigger="admin"} 1.0' in metrics
        assert 'trigger="sighup"' in metrics
        assert 'tokenizer="tenant@1"' not in metrics.split("tokserve_artifacts_loaded")[1]
    finally:
        server.close()


def test_admin_endpoint_needs_its_token_and_is_off_without_one(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    server = Server(root)
    try:
        assert server.client.post("/admin/reload").status_code == 401
        wrong = server.client.post("/admin/reload", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "forbidden"
        ok = server.client.post("/admin/reload", headers={"Authorization": f"Bearer {ADMIN}"})
        assert ok.status_code == 200 and ok.json()["added"] == []
    finally:
        server.close()
    server = Server(root, admin_token=None)
    try:
        off = server.client.post("/admin/reload", headers={"Authorization": f"Bearer {ADMIN}"})
        assert off.status_code == 404 and off.json()["error"]["code"] == "admin_disabled"
    finally:
        server.close()


_STARTUP_HUP = """
import asyncio, os, shutil, signal, sys
from pathlib import Path
from tokserve.service.runtime.state import build_state
from tokserve.service.runtime.reload import defer_sighup, install_sighup
from tokserve.service.runtime.settings import Settings

root, source = Path(sys.argv[1]), Path(sys.argv[2])
defer_sighup()
state = build_state(Settings(artifacts=str(root), bundled_artifacts="", allow_empty=True))
assert state.registry.entries() == []       # the scan is done: the version is not there yet
shutil.copytree(source, root / "cl100k_base" / "1")
os.kill(os.getpid(), signal.SIGHUP)          # the operator's SIGHUP, while still starting

async def main():
    uninstall = install_sighup(state)
    for _ in range(600):
        if state.registry.entries():
            break
        await asyncio.sleep(0.05)
    uninstall()
    print(",".join(e.ref for e in state.registry.entries()))

asyncio.run(main())
"""


def test_a_sighup_while_starting_is_not_lost(tmp_path, bundled):
    """A worker that has scanned its roots but not yet installed its reload handler
    (``tokserve serve --workers N`` loads first) still rescans for a SIGHUP sent then,
    instead of dying of it or dropping it."""
    root = tmp_path / "root"
    root.mkdir()
    done = subprocess.run([sys.executable, "-c", _STARTUP_HUP, str(root),
                           str(bundled("cl100k_base"))],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "cl100k_base@1", done.stderr[-2000:]
