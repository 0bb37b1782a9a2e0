"""Export to Hugging Face tokenizers: ``tokserve train --format hf`` and
``tokserve artifact export --format hf`` write a tokenizer.json that
``tokenizers.Tokenizer.from_file`` loads and encodes to our ids exactly."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokserve
from tokserve.models.bpe import trainer as T
from tokserve.service.artifact_cli import train as train_cli
from tokserve.service.cli import main as cli_main

tokenizers = pytest.importorskip("tokenizers")

MAX_EXAMPLES = int(os.environ.get("TOKSERVE_HYPOTHESIS_MAX_EXAMPLES", "200"))
SPECIALS = ["<|endoftext|>", "<|sep|>"]
WORDS = ["hello", " world", " the", "ing", " 日本語", "Привет", "  ", "\n", "\r\n", "123",
         "4567", " éa", "🙂", "👍🏽", "'s", "'LL", "!!", " ...", "\t", "a" * 30, "ab" * 20,
         "<|endoftext|>", "<|sep|>", "<|sep", "x", "Q"]

mixed_text = st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=8)),
                      max_size=40).map("".join)


def _corpus(seed: int, n: int = 40_000) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(WORDS) + rng.choice([" ", "", "\n"]) for _ in range(n // 5))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small vocabulary trained with ``--format hf``: ours and tokenizers' views."""
    root = tmp_path_factory.mktemp("hf")
    corpus = root / "corpus.txt"
    corpus.write_text(_corpus(1), encoding="utf-8")
    assert train_cli(["--corpus", str(corpus), "--vocab-size", "700", "--name", "mini",
                      "--version", "1", "--out", str(root), "--format", "hf",
                      "--special-tokens", *SPECIALS, "--no-progress"]) == 0
    vdir = root / "mini" / "1"
    return tokserve.load(vdir), tokenizers.Tokenizer.from_file(str(vdir / "tokenizer.json"))


def test_export_written_beside_the_manifest_and_hashed(trained):
    ours, _ = trained
    manifest = ours.manifest
    assert manifest["exports"] == {"hf": "tokenizer.json"}
    assert "tokenizer.json" in manifest["files"]  # verified at load like every file
    assert manifest["format"] == "tiktoken"


@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True)
@given(text=mixed_text)
def test_export_trained_tokenizer_json_encodes_to_our_ids(trained, text):
    ours, theirs = trained
    assert theirs.encode(text, add_special_tokens=False).ids == ours.encode(
        text, special_tokens="allow")


def test_export_trained_on_its_corpus_and_decodes_back(trained):
    ours, theirs = trained
    text = _corpus(2, 20_000)
    ids = ours.encode(text, special_tokens="allow")
    assert theirs.encode(text, add_special_tokens=False).ids == ids
    assert theirs.decode(ids, skip_special_tokens=False) == text


def test_export_bundled_o200k_base_equals_its_ids(tmp_path):
    """tiktoken's own vocabulary through the CLI: every id of a varied corpus agrees."""
    from corpus import build_corpus

    assert cli_main(["artifact", "export", "--format", "hf", "o200k_base",
                     "--out", str(tmp_path)]) == 0
    theirs = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = tokserve.load("o200k_base")
    for case in build_corpus(0.2):
        text = case[1] if isinstance(case, tuple) else case.text
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            continue  # tokenizers takes only valid text
        assert theirs.encode(text, add_special_tokens=False).ids == ours.encode(
            text, special_tokens="allow"), text[:80]


def test_export_refuses_a_pattern_tokenizers_splits_otherwise(tmp_path, capsys):
    """cl100k_base's pattern means something else to Oniguruma (``$``): refused, not
    exported approximately."""
    assert cli_main(["artifact", "export", "--format", "hf", "cl100k_base",
                     "--out", str(tmp_path)]) == 2
    assert "cl100k_base" not in os.listdir(tmp_path)
    assert "splits it differently" in capsys.readouterr().err
    corpus = tmp_path / "c.txt"
    corpus.write_text(_corpus(3, 5000), encoding="utf-8")
    with pytest.raises(tokserve.UnsupportedArtifact):
        T.train([str(corpus)], 300, out=tmp_path, name="cl", version="1",
                pattern="cl100k_base", formats=("tiktoken", "hf"))
    assert not (tmp_path / "cl").exists()
