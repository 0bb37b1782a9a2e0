"""Versioned artifacts: refusing a corrupted copy, two versions side by side, the cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tokserve.service.runtime.registry import Registry, version_key
from tokserve.service.runtime.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_version_key_is_numeric_aware():
    assert sorted(["10", "2", "1", "1.10", "1.9"], key=version_key) == \
        ["1", "1.9", "1.10", "2", "10"]


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory, bundled) -> Path:
    """cl100k_base@1 (bundled copy) and @2, whose manifest drops <|fim_prefix|>."""
    root = tmp_path_factory.mktemp("two_versions")
    src = bundled("cl100k_base")
    shutil.copytree(src, root / "cl100k_base" / "1")
    v2 = root / "cl100k_base" / "2"
    shutil.copytree(src, v2)
    manifest = json.loads((v2 / "manifest.json").read_text())
    manifest["version"] = "2"
    del manifest["special_tokens"]["<|fim_prefix|>"]
    manifest.pop("tokenizer_hash", None)
    (v2 / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return root


def test_registry_resolves_current_and_pinned(two_versions):
    reg = Registry(default="cl100k_base")
    reg.load_roots([two_versions])
    assert reg.refs() == ["cl100k_base@1", "cl100k_base@2"]
    assert reg.resolve(None).version == "2" and reg.resolve("cl100k_base").version == "2"
    assert reg.resolve("cl100k_base@1").version == "1"
    assert reg.resolve("cl100k_base@1").hash != reg.resolve("cl100k_base@2").hash
    # hot-reload hooks: removing the current version makes @1 current again
    assert reg.remove_version("cl100k_base", "2")
    assert reg.resolve("cl100k_base").version == "1"


def test_two_versions_over_http_never_share_cache(live_server, two_versions):
    settings = Settings(_env_file=None, bundled_artifacts=None, artifacts=[two_versions],
                        default_tokenizer="cl100k_base")
    text = "<|fim_prefix|>def f():"
    with live_server(settings) as srv:
        c = srv.client
        listing = c.get("/tokenizers").json()
        assert listing["default"] == "cl100k_base@2"
        assert [t["tokenizer"] for t in listing["tokenizers"]] == ["cl100k_base@1", "cl100k_base@2"]
        for _ in range(2):  # second round is answered from the cache
            v1 = c.post("/encode", json={"tokenizer": "cl100k_base@1", "text": text,
                                         "special_tokens": "allow"}).json()
            v2 = c.post("/encode", json={"tokenizer": "cl100k_base@2", "text": text,
                                         "special_tokens": "allow"}).json()
            cur = c.post("/encode", json={"text": text, "special_tokens": "allow"}).json()
            assert v1["tokenizer"] == "cl100k_base@1" and v2["tokenizer"] == "cl100k_base@2"
            assert v1["tokenizer_hash"] != v2["tokenizer_hash"]
            assert v1["ids"][0] == 100258            # the special id in v1
            assert 100258 not in v2["ids"]           # plain text in v2
            assert cur["ids"] == v2["ids"] and cur["tokenizer"] == "cl100k_base@2"
            c1 = c.post("/count", json={"tokenizer": "cl100k_base@1", "text": text,
                                        "special_tokens": "allow"}).json()["count"]
            c2 = c.post("/count", json={"tokenizer": "cl100k_base@2", "text": text,
                                        "special_tokens": "allow"}).json()["count"]
            assert (c1, c2) == (len(v1["ids"]), len(v2["ids"]))
        # reject policy differs too: the literal is special only in v1
        assert c.post("/count", json={"tokenizer": "cl100k_base@1", "text": text}).status_code == 400
        assert c.post("/count", json={"tokenizer": "cl100k_base@2", "text": text}).status_code == 200
        detail = c.get("/tokenizers/cl100k_base@1").json()
        assert detail["manifest"]["version"] == "1" and "<|fim_prefix|>" in detail["special_tokens"]
        assert c.get("/tokenizers/cl100k_base@3").status_code == 404
        metrics = c.get("/metrics").text
        assert "tokserve_cache_hits_total" in metrics


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server did not become healthy")


def test_corrupted_artifact_is_refused_at_start_and_others_serve(tmp_path, bundled):
    """Real CLI start (`python -m service serve`): one clear log line, others keep serving."""
    bad = tmp_path / "cl100k_base" / "1"
    shutil.copytree(bundled("cl100k_base"), bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    data_file = bad / manifest["tokenizer_file"]
    blob = bytearray(data_file.read_bytes())
    blob[1000] = ord("A") if blob[1000] != ord("A") else ord("B")  # one edited byte
    data_file.write_bytes(bytes(blob))
    good = tmp_path / "deepseek-v4"
    shutil.copytree(bundled("deepseek-v4").parent, good)

    sock_port = __import__("socket").socket()
    sock_port.bind(("127.0.0.1", 0))
    port = sock_port.getsockname()[1]
    sock_port.close()
    env = {**os.environ, "TOKSERVE_BUNDLED_ARTIFACTS": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokserve.service", "serve", "--port", str(port),
         "--artifacts", str(tmp_path), "--default-tokenizer", "deepseek-v4"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        ok = httpx.post(url + "/count", json={"text": "hello"})
        assert ok.status_code == 200 and ok.json()["tokenizer"] == "deepseek-v4@1"
        refused = httpx.post(url + "/count", json={"text": "x", "tokenizer": "cl100k_base"})
        assert refused.status_code == 404
        assert httpx.get(url + "/tokenizers").json()["default"] == "deepseek-v4@1"
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    lines = [ln for ln in out.splitlines() if "artifact refused" in ln]
    assert len(lines) == 1, out
    assert str(bad) in lines[0] and manifest["tokenizer_file"] in lines[0], lines[0]
