"""``tokserve artifact import`` of a SentencePiece ``tokenizer.model`` (issue 30, point 3).

The file is copied unchanged into a version whose manifest says ``"format":
"sentencepiece"`` with the model's BOS/EOS; what cannot be exact is refused before
anything is written; a file that is no tokenizer is named. The version loads through
``load_sentencepiece``, which hands the converted dict to the reader of tokenizer.json
dicts (``tokenizer_json.tokenizer_json_artifact``); its ids are checked against
``sentencepiece`` on the shared Llama 2 and Mistral files.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sentencepiece_inputs import texts, train
from shared_files import shared_file

import tokserve
from tokserve.authoring import importers

REPO = Path(__file__).resolve().parents[3]
@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "src" / "tokenizer.model"
    path.parent.mkdir()
    path.write_bytes(train(model_type="unigram", byte_fallback=True, control_symbols=["<ctl>"]))
    return path


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_import_copies_the_model_and_records_its_specials(tmp_path, model):
    manifest = importers.import_any(model, tmp_path / "out", "sp", "1", license="test")
    version = tmp_path / "out" / "sp" / "1"
    assert (version / "tokenizer.model").read_bytes() == model.read_bytes()
    assert manifest["format"] == "sentencepiece" and manifest["tokenizer_file"] == "tokenizer.model"
    assert manifest["files"]["tokenizer.model"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert (manifest["bos_token"], manifest["eos_token"], manifest["pad_token"]) == (
        "<s>", "</s>", None)
    assert (manifest["add_bos_token"], manifest["add_eos_token"]) == (True, False)
    assert json.loads((version / "manifest.json").read_text()) == manifest
    again = importers.import_any(model, tmp_path / "out", "sp", "2", eos_token="<ctl>")
    assert again["eos_token"] == "<ctl>"


@pytest.mark.parametrize("fields, message", [
    ({"eos_token": "<nope>"}, "--eos-token '<nope>' is not one of the model's control pieces"),
    ({"preset": "llama3"}, "preset apply to tiktoken rank files"),
    ({"pattern": "o200k_base"}, "pattern apply to tiktoken rank files"),
])
def test_import_refuses_options_that_do_not_fit(tmp_path, model, fields, message):
    with pytest.raises(tokserve.ArtifactError, match=message):
        importers.import_any(model, tmp_path / "out", "sp", "1", **fields)
    assert not (tmp_path / "out").exists() or _tree(tmp_path / "out") == []


def test_import_refuses_what_cannot_be_exact_before_writing(tmp_path):
    word = tmp_path / "word.model"
    word.write_bytes(train(model_type="word"))
    with pytest.raises(tokserve.UnsupportedArtifact, match="model_type WORD") as info:
        importers.import_any(word, tmp_path / "out", "w", "1")
    assert str(word) in info.value.message
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, says", [
    (b"<!doctype html><html>", "is an HTML page, not the file itself"),
    (b"just some text\n", "is not a tokenizer file: tokserve reads"),
    (b"version https://git-lfs.github.com/spec/v1\noid sha256:00\n", "Git LFS pointer"),
])
def test_import_names_a_file_that_is_no_tokenizer(tmp_path, content, says):
    path = tmp_path / "tokenizer.model"
    path.write_bytes(content)
    with pytest.raises(tokserve.ArtifactError, match=says):
        importers.import_any(path, tmp_path / "out", "x", "1")
    assert not (tmp_path / "out").exists()


def test_a_directory_with_only_a_sentencepiece_model_points_at_the_file(tmp_path, model):
    with pytest.raises(tokserve.ArtifactError,
                       match="has no tokenizer.json but a SentencePiece tokenizer.model: "
                             "import that file"):
        importers.import_any(model.parent, tmp_path / "out", "x", "1")


# ---------------------------------------------------------------- with the engine's reader


@pytest.mark.parametrize("name", ["llama2", "mistral-v0.1", "mistral-v0.3"])
def test_imported_shared_models_give_sentencepieces_ids(tmp_path, name):
    spm = pytest.importorskip("sentencepiece")
    path = shared_file(f"artifacts/{name}/tokenizer.model")
    importers.import_any(path, tmp_path, name, "1")
    tok = tokserve.load(tmp_path / name / "1")
    direct = tokserve.load(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    for text in texts()[:300]:
        ids = sp.encode(text)
        assert tok.encode(text, add_special_tokens=False) == ids, text
        assert tok.encode(text, add_special_tokens=True) == [sp.bos_id()] + ids, text
        assert direct.encode(text, add_special_tokens=False) == ids, text
    assert tok.hash == direct.hash == tok.manifest["tokenizer_hash"]


def test_cli_import_of_a_tokenizer_model(tmp_path, model):
    out = subprocess.run([sys.executable, "-m", "tokserve.service", "artifact", "import",
                          str(model), "--name", "sp", "--version", "1", "--out", str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == str(tmp_path / "sp" / "1")
    assert tokserve.load(tmp_path / "sp" / "1").manifest["format"] == "sentencepiece"
