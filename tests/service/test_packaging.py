"""Docker files are kept honest by reading them (no Docker engine runs in CI)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _dockerfile() -> str:
    path = REPO / "Dockerfile"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    # join continuation lines so each instruction is one line
    return re.sub(r"\\\n\s*", " ", path.read_text())


def _instructions(text: str, keyword: str) -> list[str]:
    return [ln.strip()[len(keyword):].strip() for ln in text.splitlines()
            if ln.strip().upper().startswith(keyword + " ")]


def _installs_project(command: str) -> bool:
    """A `pip install`/`pip wheel` whose target is the project directory `.`."""
    for part in re.split(r"&&|;", command):
        words = shlex.split(part)
        if "pip" in " ".join(words[:4]) and ("install" in words or "wheel" in words):
            targets = [w for w in words if not w.startswith("-")]
            if any(re.fullmatch(r"\.(\[[\w,]+\])?", t) for t in targets):
                return True
    return False


def test_dockerfile_is_multistage_nonroot_with_healthcheck():
    text = _dockerfile()
    assert len(_instructions(text, "FROM")) >= 2
    users = _instructions(text, "USER")
    assert users and users[-1].split(":")[0] not in ("root", "0")
    (health,) = _instructions(text, "HEALTHCHECK")
    assert "/readyz" in health


def test_dockerfile_pip_installs_the_project_and_runs_tokserve_serve():
    text = _dockerfile()
    runs = _instructions(text, "RUN")
    assert any(_installs_project(r) for r in runs), runs
    (entrypoint,) = _instructions(text, "ENTRYPOINT")
    (cmd,) = _instructions(text, "CMD")
    assert "tokserve" in entrypoint and "serve" in cmd


def test_dockerfile_final_stage_gets_only_the_built_virtualenv():
    """No build leftovers in the image: the runtime stage copies the virtualenv the build
    stage made, and nothing else from it (no wheels, sources or compilers)."""
    text = _dockerfile()
    final = text[text.rindex("\nFROM "):]
    copies = _instructions(final, "COPY")
    assert copies and all(c.startswith("--from=build") for c in copies), copies
    assert [c.split()[1:] for c in copies] == [["/opt/tokserve", "/opt/tokserve"]]
    assert "wheel" not in final.lower() and "build-essential" not in final
    for source in ("engine", "service", "client", "artifacts"):  # the wheel's packages
        assert re.search(rf"^COPY {source} ", text, re.M), source


def test_readme_quick_start_installs_the_project_the_same_way():
    readme = REPO / "README.md"
    if not readme.is_file():
        pytest.skip(f"{readme} is missing")
    commands = re.findall(r"^\s*(?:\$\s*)?(.*pip install.*)$", readme.read_text(), re.M)
    assert any(_installs_project(c) for c in commands), commands
    assert "tokserve serve" in readme.read_text()

