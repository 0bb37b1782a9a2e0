"""Settings from env vars, and the one-shot CLI commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tokserve
from tokserve import bundled_root
from tokserve.service.runtime.roots import default_from_env, roots_from_env
from tokserve.service.runtime.settings import Settings

#: the console script installed beside this interpreter
TOKSERVE = shutil.which("tokserve", path=str(Path(sys.executable).parent)) or "tokserve"


def test_settings_defaults_and_env(monkeypatch, tmp_path):
    s = Settings(_env_file=None)
    assert s.default_tokenizer == "o200k_base" and s.bundled_artifacts == bundled_root()
    assert s.auth_token is None and s.max_body_bytes > 0
    monkeypatch.setenv("TOKSERVE_ARTIFACTS", f"{tmp_path}/a{os.pathsep}{tmp_path}/b,{tmp_path}/c")
    monkeypatch.setenv("TOKSERVE_MAX_BATCH", "7")
    monkeypatch.setenv("TOKSERVE_AUTH_TOKEN", "tok")
    monkeypatch.setenv("TOKSERVE_BUNDLED_ARTIFACTS", "")
    s = Settings(_env_file=None)
    assert s.artifacts == [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    assert s.max_batch == 7 and s.auth_token.get_secret_value() == "tok"
    assert s.artifact_roots() == [tmp_path / "a", tmp_path / "b", tmp_path / "c"]


@pytest.mark.parametrize("env", [
    {},
    {"TOKSERVE_BUNDLED_ARTIFACTS": ""},
    {"TOKSERVE_BUNDLED_ARTIFACTS": "/x", "TOKSERVE_ARTIFACTS": f"/a{os.pathsep}/b, /c"},
    {"TOKSERVE_ARTIFACTS": " , "},
])
def test_cli_roots_rule_is_the_settings_rule(monkeypatch, env):
    """The one-shot commands read roots without pydantic; both must agree."""
    for key in ("TOKSERVE_BUNDLED_ARTIFACTS", "TOKSERVE_ARTIFACTS"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert roots_from_env() == Settings(_env_file=None).artifact_roots()
    assert default_from_env() == Settings(_env_file=None).default_tokenizer


def run(*args: str, stdin: str | None = None, cwd=None, env=None) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it."""
    return subprocess.run([TOKSERVE, *args], input=stdin, capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=env)


def test_text_arguments_stdin_and_file(tmp_path, o200k):
    assert run("count", "hello world", "--tokenizer", "o200k_base").stdout == "2\n"
    assert run("count", "hello", "world").stdout == "2\n"  # arguments joined by a space
    assert run("count", "-", stdin="hello world").stdout == "2\n"
    assert run("count", stdin="hello world").stdout == "2\n"
    path = tmp_path / "in.txt"
    path.write_text("hello world", encoding="utf-8")
    assert run("count", "--file", str(path)).stdout == "2\n"
    # a text that happens to be a file name is still text
    assert run("count", str(path), cwd=tmp_path).stdout == f"{o200k.count(str(path))}\n"
    ids = json.loads(run("encode", "hello world", "--tokenizer", "o200k_base@1").stdout)
    assert ids == o200k.encode("hello world")
    assert run("decode", *map(str, ids)).stdout == "hello world\n"
    assert run("decode", stdin=json.dumps(ids)).stdout == "hello world\n"
    out = json.loads(run("encode", "hello world", "--offsets", "utf16").stdout)
    assert out["offsets"] == [[0, 5], [5, 11]]


def test_version_names_the_engine_build():
    done = run("--version")
    info = tokserve.build_info()
    assert done.returncode == 0
    assert done.stdout == f"tokserve {tokserve.__version__} (engine: {info['engine']})\n"
    assert info["engine"] == "compiled"  # the test install builds the extensions


def test_one_shot_loads_only_the_tokenizer_it_uses(tmp_path):
    broken = tmp_path / "broken" / "1"
    broken.mkdir(parents=True)
    (broken / "manifest.json").write_text("{not json")
    env = {**os.environ, "TOKSERVE_ARTIFACTS": str(tmp_path)}
    done = run("count", "hello world", "--tokenizer", "cl100k_base", env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "2\n", "")
    done = run("count", "hello", "--tokenizer", "broken", env=env)
    assert done.returncode == 2 and "broken" in done.stderr


def test_cli_errors_are_typed_and_exit_2(tmp_path):
    done = run("count", "<|endoftext|>")
    assert done.returncode == 2 and "special_token_in_text" in done.stderr
    done = run("count", "x", "--tokenizer", "nope")
    assert done.returncode == 2 and "tokenizer_not_found" in done.stderr
    assert "o200k_base" in done.stderr  # names what exists
    path = tmp_path / "in.txt"
    path.write_text("x")
    done = run("count", "x", "--file", str(path))
    assert done.returncode == 2 and "not both" in done.stderr
    done = run("count", "--file", str(tmp_path / "missing.txt"))
    assert done.returncode == 2 and "missing.txt" in done.stderr
    done = run("decode", "12", "abc")
    assert done.returncode == 2 and "abc" in done.stderr
