"""Import round trips: an imported artifact gives the reference library's ids.

References: tiktoken (rank files), ``tokenizers`` (tokenizer.json), mistral-common
(tekken). Files come from ../shared; each case skips, naming the file, without it.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from corpus import build_corpus, is_valid_text
from shared_files import shared_file

import tokserve
from tokserve.authoring import importers
from tokserve.loading import verify_directory
from tokserve.presets import PRESETS

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "artifacts"


def _corpus() -> list[str]:
    """An eighth of the differential corpus (every family: scripts, whitespace, digits,
    emoji, code, recent Unicode) plus random strings over an alphabet where the
    pre-tokenizer's alternatives meet."""
    rng = random.Random(7)
    alphabet = [chr(c) for c in (list(range(32, 127)) * 6 + list(range(0x400, 0x460))
                                 + list(range(0x4E00, 0x4E60)) + list(range(0x600, 0x640))
                                 + [0x1F600, 0x1F44D, 0x1F3FD, 0x200D, 0x301, 0xA0, 0x3000,
                                    0x0A, 0x0D, 0x09, 0x2028, 0x323B0, 0x1FAE9])]
    texts = ["Hello, world!", "I'm sure they'd've SAID it's OK", "  x\n\n\t y  ", "1234567 89",
             "👨‍👩‍👧‍👦 e\u0301", "def f(x):\n    return x ** 2\n"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300)))
              for _ in range(400)]
    texts += [case.text for case in build_corpus()[::8] if is_valid_text(case.text)]
    return texts


def _need(path: Path) -> Path:
    return shared_file(f"artifacts/{path.relative_to(SHARED).as_posix()}")


@pytest.mark.parametrize("preset, rel", [
    ("cl100k_base", "openai/cl100k_base.tiktoken"),
    ("o200k_base", "openai/o200k_base.tiktoken"),
    ("llama3", "meta-llama3/tokenizer.model"),
    ("qwen", "qwen/qwen.tiktoken"),
])
def test_importers_tiktoken_round_trip(tmp_path, preset, rel):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    src = _need(SHARED / rel)
    manifest = importers.import_any(src, tmp_path, preset, "1", preset=preset)
    tok = tokserve.load(tmp_path / preset / "1")
    assert tok.hash == manifest["tokenizer_hash"]
    p = PRESETS[preset]
    ref = tiktoken.Encoding(preset, pat_str=p.pattern, mergeable_ranks=load_tiktoken_bpe(str(src)),
                            special_tokens=p.special_tokens)
    for text in _corpus():
        assert tok.encode(text, special_tokens="text") == ref.encode_ordinary(text), text


def test_importers_hf_round_trip(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    src = _need(SHARED / "deepseek-v4" / "tokenizer.json").parent
    importers.import_any(src, tmp_path, "deepseek-v4", "7")
    tok = tokserve.load(tmp_path / "deepseek-v4" / "7")
    ref = tokenizers.Tokenizer.from_file(str(src / "tokenizer.json"))
    for text in _corpus():
        assert tok.encode(text, special_tokens="allow") == ref.encode(
            text, add_special_tokens=False).ids, text


def test_importers_tekken_round_trip(tmp_path):
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
    src = _need(SHARED / "mistral-tekken" / "tekken_240718.json")
    importers.import_any(src, tmp_path, "tekken", "1")
    tok = tokserve.load(tmp_path / "tekken" / "1")
    ref = tekken.Tekkenizer.from_file(str(src))
    for text in _corpus():
        assert tok.encode(text, special_tokens="text") == ref.encode(text, False, False), text
    assert tok.encode("hi", add_special_tokens=True) == ref.encode("hi", True, False)


def test_importers_verify_detects_tampering(tmp_path):
    src = tokserve.bundled_root() / "cl100k_base" / "1" / "cl100k_base.tiktoken"
    importers.import_any(src, tmp_path, "cl", "1", preset="cl100k_base")
    version = tmp_path / "cl" / "1"
    assert verify_directory(version)["name"] == "cl"
    target = version / "cl100k_base.tiktoken"
    data = bytearray(target.read_bytes())
    data[-3] ^= 0x04
    target.write_bytes(bytes(data))
    with pytest.raises(tokserve.ArtifactError, match="does not match the manifest"):
        verify_directory(version)


def test_importers_versions_are_immutable(tmp_path):
    src = tokserve.bundled_root() / "cl100k_base" / "1" / "cl100k_base.tiktoken"
    importers.import_any(src, tmp_path, "cl", "1", preset="cl100k_base")
    with pytest.raises(tokserve.ArtifactError, match="immutable"):
        importers.import_any(src, tmp_path, "cl", "1", preset="cl100k_base")
