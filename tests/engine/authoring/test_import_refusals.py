"""What an import refuses, and what it leaves behind when it does (issue 33, points 4, 5,
7, 8): names outside the grammar before anything is written, nothing outside the root,
no ``.partial`` debris, preset specials merged (never dropped), pattern names, BOS/EOS."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import tokserve
from tokserve.authoring import importers
from tokserve.patterns import O200K
from tokserve.presets import PRESETS

RANKS = tokserve.bundled_root() / "cl100k_base" / "1" / "cl100k_base.tiktoken"


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("field", ["name", "version"])
@pytest.mark.parametrize("bad", ["../../../x", "..", "/abs/x", "a@b", "a\nb", "", ".1"],
                         ids=repr)
def test_a_bad_name_or_version_is_refused_before_anything_is_written(tmp_path, field, bad):
    root = tmp_path / "a" / "b" / "root"
    root.mkdir(parents=True)
    args = {"name": "ok", "version": "1", field: bad}
    with pytest.raises(tokserve.ArtifactError, match=f"invalid {field}"):
        importers.import_any(RANKS, root, args["name"], args["version"], preset="cl100k_base")
    assert _tree(tmp_path) == ["a", "a/b", "a/b/root"]
    assert not Path("/abs").exists()


def test_a_bad_template_name_is_refused(tmp_path):
    with pytest.raises(tokserve.ArtifactError, match="invalid chat template name '../t'"):
        importers.import_any(RANKS, tmp_path, "x", "1", preset="cl100k_base",
                             extra_templates={"../t": "{{ messages }}"})
    assert _tree(tmp_path) == []


def test_a_failed_import_removes_its_partial_directory(tmp_path):
    (tmp_path / "kept" / "1").mkdir(parents=True)  # a name that already has a version
    for name in ("fresh", "kept"):
        with pytest.raises(tokserve.ArtifactError, match="catastrophically"):
            importers.import_any(RANKS, tmp_path, name, "2", pattern=r"(a|a)+b|[^a]+|a",
                                 special_tokens={})
    assert _tree(tmp_path) == ["kept", "kept/1"]  # no .2.partial, no empty "fresh"


def test_the_refusal_names_the_source_file_not_the_staged_copy(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {"a": "0"}}}')
    with pytest.raises(tokserve.ArtifactError) as info:
        importers.import_any(source, tmp_path / "root", "x", "1")
    assert str(source / "tokenizer.json") in info.value.message
    assert ".partial" not in info.value.message
    assert _tree(tmp_path / "root") == []


def test_pattern_accepts_a_name(tmp_path):
    manifest = importers.import_any(RANKS, tmp_path, "named", "1", pattern="o200k_base")
    assert manifest["pattern"] == O200K.text
    tok = tokserve.load(tmp_path / "named" / "1")
    assert tok.pre_tokenizer_backend == "compiled"
    assert tok.decode(tok.encode("hello world")) == "hello world"
    with pytest.raises(tokserve.ArtifactError, match="unknown pattern name 'o200k'"):
        importers.import_any(RANKS, tmp_path, "typo", "1", pattern="o200k")


def test_preset_special_tokens_are_merged_never_dropped(tmp_path):
    manifest = importers.import_any(RANKS, tmp_path, "merged", "1", preset="cl100k_base",
                                    special_tokens={"<|im_start|>": 100264,
                                                    "<|endoftext|>": 100257})
    preset = PRESETS["cl100k_base"]
    assert manifest["special_tokens"] == {**preset.special_tokens, "<|im_start|>": 100264}
    assert manifest["eos_token"] == "<|endoftext|>" in manifest["special_tokens"]
    tok = tokserve.load(tmp_path / "merged" / "1")
    assert tok.encode("<|im_start|><|endoftext|>", special_tokens="allow") == [100264, 100257]


@pytest.mark.parametrize("given, named", [
    ({"<|endoftext|>": 5}, ["'<|endoftext|>' id 5", "as 100257"]),
    ({"<|x|>": 100257}, ["id 100257 to '<|x|>'", "as '<|endoftext|>'"]),
])
def test_a_special_token_clashing_with_the_preset_names_both(tmp_path, given, named):
    with pytest.raises(tokserve.ArtifactError) as info:
        importers.import_any(RANKS, tmp_path, "clash", "1", preset="cl100k_base",
                             special_tokens=given)
    assert all(part in info.value.message for part in named), info.value.message
    assert _tree(tmp_path) == []


@pytest.mark.parametrize("given, message", [
    ({"<|a|>": 2**62}, "token id 4611686018427387904 is out of range"),
    ({"<|a|>": 2**32 + 24912}, "token id 4294992208 is out of range"),
    ({"<|a|>": -1}, "token id -1 is out of range"),
    ({"<|a|>": "100300"}, "token id '100300' is not an integer"),
    ({"<|a|>": True}, "token id True is not an integer"),
    ({"": 100300}, "empty content"),
    (["<|a|>"], "must be an object"),
])
def test_malformed_special_tokens_are_refused_exactly(tmp_path, given, message):
    with pytest.raises(tokserve.ArtifactError, match=re.escape(message)):
        importers.import_any(RANKS, tmp_path, "bad", "1", preset="cl100k_base",
                             special_tokens=given)


def test_bos_and_eos_can_be_named_and_must_exist(tmp_path):
    specials = {"<|begin|>": 100300, "<|end|>": 100301}
    manifest = importers.import_any(RANKS, tmp_path, "chat", "1", pattern="cl100k_base",
                                    special_tokens=specials, bos_token="<|begin|>",
                                    eos_token="<|end|>")
    assert (manifest["bos_token"], manifest["eos_token"]) == ("<|begin|>", "<|end|>")
    tok = tokserve.load(tmp_path / "chat" / "1")
    assert (tok.bos_token, tok.eos_token) == ("<|begin|>", "<|end|>")
    with pytest.raises(tokserve.ArtifactError, match=re.escape("--eos-token '<|nope|>' is not")):
        importers.import_any(RANKS, tmp_path, "chat", "2", preset="cl100k_base",
                             eos_token="<|nope|>")


def test_hf_import_takes_bos_and_eos_over_its_config(tmp_path):
    source = tokserve.bundled_root() / "deepseek-v4" / "1"
    config = json.loads((source / "tokenizer_config.json").read_text())
    manifest = importers.import_any(source, tmp_path, "ds", "1", eos_token="<｜end▁of▁sentence｜>")
    assert manifest["eos_token"] == "<｜end▁of▁sentence｜>"
    assert manifest["bos_token"] == importers.added_token_text(config.get("bos_token"))


def test_rank_file_options_are_refused_for_sources_that_bring_their_own(tmp_path):
    source = tokserve.bundled_root() / "deepseek-v4" / "1"
    with pytest.raises(tokserve.ArtifactError, match="special_tokens apply to tiktoken"):
        importers.import_any(source, tmp_path, "ds", "1", special_tokens={"<x>": 1})

