"""Compiled tables shared across processes (tables.py, bpe_image.h): a version's tables
written once, mapped read-only, giving the same ids; a damaged file refused like a
broken artifact."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tokserve
from tokserve import tables

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "artifacts"
TEXTS = ["hello world", "héllo <|endoftext|> 日本語のテキスト 😀👍🏽", "a" * 3000 + " " * 300,
         "def f(x):\n    return x  # ok\r\n", "Привет, мир! 12345 " * 20, "<think>x</think>"]


def _files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.tables"))


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "o200k_harmony", "deepseek-v4"])
def test_tables_mapped_give_the_same_ids(tmp_path, name):
    plain = tokserve.load(name)
    first = tokserve.load(name, tables=tmp_path)  # builds and writes the file, then maps it
    [path] = _files(tmp_path)
    second = tokserve.load(name, tables=tmp_path)  # maps it: no vocabulary parsed
    for tok in (first, second):
        assert tok.artifact.tables is not None and tok.artifact.tokens is None
        assert tok.artifact.tiktoken_data is None and tok.artifact.merges is None
        assert tok.hash == plain.hash and tok.vocab_size == plain.vocab_size
        assert tok.special_tokens == plain.special_tokens
        assert tok.artifact.chat_templates == plain.artifact.chat_templates
        for text in TEXTS:
            assert tok.encode(text, special_tokens="allow") == plain.encode(text, special_tokens="allow")
            assert tok.encode_with_offsets(text, "utf16", "text") == plain.encode_with_offsets(
                text, "utf16", "text")
        assert tok.decode(plain.encode(TEXTS[1], "allow")) == TEXTS[1]
    assert _files(tmp_path) == [path]


def test_tables_keyed_by_the_manifest(tmp_path):
    """Two versions with the same files share nothing unless their manifests are equal;
    a changed manifest gets a file of its own."""
    root = tmp_path / "root"
    shutil.copytree(BUNDLED / "cl100k_base" / "1", root / "cl" / "1")
    tokserve.load(root / "cl" / "1", tables=tmp_path / "t")
    manifest = json.loads((root / "cl" / "1" / "manifest.json").read_text())
    manifest["license"] = "changed"
    shutil.copytree(root / "cl" / "1", root / "cl" / "2")
    (root / "cl" / "2" / "manifest.json").write_text(json.dumps(manifest))
    tokserve.load(root / "cl" / "2", tables=tmp_path / "t")
    assert len(_files(tmp_path / "t")) == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage", "manifest"])
def test_tables_damaged_file_is_refused(tmp_path, damage):
    tokserve.load("cl100k_base", tables=tmp_path)
    [path] = _files(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x10  # inside the image
    elif damage == "truncate":
        del data[-4096:]
    elif damage == "empty":
        data = bytearray()
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    else:  # a valid file of another manifest under this manifest's name
        tokserve.load("o200k_base", tables=tmp_path / "other")
        [other] = _files(tmp_path / "other")
        data = bytearray(other.read_bytes())
    path.write_bytes(bytes(data))
    with pytest.raises(tokserve.ArtifactError, match="compiled tables refused.*delete the file"):
        tokserve.load("cl100k_base", tables=tmp_path)
    path.unlink()  # the remedy the message names
    assert tokserve.load("cl100k_base", tables=tmp_path).encode("hello world") == [15339, 1917]


def test_tables_image_damage_the_hash_cannot_see_is_refused():
    """A self-consistent file whose image does not check (a wrong layout field) is
    refused by the model itself, never followed."""
    tok = tokserve.load("cl100k_base")
    image = bytearray(tables.image_of(tok.artifact))
    image[8] ^= 0xFF  # layout version
    with pytest.raises(tokserve.ArtifactError, match="damaged"):
        tokserve.models.bpe._bpe.BpeModel(image=bytes(image))


def test_tables_directory_that_cannot_be_written_still_loads(tmp_path):
    """No file can be made there (here: the 'directory' is under a regular file, which
    fails for root too): the process builds and keeps its own copy."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    tok = tokserve.load("cl100k_base", tables=blocker / "tables")
    assert tok.encode("hello world") == [15339, 1917]
    assert tok.artifact.tables is not None and blocker.is_file()


def test_tables_written_once_by_racing_processes(tmp_path):
    """Four processes load the same version at once: one file, all the same ids."""
    code = ("import sys, tokserve; t = tokserve.load('o200k_base', tables=sys.argv[1]);"
            "print(t.encode('hello world, racing'))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outs = {p.communicate(timeout=120)[0] for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(outs) == 1 and len(_files(tmp_path)) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tables-")]


def test_tables_file_of_an_older_layout_is_replaced(tmp_path):
    tokserve.load("cl100k_base", tables=tmp_path)
    [path] = _files(tmp_path)
    key = path.name.split(".")[0]
    old = tmp_path / f"{key}.f1.l0.tables"
    old.write_bytes(b"an older layout")
    path.unlink()
    tokserve.load("cl100k_base", tables=tmp_path)
    assert _files(tmp_path) == [path] and not old.exists()
