"""A file is told apart by its content (file_kinds.py), and a file that is not what the
caller asked for is refused saying what it is and what to pass (issue 30, "Why": Llama 2's
and Llama 3's ``tokenizer.model`` are different formats).

Loading a SentencePiece model goes through ``load_sentencepiece`` to the reader of
tokenizer.json dicts (``tokenizer_json.tokenizer_json_artifact``).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import pickle
import zipfile
from pathlib import Path

import pytest
from sentencepiece_inputs import train
from shared_files import shared_file

import tokserve
from tokserve import formats
from tokserve.file_kinds import READABLE, refusal, sniff, sniff_bytes
from tokserve.sentencepiece_json import sentencepiece_tokenizer_json

BUNDLED = tokserve.bundled_root()
RANKS = BUNDLED / "cl100k_base" / "1" / "cl100k_base.tiktoken"
TOKENIZER_JSON = BUNDLED / "deepseek-v4" / "1" / "tokenizer.json"


def _zip(names: list[str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in names:
            z.writestr(name, b"x")
    return out.getvalue()


HEADS = {
    "tiktoken": RANKS.read_bytes()[:4096],
    "tokenizer_json": TOKENIZER_JSON.read_bytes()[:4096],
    "tekken": b'{"config": {"pattern": "x", "default_vocab_size": 3}, "vocab": []}',
    "tokenizer_config": b'{"add_bos_token": true, "tokenizer_class": "LlamaTokenizer"}',
    "json": b'{"hello": 1, "world": 2}',
    "gzip": gzip.compress(RANKS.read_bytes()[:1000]),
    "pytorch": _zip(["archive/data.pkl", "archive/version"]),
    "zip": _zip(["tokenizer.json"]),
    "gguf": b"GGUF\x03\x00\x00\x00" + bytes(40),
    "pickle": pickle.dumps({"a": 1}, protocol=4),
    "safetensors": (20).to_bytes(8, "little") + b'{"__metadata__": {}}',
    "html": b"\n<!DOCTYPE html>\n<html><head><title>tokenizer.model</title>",
    "git_lfs": b"version https://git-lfs.github.com/spec/v1\noid sha256:9e55\nsize 499723\n",
    "utf16": "IQ== 0\n".encode("utf-16"),
    "empty": b"",
    "unknown": b"hello there\nthis is a text file\n",
}


@pytest.mark.parametrize("kind", list(HEADS))
def test_each_kind_is_told_apart_by_its_first_bytes(kind):
    assert sniff_bytes(HEADS[kind]).name == kind


def test_sentencepiece_and_rank_files_named_tokenizer_model_are_told_apart(tmp_path):
    llama2_like = tmp_path / "a" / "tokenizer.model"
    llama2_like.parent.mkdir()
    llama2_like.write_bytes(train(model_type="bpe", normalization_rule_name="identity"))
    assert sniff(llama2_like).name == "sentencepiece"
    assert sniff(shared_file("artifacts/meta-llama3/tokenizer.model")).name == "tiktoken"
    assert sniff(shared_file("artifacts/llama2/tokenizer.model")).name == "sentencepiece"


def test_llama3s_tokenizer_model_still_asks_for_a_preset_and_llama2s_for_none(tmp_path):
    llama3 = shared_file("artifacts/meta-llama3/tokenizer.model")
    with pytest.raises(tokserve.ArtifactError, match="is a tiktoken rank file: pass preset="):
        tokserve.load(llama3)
    model = tmp_path / "tokenizer.model"
    model.write_bytes(train(model_type="bpe", normalization_rule_name="identity"))
    with pytest.raises(tokserve.ArtifactError,
                       match=r"is a SentencePiece model \(protobuf\): preset apply to tiktoken"):
        tokserve.load(model, preset="llama3")
    with pytest.raises(tokserve.ArtifactError,
                       match=r"is a SentencePiece model \(protobuf\), not a tiktoken rank file"):
        formats.load_tiktoken(model, preset="llama3")


@pytest.mark.parametrize("kind, says", [
    ("html", "is an HTML page, not the file itself: download the raw file"),
    ("git_lfs", "is a Git LFS pointer, not the file itself: fetch the content with `git lfs"),
    ("gzip", "is a gzip-compressed file: decompress it first"),
    ("gguf", "is a GGUF model file (llama.cpp): a model's weights, not its tokenizer"),
    ("pytorch", "is a PyTorch checkpoint (zip): a model's weights"),
    ("safetensors", "is a safetensors weights file"),
    ("unknown", f"is not a tokenizer file: {READABLE}"),
    ("empty", "is an empty file"),
    ("utf16", "is UTF-16 or UTF-32 encoded"),
])
def test_other_files_are_named_with_what_to_pass(tmp_path, kind, says):
    path = tmp_path / "tokenizer.model"
    path.write_bytes(HEADS[kind])
    with pytest.raises(tokserve.ArtifactError) as info:
        tokserve.load(path)
    assert info.value.message == refusal(path, sniff(path))
    assert info.value.message.startswith(f"{path} {says}"), info.value.message
    assert "\n" not in info.value.message


def test_a_broken_rank_file_given_a_preset_still_names_its_line(tmp_path):
    path = tmp_path / "x.tiktoken"
    path.write_bytes(b"this is not base64!!! 12\nYQ== 0\n")
    with pytest.raises(tokserve.ArtifactError, match="line 1"):
        tokserve.load(path, preset="cl100k_base")


def test_a_tokenizer_json_without_the_suffix_loads_by_content(tmp_path):
    from tokserve.decoders.byte_level import bytes_to_unicode

    table = bytes_to_unicode()
    spec = {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
            "decoder": {"type": "ByteLevel"}, "added_tokens": [],
            "model": {"type": "BPE", "vocab": {table[b]: b for b in range(256)}, "merges": []}}
    path = tmp_path / "tokenizer"
    path.write_text(json.dumps(spec))
    assert sniff(path).name == "tokenizer_json"
    assert tokserve.load(path).encode("hi") == [ord("h"), ord("i")]


def test_a_sentencepiece_model_loads_as_the_tokenizer_json_it_converts_to(tmp_path):
    path = tmp_path / "m" / "tokenizer.model"
    path.parent.mkdir()
    path.write_bytes(train(model_type="unigram", control_symbols=["<ctl>"]))
    art = formats.load_artifact(path)
    assert art.format == "sentencepiece" and art.name == "m" and art.is_pieces
    assert (art.bos_token, art.eos_token) == ("<s>", "</s>")
    spec = sentencepiece_tokenizer_json(path)
    assert art.normalizer == spec["normalizer"]
    assert art.post_processor == spec["post_processor"]  # BOS added, as sentencepiece's default
    other = formats.load_sentencepiece(path, name="x", config={"add_bos_token": False,
                                                              "add_eos_token": True})
    assert other.post_processor["single"][-1] == {"SpecialToken": {"id": "</s>", "type_id": 0}}
    assert other.name == "x" and other.hash != art.hash


def test_the_readable_kinds_are_listed_in_every_refusal():
    for name in ("unknown", "json", "empty"):
        kind = sniff_bytes(HEADS[name])
        assert READABLE in refusal(Path("f"), kind)
    assert refusal(Path("f"), sniff_bytes(HEADS["tiktoken"]), "a SentencePiece model") == (
        "f is a tiktoken rank file (base64 token and rank per line), not a SentencePiece model")
    assert base64.b64decode(HEADS["tiktoken"].split(b" ")[0])  # the rank file's first token
    assert json.loads(HEADS["tekken"])["config"]
