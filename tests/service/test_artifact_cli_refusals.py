"""``tokserve artifact import|export`` and ``tokserve train`` refuse hostile input with one
line and exit 2, write nothing outside ``--out`` and leave no debris; a served root skips
what it cannot address (issue 33, points 4, 5, 7 and 8).

Commands run as a user runs them (``python -m tokserve.service``, as in
test_artifact_cli.py); the reload case drives the service's registry in process.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

import tokserve
from tokserve.patterns import O200K

REPO = Path(__file__).resolve().parents[2]
RANKS = REPO / "artifacts/cl100k_base/1/cl100k_base.tiktoken"


def run_cli(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokserve.service", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def refused(out: subprocess.CompletedProcess, *parts: str) -> None:
    """Exit 2, one line on stderr naming ``parts``, no traceback."""
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert all(part in out.stderr for part in parts), out.stderr


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("flag, value", [
    ("--name", "../../../x"), ("--name", ".."), ("--name", "ABS"), ("--name", "a@b"),
    ("--name", "a\nb"), ("--name", ""), ("--version", "../1"), ("--version", "1@2"),
], ids=repr)
def test_import_refuses_names_outside_the_grammar_and_writes_nothing(tmp_path, flag, value):
    out_root = tmp_path / "a" / "b" / "out"
    out_root.mkdir(parents=True)
    value = str(tmp_path / "abs") if value == "ABS" else value
    args = {"--name": "ok", "--version": "1", flag: value}
    out = run_cli("artifact", "import", RANKS, "--out", out_root, "--preset", "cl100k_base",
                  *[x for kv in args.items() for x in kv])
    refused(out, f"invalid {flag[2:]}", "letters, digits")
    assert tree(tmp_path) == ["a", "a/b", "a/b/out"]


def _hf_source(tmp_path: Path, data: bytes) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "tokenizer.json").write_bytes(data)
    return source


def _tiny() -> dict:
    from tokserve.decoders.byte_level import bytes_to_unicode

    table = bytes_to_unicode()
    return {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
            "decoder": {"type": "ByteLevel"}, "added_tokens": [],
            "model": {"type": "BPE", "vocab": {table[b]: b for b in range(256)}, "merges": []}}


def _edited(edit) -> bytes:
    spec = _tiny()
    edit(spec)
    return json.dumps(spec).encode()


@pytest.mark.parametrize("data, message", [
    (_edited(lambda s: s["model"]["vocab"].update({"ab": "300"})), "token id '300' is not"),
    (_edited(lambda s: s["model"].pop("vocab")), "model.vocab must be an object"),
    (_edited(lambda s: s["added_tokens"].append({"id": 300})), "has no 'content'"),
    (_edited(lambda s: s["added_tokens"].append({"id": 2**62, "content": "<x>"})),
     "token id 4611686018427387904 is out of range"),
    (_edited(lambda s: s["model"]["vocab"].update({"ab": 2**32 + 24912})),
     "token id 4294992208 is out of range"),
    (_edited(lambda s: s["added_tokens"].append({"id": 300, "content": ""})), "empty content"),
    (_edited(lambda s: s.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "[unclosed"}},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]})),
     "is not a valid regex"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (json.dumps(_tiny()).encode("utf-16"), "UTF-16"),
], ids=["id-string", "no-vocab", "no-content", "id-2**62", "id-2**32+24912", "empty-special",
        "bad-split-regex", "deep", "utf-16"])
def test_import_of_a_malformed_file_is_one_line_exit_2_and_no_debris(tmp_path, data, message):
    source = _hf_source(tmp_path, data)
    out = run_cli("artifact", "import", source, "--name", "bad", "--version", "1",
                  "--out", tmp_path / "out")
    refused(out, message, str(source / "tokenizer.json") if message != "is not a valid regex"
            else "Split")
    assert ".partial" not in out.stderr
    assert tree(tmp_path / "out") == []  # the failed version's directory is gone


def test_import_pattern_takes_a_name_and_refuses_catastrophic_regexes(tmp_path):
    out = run_cli("artifact", "import", RANKS, "--name", "o", "--version", "1", "--out",
                  tmp_path, "--pattern", "o200k_base")
    assert out.returncode == 0, out.stderr
    tok = tokserve.load(tmp_path / "o" / "1")
    assert tok.manifest["pattern"] == O200K.text
    same = tokserve.load(RANKS, pattern=O200K.text, special_tokens={})
    text = "Hello world, it's 12345 naïve 東京!\n"
    assert tok.encode(text) == same.encode(text) != []
    bad = run_cli("artifact", "import", RANKS, "--name", "slow", "--version", "1", "--out",
                  tmp_path, "--pattern", r"(a|a)+b|[^a]+|a")
    refused(bad, "backtracks catastrophically", "'(a|a)+'")
    typo = run_cli("artifact", "import", RANKS, "--name", "typo", "--version", "1", "--out",
                   tmp_path, "--pattern", "o200k")
    refused(typo, "unknown pattern name 'o200k'")
    assert tree(tmp_path) == ["o", "o/1"] + [f"o/1/{f}" for f in sorted(
        p.name for p in (tmp_path / "o" / "1").iterdir())]


def test_import_merges_preset_specials_and_names_bos_and_eos(tmp_path):
    out = run_cli("artifact", "import", RANKS, "--name", "chat", "--version", "1", "--out",
                  tmp_path, "--preset", "cl100k_base", "--special-tokens",
                  '{"<|im_start|>": 100264, "<|im_end|>": 100265}', "--bos-token",
                  "<|im_start|>", "--eos-token", "<|im_end|>")
    assert out.returncode == 0, out.stderr
    manifest = json.loads((tmp_path / "chat" / "1" / "manifest.json").read_text())
    assert manifest["special_tokens"]["<|endoftext|>"] == 100257  # the preset's stay
    assert manifest["special_tokens"]["<|im_end|>"] == 100265
    assert (manifest["bos_token"], manifest["eos_token"]) == ("<|im_start|>", "<|im_end|>")
    clash = run_cli("artifact", "import", RANKS, "--name", "chat", "--version", "2", "--out",
                    tmp_path, "--preset", "cl100k_base", "--special-tokens",
                    '{"<|endoftext|>": 1}')
    refused(clash, "'<|endoftext|>' id 1", "as 100257")
    missing = run_cli("artifact", "import", RANKS, "--name", "chat", "--version", "3", "--out",
                      tmp_path, "--preset", "cl100k_base", "--eos-token", "<|im_end|>")
    refused(missing, "--eos-token '<|im_end|>' is not one of the special tokens")
    not_json = run_cli("artifact", "import", RANKS, "--name", "chat", "--version", "4", "--out",
                       tmp_path, "--preset", "cl100k_base", "--special-tokens", "{bad")
    refused(not_json, "--special-tokens is not JSON")
    empty = run_cli("artifact", "import", RANKS, "--name", "chat", "--version", "5", "--out",
                    tmp_path, "--pattern", "")
    refused(empty, "the pattern is empty")
    assert sorted(p.name for p in (tmp_path / "chat").iterdir()) == ["1"]


def test_train_export_and_one_shot_refuse_bad_names_first(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world " * 50, encoding="utf-8")
    train = run_cli("train", "--corpus", corpus, "--vocab-size", "300", "--name", "../x",
                    "--version", "1", "--out", tmp_path / "root", "--no-progress",
                    "--workers", "1")
    assert train.returncode == 2 and "invalid name '../x'" in train.stderr, train.stderr
    assert "Traceback" not in train.stderr and not (tmp_path / "root").exists()
    export = run_cli("artifact", "export", "--format", "hf", "../no-such-dir", "--out",
                     tmp_path)  # not a path that exists: a name, so checked as one
    refused(export, "invalid name '../no-such-dir'")
    encode = run_cli("encode", "hi", "--tokenizer", "o200k_base@../1")
    refused(encode, "invalid version '../1'")


def test_reload_skips_partial_leftovers_silently_and_bad_names_with_a_warning(tmp_path, caplog):
    from tokserve.service.runtime.registry import Registry

    good = run_cli("artifact", "import", RANKS, "--name", "cl", "--version", "1", "--out",
                   tmp_path, "--preset", "cl100k_base")
    assert good.returncode == 0, good.stderr
    failed = run_cli("artifact", "import", RANKS, "--name", "cl", "--version", "2", "--out",
                     tmp_path, "--pattern", r"(a+)+")
    assert failed.returncode == 2 and tree(tmp_path / "cl") == sorted(
        ["1"] + [f"1/{p.name}" for p in (tmp_path / "cl" / "1").iterdir()])
    leftover = tmp_path / "cl" / ".3.partial"  # as a killed import would leave it
    leftover.mkdir()
    (leftover / "manifest.json").write_text("{}")
    (tmp_path / "cl" / "1").rename(tmp_path / "cl" / "1@x")  # unaddressable: never served
    (tmp_path / "cl" / "2").mkdir()
    for f in (tmp_path / "cl" / "1@x").iterdir():
        (tmp_path / "cl" / "2" / f.name).write_bytes(f.read_bytes())
    manifest = json.loads((tmp_path / "cl" / "2" / "manifest.json").read_text())
    manifest["version"] = "2"
    (tmp_path / "cl" / "2" / "manifest.json").write_text(json.dumps(manifest))
    registry = Registry()
    with caplog.at_level(logging.INFO):
        report = registry.sync([tmp_path])
    assert report.added == ["cl@2"] and report.failed == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "'1@x'" in warnings[0]
