"""The release configuration, read the way CI reads it.

cibuildwheel cannot build here (its Linux builds run in containers), but it reads its
configuration without one: ``cibuildwheel --print-build-identifiers`` on pyproject.toml's
[tool.cibuildwheel] table, alone and with each job's variables of
.github/workflows/release.yml, says what CI builds. The workflow's jobs must add up to the
table's builds (CPython 3.11-3.13 x manylinux/musllinux x x86_64/aarch64), each
wheel must be tested by the smoke script tests/test_wheel.py runs here, and only a
version tag publishes.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "release.yml"
CIBUILDWHEEL = Path(sys.executable).parent / "cibuildwheel"
EXPECTED = {f"{python}-{libc}_{arch}"
            for python, libc, arch in itertools.product(
                ("cp311", "cp312", "cp313"), ("manylinux", "musllinux"), ("x86_64", "aarch64"))}


def _identifiers(tmp_path: Path, env: dict[str, str] | None = None) -> set[str]:
    """The builds cibuildwheel plans for this project on Linux, given ``env``."""
    if not CIBUILDWHEEL.is_file():
        pytest.fail(f"{CIBUILDWHEEL} is missing: pip install -e '.[test]'")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    # a fresh output dir; the project is the repository (its pyproject.toml)
    done = subprocess.run(
        [str(CIBUILDWHEEL), "--platform", "linux", "--print-build-identifiers",
         "--output-dir", str(tmp_path / "wheelhouse"), str(REPO)],
        cwd=REPO, env={**environ, **(env or {})}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


@pytest.fixture(scope="module")
def table() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["cibuildwheel"]


def test_cibuildwheel_plans_cpython_311_to_313_for_both_libcs_and_both_arches(tmp_path):
    assert _identifiers(tmp_path) == EXPECTED


def test_every_wheel_is_served_from_before_it_is_kept(table):
    # the script tests/test_wheel.py runs on the local wheel, copied to the test directory
    assert table["test-sources"] == ["tests/wheel_smoke.py"]
    assert table["test-command"] == "python tests/wheel_smoke.py"
    assert (REPO / "tests" / "wheel_smoke.py").is_file()
    # a dependency without a wheel for the platform fails the build instead of compiling
    assert table["test-environment"] == {"PIP_ONLY_BINARY": ":all:"}
    assert "test-skip" not in table


def test_the_workflow_jobs_add_up_to_the_configured_builds(workflow, tmp_path):
    job = workflow["jobs"]["wheels"]
    matrix = job["strategy"]["matrix"]
    step = next(s for s in job["steps"] if s.get("uses", "").startswith("pypa/cibuildwheel@"))
    # the action runs the cibuildwheel major version whose reading of the table this
    # test checks (pyproject's [test] extra pins it)
    action_version = step["uses"].split("@v")[1]
    installed = subprocess.run([sys.executable, "-c", "import cibuildwheel; "
                                "print(cibuildwheel.__version__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert action_version.split(".")[0] == installed.split(".")[0], (action_version, installed)

    keys = sorted(matrix)
    planned: list[str] = []
    for values in itertools.product(*(matrix[k] for k in keys)):
        cell = dict(zip(keys, values))
        env = {name: re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: cell[m.group(1)], value)
               for name, value in step["env"].items()}
        ids = _identifiers(tmp_path, env)
        assert ids, (cell, env)  # no job builds nothing
        planned += ids
    assert len(planned) == len(set(planned)), "two jobs build the same wheel"
    assert set(planned) == EXPECTED

    # aarch64 runs under QEMU on the x86_64 runners
    assert job["runs-on"] == "ubuntu-latest"
    (qemu,) = [s for s in job["steps"] if s.get("uses", "").startswith("docker/setup-qemu-action")]
    assert "aarch64" in qemu["if"] and "arm64" in qemu["with"]["platforms"]

    # and the publish job expects exactly that many wheels
    publish = "\n".join(s.get("run", "") for s in workflow["jobs"]["publish"]["steps"])
    assert f"-eq {len(EXPECTED)}" in publish


def test_the_sdist_job_builds_a_wheel_from_the_sdist_and_serves_from_it(workflow):
    steps = workflow["jobs"]["sdist"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    # `build` without --sdist/--wheel builds the wheel from the sdist it made, with the
    # interpreter whose venv then installs that wheel and serves from it
    assert re.search(r"^python -m build --outdir dist$", runs, re.M), runs
    assert "twine check --strict" in runs
    assert re.search(r"^python -m venv /tmp/smoke$", runs, re.M), runs
    assert "wheel_smoke.py" in runs
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload["with"]["path"] == "dist/*.tar.gz"


def test_only_a_version_tag_publishes_and_without_a_stored_token(workflow):
    # PyYAML reads the key `on` as True
    triggers = workflow.get("on", workflow.get(True))
    assert triggers["push"] == {"tags": ["v*"]}
    publish = workflow["jobs"]["publish"]
    assert publish["if"] == ("github.event_name == 'push' && "
                             "startsWith(github.ref, 'refs/tags/v')")
    assert set(publish["needs"]) == {"sdist", "wheels"}
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing
    assert workflow["permissions"] == {"contents": "read"}
    uses = [s.get("uses", "") for s in publish["steps"]]
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses)
    assert "secrets." not in WORKFLOW.read_text()
    # the tag must be the version the files carry
    check = "\n".join(s.get("run", "") for s in publish["steps"])
    assert 'version="${GITHUB_REF_NAME#v}"' in check
    assert 'dist/tokserve-${version}.tar.gz' in check
