"""Settings from env vars, and the one-shot CLI commands."""

from __future__ import annotations

import json
import os

import pytest
from tokserve.service import cli
from tokserve import bundled_root
from tokserve.service.settings import Settings


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


@pytest.fixture
def text_file(tmp_path, bundled):
    bundled("o200k_base")
    path = tmp_path / "in.txt"
    path.write_text("hello world", encoding="utf-8")
    return path


def test_cli_count_encode_decode(text_file, capsys, o200k):
    assert cli.main(["count", str(text_file)]) == 0
    assert capsys.readouterr().out.strip() == "2"
    assert cli.main(["encode", str(text_file), "--tokenizer", "o200k_base@1"]) == 0
    ids = json.loads(capsys.readouterr().out)
    assert ids == o200k.encode("hello world")
    ids_file = text_file.with_suffix(".ids")
    ids_file.write_text(" ".join(map(str, ids)))
    assert cli.main(["decode", str(ids_file)]) == 0
    assert capsys.readouterr().out == "hello world"
    assert cli.main(["encode", str(text_file), "--offsets", "utf16"]) == 0
    assert json.loads(capsys.readouterr().out)["offsets"] == [[0, 5], [5, 11]]


def test_cli_errors_are_typed_and_exit_2(text_file, capsys):
    text_file.write_text("<|endoftext|>")
    assert cli.main(["count", str(text_file)]) == 2
    assert "special_token_in_text" in capsys.readouterr().err
    assert cli.main(["count", str(text_file), "--tokenizer", "nope"]) == 2
    assert "tokenizer_not_found" in capsys.readouterr().err
