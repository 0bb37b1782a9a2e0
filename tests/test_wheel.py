"""The wheel as users get it: one ``tokserve`` namespace with the bundled tokenizers
inside, installed (not editable) into a fresh virtual environment and run from an empty
directory with no ``TOKSERVE_*`` environment variable.

The wheel is built the way the release workflow builds its sdist check, and the way pip
builds where no published wheel fits: an sdist first, then the wheel from that sdist, so
a build input missing from the sdist (MANIFEST.in) fails here. The build takes ~20-50 s
(the Cython extensions are compiled once for the module).

One test installs the wheel with its dependencies into a venv of its own (no system site
packages) with every compiler hidden, as ``pip install tokserve`` runs on a user's machine,
and serves from it with tests/wheel_smoke.py, the script the release workflow runs on
every wheel it builds.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import httpx
import pytest
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
#: every tokenizer the repository bundles (artifacts/<name>/<version>/manifest.json)
BUNDLED = tuple(sorted(manifest.parent.parent.name
                      for manifest in (REPO / "artifacts").glob("*/*/manifest.json")))


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith("TOKSERVE_") and k not in ("PYTHONPATH", "PYTHONSAFEPATH")}


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    # Built from a copy without build outputs: a stale build/ of the checkout must not
    # leak into what is checked. setuptools' PEP 517 hook, as `python -m build --sdist
    # --no-isolation` calls it.
    src = tmp_path_factory.mktemp("src") / "tokserve"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "*.so", "__pycache__", ".hypothesis",
        ".pytest_cache", "tests", "benchmarks", "loadtests"))
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta; "
         "build_meta.build_sdist(sys.argv[1])", str(out)],
        cwd=src, check=True, capture_output=True, timeout=600,
    )
    (built,) = out.glob("tokserve-*.tar.gz")
    return built


@pytest.fixture(scope="module")
def wheel(sdist, tmp_path_factory) -> Path:
    """The wheel pip builds from the sdist (no build isolation: no download per run)."""
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(out), str(sdist)],
        capture_output=True, text=True, timeout=900,
        # what is checked is the wheel's contents and that it serves, not its speed:
        # unoptimized, the nine native modules compile in a fraction of the time
        env={**os.environ, "TOKSERVE_BUILD_OPTIMIZATION": "-O0"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
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
    assert len(compiled) == 9, compiled
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
    leftovers = [n for n in names
                 if n.endswith((".pyx", ".pxi", ".cpp", ".cc", ".c", ".h", ".hpp", ".o"))]
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


# ==== the sdist, the wheel's tags, and an install with no compiler ======================


def test_sdist_holds_every_build_input_and_no_build_output(sdist):
    with tarfile.open(sdist) as tar:
        top = f"{sdist.name.removesuffix('.tar.gz')}/"
        names = {n.removeprefix(top) for n in tar.getnames()}
    # what setup.py compiles from: every Cython source, declaration and C/C++ header
    tracked = subprocess.run(["git", "ls-files", "engine"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    inputs = [n for n in tracked if n.endswith((".pyx", ".pxd", ".pxi", ".h"))]
    assert len([n for n in inputs if n.endswith(".pyx")]) == 9, inputs
    missing = [n for n in inputs if n not in names]
    assert not missing, missing
    for needed in ("setup.py", "pyproject.toml", "README.md", "MANIFEST.in",
                   "artifacts/o200k_base/1/manifest.json", "service/static/index.html"):
        assert needed in names, needed
    # not what a build makes (setup.py regenerates the .cpp), nor the tests
    outputs = [n for n in names if n.endswith((".cpp", ".c", ".so", ".o"))]
    assert not outputs, outputs
    assert not any(n.startswith(("tests/", "build/", "benchmarks/")) for n in names)


def test_wheel_is_tagged_for_this_interpreter_and_platform(wheel):
    """A platform wheel for this CPython (cp311-cp311-linux_x86_64 here); cibuildwheel's
    auditwheel step turns linux_* into manylinux_2_28_* or musllinux_1_2_* in CI."""
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"{python}-{python}-{platform}"
    assert wheel.name.endswith(f"-{tag}.whl"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        info = next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
        lines = z.read(info).decode().splitlines()
        metadata = z.read(info.replace("/WHEEL", "/METADATA")).decode().splitlines()
    assert "Root-Is-Purelib: false" in lines
    assert [ln for ln in lines if ln.startswith("Tag: ")] == [f"Tag: {tag}"]
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f"Requires-Python: {requires}" in metadata


def _installed_versions() -> str:
    """``name==version`` of every distribution the test interpreter has (not tokserve):
    the versions the rest of the suite ran against, as pip constraints."""
    pins: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"] or "")
        if name and name != "tokserve":
            pins.setdefault(name, f"{name}=={dist.version}")
    return "\n".join(sorted(pins.values())) + "\n"


@pytest.fixture(scope="module")
def wheelhouse(wheel, tmp_path_factory) -> Path:
    """tokserve's dependencies as wheels only (``--only-binary :all:``: one that would
    need a compiler fails here), at the test interpreter's versions, fetched once by pip
    from its configured index; the install below reads only this directory."""
    out = tmp_path_factory.mktemp("wheelhouse")
    constraints = out / "constraints.txt"
    constraints.write_text(_installed_versions())
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
         "--only-binary", ":all:", "-c", str(constraints), "-d", str(out), str(wheel)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"fetching the dependencies' wheels failed:\n{done.stderr}"
    return out


#: what a build would call; none may be found on the PATH the install runs with
COMPILERS = ("cc", "gcc", "g++", "c++", "clang", "clang++", "ld")


def _no_compiler_env(tmp_path: Path, venv_bin: Path) -> dict[str, str]:
    """A minimal environment: PATH is the venv's bin and an empty directory (no cc, gcc,
    g++, c++ or clang), and CC/CXX/LDSHARED are /bin/false, so any compile fails."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    path = os.pathsep.join([str(venv_bin), str(empty)])
    found = {tool: shutil.which(tool, path=path) for tool in COMPILERS}
    assert not any(found.values()), found
    home = tmp_path / "home"
    home.mkdir()
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "CC": "/bin/false",
            "CXX": "/bin/false", "LDSHARED": "/bin/false"}


def test_compiling_fails_in_the_no_compiler_environment(tmp_path):
    """The control: in the environment the install below runs in, building a C extension
    (the way pip builds tokserve's sdist) fails, so the install's success is the wheel's."""
    project = tmp_path / "needs_cc"
    project.mkdir()
    (project / "hello.c").write_text("int hello(void) { return 1; }\n")
    (project / "setup.py").write_text(
        "from setuptools import Extension, setup\n"
        "setup(name='needs-cc', version='1', ext_modules=[Extension('hello', ['hello.c'])])\n")
    env = _no_compiler_env(tmp_path, Path(sys.executable).parent)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "-w", str(tmp_path / "out"), str(project)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, "a C extension was built with the compiler hidden"
    assert "/bin/false" in done.stdout + done.stderr, done.stdout[-2000:]
    assert not list(tmp_path.glob("out/*.whl"))


def test_wheel_installs_and_serves_in_a_fresh_venv_with_no_compiler(wheel, wheelhouse, tmp_path,
                                                                    record_property):
    """``pip install`` of the wheel into a venv with no system site packages, every
    compiler hidden; then ``tokserve serve`` from that venv, started in another directory,
    answers /encode right (tests/wheel_smoke.py). The seconds from the install's start to
    that answer are docs/SERVICE.md's "Wheels and releases" figure."""
    venv = tmp_path / "venv"
    # no pip inside: the test interpreter's pip installs into it (pip --python)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    env = _no_compiler_env(tmp_path, venv / "bin")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "-q", "--disable-pip-version-check", "--no-index", "--find-links", str(wheelhouse),
         "--only-binary", ":all:", str(wheel)],
        env=env, cwd=elsewhere, capture_output=True, text=True, timeout=300)
    installed = time.monotonic() - started
    assert done.returncode == 0, done.stderr

    # tokserve and its dependencies come from the venv alone: no other site directory
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import sys, tokserve, httpx, fastapi; print(tokserve.__file__); "
         "print(httpx.__file__); print(fastapi.__file__); "
         "print('\\n'.join(p for p in sys.path if 'site-packages' in p))"],
        env=env, cwd=elsewhere, capture_output=True, text=True, check=True).stdout.split()
    assert where and all(w.startswith(str(venv)) for w in where), where
    package = Path(where[0]).parent
    assert [p.name for p in package.rglob("*") if p.suffix in (".pyx", ".cpp", ".h")] == []
    # the compiled engine, as built: one module per .pyx of the checkout
    assert len(list(package.rglob("*.so"))) == len(list((REPO / "engine").rglob("*.pyx")))

    shutil.copy(REPO / "tests" / "wheel_smoke.py", elsewhere / "wheel_smoke.py")
    smoke = subprocess.run([str(venv / "bin" / "python"), "wheel_smoke.py"], env=env,
                           cwd=elsewhere, capture_output=True, text=True, timeout=400)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    serving = json.loads(smoke.stdout.strip().splitlines()[-1])["serving_seconds"]
    record_property("install_seconds", round(installed, 2))
    record_property("install_to_serving_seconds", round(installed + serving, 2))
    print(f"\nwheel install {installed:.1f} s + serve {serving:.1f} s "
          f"= {installed + serving:.1f} s to a right /encode answer")
