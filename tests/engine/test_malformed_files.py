"""Every malformed tokenizer file is one ``ArtifactError`` naming what is wrong, with ids
printed exactly, never another exception from deep inside a loader (issue 33, point 8;
file_checks.py)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

import tokserve
from tokserve.decoders.byte_level import bytes_to_unicode
from tokserve.file_checks import MAX_TOKEN_ID

_BYTE = bytes_to_unicode()


def _spec() -> dict:
    """A valid byte-level tokenizer.json: the 256 bytes, no merges."""
    return {"normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel"}, "added_tokens": [],
            "model": {"type": "BPE", "vocab": {_BYTE[b]: b for b in range(256)}, "merges": []}}


def _with(edit) -> dict:
    spec = _spec()
    edit(spec)
    return spec


def _deep(levels: int) -> dict:
    node: dict = {"type": "NFC"}
    for _ in range(levels):
        node = {"type": "Sequence", "normalizers": [node]}
    return node


CASES = {  # label -> (tokenizer.json, what the message must say)
    "vocab id a string": (_with(lambda s: s["model"]["vocab"].update({_BYTE[0]: "0"})),
                          "token id '0' is not an integer"),
    "vocab id a bool": (_with(lambda s: s["model"]["vocab"].update({_BYTE[0]: True})),
                        "token id True is not an integer"),
    "vocab id 2**62": (_with(lambda s: s["model"]["vocab"].update({"ab": 2**62})),
                       "token id 4611686018427387904 is out of range"),
    "vocab id 2**32+24912": (_with(lambda s: s["model"]["vocab"].update({"ab": 2**32 + 24912})),
                             "token id 4294992208 is out of range"),
    "vocab id 2**64": (_with(lambda s: s["model"]["vocab"].update({"ab": 2**64})),
                       f"token id {2**64} is out of range"),
    "vocab id given twice": (_with(lambda s: s["model"]["vocab"].update({"ab": 5})),
                             "model.vocab gives id 5 to both"),
    "missing vocab": (_with(lambda s: s["model"].pop("vocab")), "model.vocab must be an object"),
    "vocab a list": (_with(lambda s: s["model"].update(vocab=[])), "model.vocab must be an object"),
    "no model": (_with(lambda s: s.pop("model")), "has no 'model' object"),
    "added token without content": (
        _with(lambda s: s["added_tokens"].append({"id": 256, "special": True})),
        "added_tokens[0] has no 'content'"),
    "added token without id": (
        _with(lambda s: s["added_tokens"].append({"content": "<x>"})), "has no 'id'"),
    "empty special token": (
        _with(lambda s: s["added_tokens"].append({"id": 256, "content": "", "special": True})),
        "empty content"),
    "added token id 2**62": (
        _with(lambda s: s["added_tokens"].append({"id": 2**62, "content": "<x>"})),
        "token id 4611686018427387904 is out of range"),
    "added_tokens an object": (_with(lambda s: s.update(added_tokens={"a": 1})),
                               "added_tokens must be a list"),
    "merge of one item": (_with(lambda s: s["model"].update(merges=[["a"]])),
                          "model.merges[0] is ['a']"),
    "merge a number": (_with(lambda s: s["model"].update(merges=[5])), "model.merges[0] is 5"),
    "merges an object": (_with(lambda s: s["model"].update(merges={})), "merges must be a list"),
    "invalid Split regex": (
        _with(lambda s: s.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]})),
        "pattern '(unclosed' is not a valid regex"),
    "catastrophic Split regex": (
        _with(lambda s: s.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"(\w+\s?)+$"}, "behavior": "Isolated"},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]})),
        "backtracks catastrophically"),
    "normalizer a string": (_with(lambda s: s.update(normalizer="NFC")),
                            "normalizer must be an object or null"),
    "Sequence of strings": (_with(lambda s: s.update(normalizer={
        "type": "Sequence", "normalizers": ["NFC"]})), "is not an object"),
    "stage nested too deep": (_with(lambda s: s.update(normalizer=_deep(40))),
                              "nested deeper than 32 levels"),
}


@pytest.mark.parametrize("label", CASES)
def test_malformed_tokenizer_json_is_one_named_artifact_error(tmp_path, label):
    spec, message = CASES[label]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(tokserve.ArtifactError) as info:
        tokserve.load(path)
    assert message in info.value.message and "\n" not in info.value.message


@pytest.mark.parametrize("data, message", [
    (json.dumps(_spec()).encode("utf-16"), "UTF-16 or UTF-32"),
    (json.dumps(_spec()).encode("utf-16-le"), "UTF-16 or UTF-32"),
    (json.dumps(_spec()).encode("utf-32"), "UTF-16 or UTF-32"),
    (b'{"model": "\xff"}', "is not UTF-8: byte 11"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"", "not valid JSON"),
], ids=["utf-16", "utf-16-le", "utf-32", "latin-1", "deep", "empty"])
def test_unreadable_json_is_named(tmp_path, data, message):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(data)
    with pytest.raises(tokserve.ArtifactError, match=re.escape(message)):
        tokserve.load(path)


def test_a_utf8_byte_order_mark_is_still_accepted(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_spec()).encode())
    assert tokserve.load(path).encode("hi") == [ord("h"), ord("i")]


def test_rank_file_ids_out_of_range_are_printed_exactly(tmp_path):
    """The image builder once reported the id's low 32 bits ("token id 24912")."""
    path = tmp_path / "r.tiktoken"
    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)]
    path.write_bytes(b"\n".join(lines + [b"YWI= 4294992208"]) + b"\n")
    with pytest.raises(tokserve.ArtifactError, match="token id 4294992208 is out of range"):
        tokserve.load(path, pattern=r"\S+|\s+")
    with pytest.raises(tokserve.ArtifactError, match="token id 2147483647 is out of range"):
        tokserve.load(path, pattern=r"\S+|\s+", special_tokens={"<x>": MAX_TOKEN_ID + 1})
    path.write_bytes(b"\n".join(lines).decode().encode("utf-16"))
    with pytest.raises(tokserve.ArtifactError, match=f"{re.escape(str(path))} is UTF-16"):
        tokserve.load(path, pattern=r"\S+|\s+")


@pytest.mark.parametrize("specials, message", [
    ({"": 300}, "empty content"),
    ({"<x>": "300"}, "token id '300' is not an integer"),
    ({"<x>": 2**62}, "token id 4611686018427387904 is out of range"),
])
def test_manifest_special_tokens_are_checked(tmp_path, specials, message):
    from tokserve.authoring.manifest import _dump

    source = tokserve.bundled_root() / "cl100k_base" / "1"
    version = tmp_path / "cl" / "1"
    version.mkdir(parents=True)
    (version / "cl100k_base.tiktoken").write_bytes((source / "cl100k_base.tiktoken").read_bytes())
    manifest = json.loads((source / "manifest.json").read_text())
    manifest.update(special_tokens=specials, tokenizer_hash=None)
    _dump(version / "manifest.json", manifest)
    with pytest.raises(tokserve.ArtifactError, match=re.escape(message)):
        tokserve.load(version)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t["config"].pop("pattern"), "is not a tekken file"),
    (lambda t: t["config"].update(default_num_special_tokens="3"), "is not an integer"),
    (lambda t: t["special_tokens"].append({"rank": 9}), "malformed tekken entry"),
    (lambda t: t["special_tokens"].append({"rank": 9, "token_str": ""}), "empty content"),
    (lambda t: t["vocab"][0].update(token_bytes="!!"), "malformed tekken entry"),
    (lambda t: t["vocab"].__setitem__(0, "x"), "malformed tekken entry"),
])
def test_malformed_tekken_files_are_named(tmp_path, edit, message):
    spec = {"config": {"pattern": r"\S+|\s+", "default_num_special_tokens": 3,
                       "default_vocab_size": 259},
            "vocab": [{"rank": b, "token_bytes": base64.b64encode(bytes([b])).decode()}
                      for b in range(256)],
            "special_tokens": [{"rank": 0, "token_str": "<unk>"}, {"rank": 1, "token_str": "<s>"},
                               {"rank": 2, "token_str": "</s>"}]}
    path = Path(tmp_path / "tekken.json")
    path.write_text(json.dumps(spec))
    assert tokserve.load(path).encode("hi", add_special_tokens=True)[0] == 1
    edit(spec)
    path.write_text(json.dumps(spec))
    with pytest.raises(tokserve.ArtifactError, match=re.escape(message)):
        tokserve.load(path)
