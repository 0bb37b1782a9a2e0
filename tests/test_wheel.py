"""The wheel as users get it: one ``tokserve`` namespace with the bundled tokenizers
inside, installed (not editable) into a fresh virtual environment and run from an empty
directory with no ``TOKSERVE_*`` environment variable.

The build takes ~20 s (the Cython extensions are compiled once for the module).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
#: every tokenizer the repository bundles (artifacts/<name>/<version>/manifest.json)
BUNDLED = tuple(sorted(manifest.parent.parent.name
                      for manifest in (REPO / "artifacts").glob("*/*/manifest.json")))


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith("TOKSERVE_") and k not in ("PYTHONPATH", "PYTHONSAFEPATH")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy without build outputs: a stale build/ of the checkout must not
    # leak into what is checked.
    src = tmp_path_factory.mktemp("src") / "tokserve"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "*.so", "__pycache__", ".hypothesis",
        ".pytest_cache", "tests", "benchmarks", "loadtests"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(out), str(src)],
        check=True, capture_output=True, timeout=900,
    )
    (built,) = out.glob("tokserve-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel (dependencies come from the test interpreter's)."""
    env_dir = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)],
                   check=True, timeout=300)
    # `venv` from a virtualenv's interpreter bases the new one on the base interpreter, so
    # name the test interpreter's own site directories too (after the new venv's, so the
    # wheel wins; a path in a .pth is added as it is: an editable install's hooks there
    # do not run).
    purelib = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "test-interpreter-deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return env_dir


def test_wheel_holds_only_the_tokserve_namespace_with_bundled_artifacts(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"tokserve", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    for name in BUNDLED:
        manifest = f"tokserve/artifacts/{name}/1/manifest.json"
        assert manifest in names, manifest
        with zipfile.ZipFile(wheel) as z:
            files = json.loads(z.read(manifest))["files"]
        for fname in files:
            assert f"tokserve/artifacts/{name}/1/{fname}" in names
    # every compiled module, built at its place in the namespace, with its stub beside it
    compiled = sorted(p.relative_to(REPO / "engine").with_suffix("")
                      for p in (REPO / "engine").rglob("*.pyx"))
    assert len(compiled) == 5, compiled
    for module in compiled:
        assert any(n.startswith(f"tokserve/{module.as_posix()}.") and n.endswith(".so")
                   for n in names), module
        assert f"tokserve/{module.as_posix()}.pyi" in names, module
    for needed in ("tokserve/py.typed", "tokserve/models.json", "tokserve/client/__init__.py",
                   "tokserve/service/static/index.html",
                   "tokserve/service/operations/chat/render.py",
                   "tokserve/service/http/routes/health.py"):
        assert needed in names
    # Every module of the source folders, at its place in the namespace (pyproject's
    # package list is explicit: a subpackage left out of it would be missing here).
    for folder, prefix in (("engine", "tokserve"), ("service", "tokserve/service"),
                           ("client", "tokserve/client")):
        for module in (REPO / folder).rglob("*.py"):
            relative = module.relative_to(REPO / folder)
            if relative.parts[0] in ("build", "__pycache__") or relative.name == "setup.py":
                continue
            assert f"{prefix}/{relative.as_posix()}" in names, f"{folder}/{relative}"
    leftovers = [n for n in names if n.endswith((".pyx", ".cpp", ".c", ".h", ".o"))]
    assert not leftovers, leftovers
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "tokserve = tokserve.service.cli:main" in entry_points


def test_installed_wheel_imports_one_namespace_from_any_directory(venv, tmp_path):
    python = str(venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import tokserve; print(tokserve.__file__); "
                            "print(tokserve.bundled_root())"],
                           cwd=tmp_path, env=_clean_env(), capture_output=True, text=True,
                           check=True).stdout.split()
    assert all(str(venv) in w for w in where), where
    # The whole app, imported from the wheel alone: a module missing from it must not be
    # found in this checkout (the test interpreter's editable install is on the path).
    strays = subprocess.run(
        [python, "-c", "import sys, tokserve.service.http.app, tokserve.client; "
         "print('\\n'.join(f'{n} {m.__file__}' for n, m in sorted(sys.modules.items()) "
         "if n.startswith('tokserve') and getattr(m, '__file__', None) "
         f"and not m.__file__.startswith({str(venv)!r})))"],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, check=True).stdout
    assert strays.strip() == "", strays
    for name in ("engine", "service"):
        r = subprocess.run([python, "-c", f"import {name}"], cwd=tmp_path, env=_clean_env(),
                           capture_output=True, text=True)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, (name, r.stderr)


def test_installed_wheel_serves_the_bundled_tokenizers_with_no_configuration(venv, tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen([str(venv / "bin" / "tokserve"), "serve", "--port", str(port)],
                            cwd=tmp_path, env=_clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not become healthy"
            time.sleep(0.2)
        listed = httpx.get(url + "/tokenizers").json()
        assert {t["name"] for t in listed["tokenizers"]} >= set(BUNDLED)
        assert listed["default"] == "o200k_base@1"
        r = httpx.post(url + "/count", json={"text": "hello world"})
        assert r.status_code == 200 and r.json()["count"] == 2
        # the installed client and tiktoken API, and the one-shot CLI, from the same dir
        code = ("import tokserve, tokserve.client as c; "
                f"remote = c.Client({url!r}).get_encoding('cl100k_base'); "
                "local = tokserve.encoding_for_model('gpt-4'); "
                "assert remote.encode('hello world') == local.encode('hello world') "
                "== [15339, 1917]")
        subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path,
                       env=_clean_env(), check=True, timeout=60)
        one_shot = subprocess.run(
            [str(venv / "bin" / "tokserve"), "count", "hello world", "--tokenizer",
             "o200k_base"], cwd=tmp_path, env=_clean_env(), capture_output=True, text=True,
            timeout=60)
        assert one_shot.stdout == "2\n", one_shot.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_installed_wheel_refuses_to_serve_nothing(venv, tmp_path):
    env = {**_clean_env(), "TOKSERVE_BUNDLED_ARTIFACTS": ""}
    r = subprocess.run([str(venv / "bin" / "tokserve"), "serve", "--port", "9"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "no tokenizer artifacts found" in r.stderr and "--allow-empty" in r.stderr
