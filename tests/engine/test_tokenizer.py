"""Tokenizer entry points: load errors, encode_batch, count, and pathological inputs.

* Loading a missing, corrupt or unsupported artifact raises the engine's typed errors
  (ArtifactError / UnsupportedArtifact with a stable ``code``), never a bare exception
  and never a tokenizer that would silently produce different ids.
* ``encode_batch(xs)[i] == encode(xs[i])`` in input order for any thread count, and
  ``count(x) == len(encode(x))`` for every policy and ``add_special_tokens``.
* A megabyte of one repeated letter, of spaces or of base64 completes and round-trips
  (the speed of it is measured in benchmarks/engine_bench.py, not here).
"""

from __future__ import annotations

import base64
import json
import random
import shutil

import pytest

import tokserve
from conformance.references import TOKENIZER_FILES, artifact_file
from corpus import build_corpus, is_valid_text, literal_cases

# ============================================================================ load errors


def test_missing_file_is_artifact_error(tmp_path):
    with pytest.raises(tokserve.ArtifactError) as info:
        tokserve.load(str(tmp_path / "absent.tiktoken"), preset="cl100k_base")
    assert info.value.code == "artifact_error"
    assert "absent.tiktoken" in str(info.value)
    with pytest.raises(tokserve.ArtifactError):
        tokserve.load(str(tmp_path / "absent" / "tokenizer.json"))


def test_unknown_bundled_name_is_artifact_error():
    with pytest.raises(tokserve.ArtifactError):
        tokserve.load("no_such_tokenizer_name")


def test_unknown_preset_is_artifact_error():
    path = artifact_file(TOKENIZER_FILES["cl100k_base"][0])
    with pytest.raises(tokserve.ArtifactError) as info:
        tokserve.load(str(path), preset="gpt9_base")
    assert "gpt9_base" in str(info.value)


@pytest.mark.parametrize("content", [
    b"this is not base64!!! 12\n",
    b"YWJj notanumber\n",
    b"YWJj\n",
    b"\xff\xfe\x00garbage",
])
def test_corrupt_tiktoken_file_is_artifact_error(tmp_path, content):
    path = tmp_path / "corrupt.tiktoken"
    path.write_bytes(content)
    with pytest.raises(tokserve.ArtifactError):
        tokserve.load(str(path), preset="cl100k_base")


@pytest.fixture(scope="module")
def deepseek_json() -> dict:
    return json.loads(artifact_file(TOKENIZER_FILES["deepseek-v4"][0]).read_text("utf-8"))


@pytest.mark.parametrize("content", ['{"model": ', "[]", '{"version": "1.0"}', "\x00\x01"])
def test_corrupt_tokenizer_json_is_artifact_error(tmp_path, content):
    path = tmp_path / "tokenizer.json"
    path.write_text(content)
    with pytest.raises(tokserve.ArtifactError):
        tokserve.load(str(path))


def test_truncated_tokenizer_json_is_artifact_error(tmp_path):
    source = artifact_file(TOKENIZER_FILES["deepseek-v4"][0]).read_bytes()
    path = tmp_path / "tokenizer.json"
    path.write_bytes(source[: len(source) // 2])
    with pytest.raises(tokserve.ArtifactError):
        tokserve.load(str(path))


def _set(spec: dict, dotted: str, value) -> dict:
    spec = json.loads(json.dumps(spec))
    node = spec
    *parents, last = dotted.split(".")
    for key in parents:
        node = node[key]
    node[last] = value
    return spec


@pytest.mark.parametrize(("dotted", "value", "named"), [
    ("model.type", "WordPiece", "WordPiece"),
    ("model.dropout", 0.1, "dropout"),
    ("model.byte_fallback", True, "byte_fallback"),
    ("normalizer", {"type": "Lowercase"}, "Lowercase"),
    ("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip",
                                                          "strip_left": True, "strip_right": True}]},
     "Strip"),
    ("pre_tokenizer", {"type": "Whitespace"}, "Whitespace"),
    ("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{"type": "Metaspace", "replacement": "▁",
                                                              "prepend_scheme": "always", "split": True}]},
     # no ByteLevel pre-tokenizer: read as a piece tokenizer, whose decoders are not byte-level
     "decoder: decoder 'ByteLevel'"),
    ("decoder", {"type": "WordPiece", "prefix": "##", "cleanup": True}, "WordPiece"),
    ("post_processor", {"type": "BertProcessing", "sep": ["[SEP]", 1], "cls": ["[CLS]", 0]},
     "BertProcessing"),
])
def test_unsupported_feature_is_named(tmp_path, deepseek_json, dotted, value, named):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_set(deepseek_json, dotted, value)), encoding="utf-8")
    with pytest.raises(tokserve.UnsupportedArtifact) as info:
        tokserve.load(str(path))
    assert info.value.code == "unsupported_artifact"
    assert named in str(info.value)


def test_artifact_dir_hash_mismatch_names_the_file(tmp_path):
    source = tokserve.bundled_root() / "o200k_base"
    if not source.is_dir():
        pytest.skip(f"missing bundled artifact {source}")
    version = max(p for p in source.iterdir() if (p / "manifest.json").exists())
    target = tmp_path / "o200k_base" / version.name
    shutil.copytree(version, target)
    manifest = json.loads((target / "manifest.json").read_text())
    victim = target / manifest["tokenizer_file"]
    data = bytearray(victim.read_bytes())
    data[100] ^= 1
    victim.write_bytes(bytes(data))
    with pytest.raises(tokserve.ArtifactError) as info:
        tokserve.load(str(target))
    assert manifest["tokenizer_file"] in str(info.value)


# ============================================================================ batch and count


@pytest.fixture(scope="module")
def texts() -> list[str]:
    corpus = build_corpus()
    return [c.text for i, c in enumerate(corpus) if i % 40 == 0]


@pytest.mark.parametrize("threads", [None, 1, 2, 4])
def test_encode_batch_equals_encode_in_order(pair, texts, threads):
    tok = pair.ours
    for policy in ("allow", "text"):
        batch = tok.encode_batch(texts, special_tokens=policy, num_threads=threads)
        assert batch == [tok.encode(t, special_tokens=policy) for t in texts]
    batch = tok.encode_batch(texts, special_tokens="text", add_special_tokens=True,
                             num_threads=threads)
    assert batch == [tok.encode(t, special_tokens="text", add_special_tokens=True) for t in texts]
    for policy in ("allow", "text"):  # "text": every text one segment, the direct path
        counts = tok.count_batch(texts, special_tokens=policy, add_special_tokens=True,
                                 num_threads=threads)
        assert counts == [len(tok.encode(t, special_tokens=policy, add_special_tokens=True))
                          for t in texts]


def test_encode_batch_edge_cases(pair):
    tok = pair.ours
    assert tok.encode_batch([]) == []
    assert tok.encode_batch(["", "a", ""]) == [[], tok.encode("a"), []]
    literal = sorted(tok.special_tokens)[0]
    with pytest.raises(tokserve.SpecialTokenInText):
        tok.encode_batch(["fine " * 4000, f"bad {literal}"], num_threads=2)
    with pytest.raises(tokserve.SpecialTokenInText):
        tok.count_batch(["fine " * 4000, f"bad {literal}"], num_threads=2)


def test_concurrent_batches_share_the_worker_pool(o200k_pair, texts):
    """Batches from several Python threads at once: one takes the native worker pool,
    the others run on their own threads; every result is the serial one."""
    from concurrent.futures import ThreadPoolExecutor

    tok = o200k_pair.ours
    assert sum(map(len, texts)) > 16384  # large enough to use the pool
    expected = [tok.encode(t, special_tokens="text") for t in texts]
    counts = [len(ids) for ids in expected]

    def run(k: int) -> bool:
        if k % 2:
            return tok.count_batch(texts, special_tokens="text", num_threads=2) == counts
        return tok.encode_batch(texts, special_tokens="text", num_threads=2) == expected

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, range(16)))


def test_count_equals_len_encode(pair, texts):
    tok = pair.ours
    cases = texts + [t for _, t in literal_cases(random.Random(5), list(tok.special_tokens), 40)]
    for text in cases:
        for policy in ("reject", "allow", "text"):
            for add in (False, True):
                try:
                    ids = tok.encode(text, special_tokens=policy, add_special_tokens=add)
                except tokserve.SpecialTokenInText:
                    with pytest.raises(tokserve.SpecialTokenInText):
                        tok.count(text, special_tokens=policy, add_special_tokens=add)
                    continue
                assert tok.count(text, special_tokens=policy, add_special_tokens=add) == len(ids)


# ============================================================================ the direct path
# An encode or count whose text is one ordinary segment as it is goes to the model in
# one call that reads the str's UTF-8 in place (BpeModel.encode_text); anything else
# falls back to the general path. Both must give the reference's ids.


class _Str(str):
    """A str subclass: the direct path leaves it to the general one."""


def test_direct_path_falls_back_where_it_must(tiktoken_pair):
    tok, ref = tiktoken_pair.ours, tiktoken_pair.ref
    model, heads = tok._model, tok._added.direct["reject"]
    literal = sorted(tok.special_tokens)[0]
    assert model.encode_text("hello world") == ref.encode("hello world", "text")
    assert model.count_text("hello world") == len(ref.encode("hello world", "text"))
    for other in (b"hello", _Str("hello"), "a\ud800b", 7):
        assert model.encode_text(other) is None and model.count_text(other) == -1
    assert model.encode_text(f"a {literal}", heads) is None  # the policy looks for it
    assert model.encode_text(f"a {literal}") == ref.encode(f"a {literal}", "text")
    # the general path answers these (a lone surrogate is replaced, as tiktoken does)
    for text, repaired in ((_Str("hello wörld"), "hello wörld"), ("a\ud800b", "a\ufffdb")):
        assert tok.encode(text, special_tokens="text") == ref.encode(repaired, "text")
        assert tok.count(text, special_tokens="text") == len(ref.encode(repaired, "text"))


@pytest.mark.parametrize("size", [2047, 2048, 2049, 70000])
def test_direct_path_either_side_of_keeping_the_gil(tiktoken_pair, size):
    """Short texts are merged holding the GIL, longer ones without it: same ids."""
    tok, ref = tiktoken_pair.ours, tiktoken_pair.ref
    rng = random.Random(size)
    words = ["tokens", " naïve", " 東京", " 🎉", "\n", " 12345", " the"]
    text = ""
    while len(text.encode("utf-8")) < size:
        text += rng.choice(words)
    text = text.encode("utf-8")[:size].decode("utf-8", "ignore")
    text += "x" * (size - len(text.encode("utf-8")))  # exactly ``size`` bytes
    assert len(text.encode("utf-8")) == size
    expected = ref.encode(text, "text")
    assert tok.encode(text, special_tokens="text") == expected
    assert tok.encode(text, special_tokens="text") == expected  # its UTF-8 kept by CPython
    assert tok.count(text, special_tokens="reject") == len(expected)
    assert tok.encode_batch([text, text], special_tokens="text") == [expected, expected]


def test_words_whose_bytes_never_merge_match_the_reference(tiktoken_pair):
    """Armenian and Georgian words: on cl100k_base most of their byte pairs are no
    token, so the model answers them without merging; ids must still be tiktoken's."""
    text = ("Հայաստանի Հանրապետություն Երևան քաղաքում, Բենինի Հորդանան "
            "საქართველოს დედაქალაქი თბილისი ქართული ენა")
    tok, ref = tiktoken_pair.ours, tiktoken_pair.ref
    assert tok.encode(text, special_tokens="text") == ref.encode(text, "text")
    for word in text.split():
        assert tok.encode(word, special_tokens="text") == ref.encode(word, "text")


# ============================================================================ pathological inputs

_MB = 10**6


def _b64(n: int) -> str:
    rng = random.Random(9)
    return base64.b64encode(bytes(rng.randrange(256) for _ in range(n))).decode()[:n]


@pytest.mark.parametrize("kind", ["spaces", "letter", "base64", "newlines", "digits"])
def test_megabyte_of_repetition_completes(pair, kind):
    text = {"spaces": " " * _MB, "letter": "a" * _MB, "base64": _b64(_MB),
            "newlines": "\n" * _MB, "digits": "7" * _MB}[kind]
    tok = pair.ours
    ids = tok.encode(text, special_tokens="text")
    assert 0 < len(ids) <= len(text)
    assert tok.count(text, special_tokens="text") == len(ids)
    assert tok.decode(ids) == text


@pytest.mark.parametrize("n", [10**4, 10**5])
def test_long_repetition_matches_reference(pair, n):
    """Sizes the references handle in reasonable time: ids equal."""
    for text in (" " * n, "a" * n, _b64(n), "ab" * (n // 2)):
        assert pair.ours.encode(text, special_tokens="text") == pair.ref.encode(text, "text")


def test_lone_surrogates_never_raise(pair):
    tok = pair.ours
    for text in ("\ud800", "a\udfffb", "\udc00\ud800", "x" * 5000 + "\ud83d"):
        ids = tok.encode(text)
        repaired = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
        assert tok.decode(ids) == repaired
        assert is_valid_text(tok.decode(ids))


def test_worker_pool_after_fork(o200k_pair, texts):
    """A forked child (gunicorn-style workers) gets its own pool: the parent's worker
    threads do not exist there, and a batch must neither hang nor change."""
    import os

    tok = o200k_pair.ours
    expected = tok.encode_batch(texts, special_tokens="text", num_threads=2)  # pool started
    pid = os.fork()
    if pid == 0:  # child: exit code says whether the batch matched
        ok = tok.encode_batch(texts, special_tokens="text", num_threads=2) == expected
        os._exit(0 if ok else 1)
    import signal
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("a batch in the forked child hung (no worker pool of its own)")
