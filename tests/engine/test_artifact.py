"""Artifact loading: formats, manifests, hash checks, hashes and unsupported features."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import tokserve
from tokserve.formats import load_artifact
from tokserve.authoring.manifest import write_artifact

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "artifacts"
SHARED = REPO.parent / "shared" / "artifacts"


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "deepseek-v4"])
def test_artifact_bundled_loads_with_manifest_hash(name):
    tok = tokserve.load(name)
    manifest = json.loads((BUNDLED / name / "1" / "manifest.json").read_text())
    assert tok.hash == manifest["tokenizer_hash"]
    assert tok.vocab_size == manifest["vocab_size"]
    assert tok.special_tokens == manifest["special_tokens"]


def test_artifact_hash_is_stable_and_content_derived(tmp_path):
    first = tokserve.load("cl100k_base").hash
    copy = tmp_path / "cl100k_base" / "1"
    shutil.copytree(BUNDLED / "cl100k_base" / "1", copy)
    assert tokserve.load(copy).hash == first
    assert tokserve.load("o200k_base").hash != first


def test_artifact_hash_changes_with_special_tokens(tmp_path):
    src = BUNDLED / "cl100k_base" / "1"
    manifest = json.loads((src / "manifest.json").read_text())
    write_artifact(tmp_path, "cl", "2", {"cl100k_base.tiktoken": src / "cl100k_base.tiktoken"},
                   format="tiktoken", tokenizer_file="cl100k_base.tiktoken",
                   pattern=manifest["pattern"], special_tokens={"<|endoftext|>": 100257})
    changed = tokserve.load(tmp_path / "cl" / "2")
    assert changed.hash != tokserve.load("cl100k_base").hash
    assert changed.special_tokens == {"<|endoftext|>": 100257}


def test_artifact_corrupted_byte_is_refused(tmp_path):
    copy = tmp_path / "o200k_base" / "1"
    shutil.copytree(BUNDLED / "o200k_base" / "1", copy)
    target = copy / "o200k_base.tiktoken"
    data = bytearray(target.read_bytes())
    data[1000] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(tokserve.ArtifactError, match="does not match the manifest"):
        tokserve.load(copy)


def test_artifact_missing_file_and_bad_json_are_typed(tmp_path):
    with pytest.raises(tokserve.ArtifactError, match="not found"):
        tokserve.load(tmp_path / "nope.tiktoken", preset="cl100k_base")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(tokserve.ArtifactError, match="not valid JSON"):
        tokserve.load(bad)
    with pytest.raises(tokserve.ArtifactError, match="no bundled tokenizer"):
        tokserve.load("no-such-tokenizer")


def test_artifact_bad_rank_line_names_the_line(tmp_path):
    f = tmp_path / "x.tiktoken"
    f.write_bytes(b"YQ== 0\nnot-base64!! x\n")
    with pytest.raises(tokserve.ArtifactError, match="line 2"):
        tokserve.load(f, preset="cl100k_base")


def test_artifact_rank_file_without_preset_asks_for_one(tmp_path):
    with pytest.raises(tokserve.ArtifactError, match="preset"):
        load_artifact(BUNDLED / "cl100k_base" / "1" / "cl100k_base.tiktoken")


def _tiny_tokenizer_json(**overrides) -> dict:
    from tokserve.decoders.byte_level import bytes_to_unicode

    table = bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    spec = {
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel"},
        "added_tokens": [],
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }
    for key, value in overrides.items():
        if key in ("byte_fallback", "dropout", "continuing_subword_prefix"):
            spec["model"][key] = value
        else:
            spec[key] = value
    return spec


@pytest.mark.parametrize(
    "override, feature",
    [
        ({"normalizer": {"type": "Lowercase"}}, "normalizer 'Lowercase'"),
        ({"pre_tokenizer": {"type": "Whitespace"}}, "pre_tokenizer 'Whitespace'"),
        ({"post_processor": {"type": "BertProcessing"}}, "post_processor 'BertProcessing'"),
        ({"decoder": {"type": "WordPiece"}}, "decoder 'WordPiece'"),
        ({"byte_fallback": True}, "byte_fallback"),
        ({"dropout": 0.1}, "dropout"),
        ({"continuing_subword_prefix": "##"}, "continuing_subword_prefix"),
    ],
)
def test_artifact_unsupported_feature_is_named(tmp_path, override, feature):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_tiny_tokenizer_json(**override)))
    with pytest.raises(tokserve.UnsupportedArtifact) as info:
        tokserve.load(path)
    assert feature in str(info.value)
    assert info.value.code == "unsupported_artifact"


def test_artifact_minimal_byte_level_tokenizer_json_works(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_tiny_tokenizer_json()))
    tok = tokserve.load(path)
    assert tok.encode("hi") == [ord("h"), ord("i")]
    assert tok.decode(tok.encode("héllo")) == "héllo"


@pytest.mark.skipif(not (SHARED / "mistral-tekken").exists(),
                    reason="needs ../shared/artifacts/mistral-tekken/tekken_240718.json")
def test_artifact_tekken_ids_are_shifted_by_specials():
    tok = tokserve.load(SHARED / "mistral-tekken" / "tekken_240718.json")
    assert tok.special_tokens["<s>"] == 1
    assert tok.encode("hi", add_special_tokens=True)[0] == 1
    assert min(tok.encode("hello world")) >= 1000


def test_artifact_carries_its_chat_templates_verified(tmp_path):
    """A version directory's chat templates come with the artifact, each with the
    sha256 the manifest pins; a template changed on disk is refused like any file."""
    manifest = json.loads((BUNDLED / "deepseek-v4" / "1" / "manifest.json").read_text())
    art = tokserve.load("deepseek-v4").artifact
    assert art.default_chat_template == manifest["default_chat_template"] == "default"
    template = art.chat_templates["default"]
    assert template.sha256 == manifest["chat_templates"]["default"]["sha256"]
    assert template.source == (BUNDLED / "deepseek-v4" / "1" / "chat_template.jinja").read_text()
    copy = tmp_path / "deepseek-v4" / "1"
    shutil.copytree(BUNDLED / "deepseek-v4" / "1", copy)
    (copy / "chat_template.jinja").write_text(template.source + "{# changed #}")
    with pytest.raises(tokserve.ArtifactError, match="does not match"):
        tokserve.load(copy)
