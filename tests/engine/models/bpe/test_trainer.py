"""The BPE trainer (issue 5, acceptance 2).

The oracle is the plainest possible trainer, written here: recount every adjacent pair
of every word at every step, take ``max`` by ``(count, (left bytes, right bytes))``,
rewrite every word left to right. The compiled trainer must produce exactly the same
ranks and merge list, ties included, on small corpora built to be full of ties,
overlapping runs (``aaaa``), CRLF, multilingual text and special tokens.
"""

from __future__ import annotations

import base64
import json
import random
from collections import Counter
from pathlib import Path

import pytest
import regex

import tokserve
from tokserve.models.bpe import trainer as T
from tokserve.service.artifact_cli import train as train_cli
from tokserve.errors import ArtifactError, EngineError
from tokserve.patterns import resolve_pattern
from tokserve.unicode_compat import adapt_pattern

PATTERNS = ["o200k_base", "cl100k_base", "llama3", "qwen", r"\S+|\s+", r"[a-z]+|[^a-z]"]
SPECIALS = ["<|endoftext|>", "<|sep|>"]


# ------------------------------------------------------------------ the oracle


def reference_pieces(text: str, pattern: str, specials: list[str]) -> Counter:
    """Piece -> count: split on the special literals (removed), then the pattern."""
    rx = regex.compile(adapt_pattern(resolve_pattern(pattern), "tiktoken"))
    if specials:
        alt = "|".join(regex.escape(s) for s in sorted(specials, key=len, reverse=True))
        segments = regex.split(alt, text)
    else:
        segments = [text]
    pieces: Counter = Counter()
    for seg in segments:
        pieces.update(p.encode("utf-8") for p in rx.findall(seg))
    return pieces


def reference_train(pieces: Counter, n_ranks: int) -> tuple[list[bytes], list[tuple[bytes, bytes]]]:
    words = Counter({tuple(bytes([b]) for b in p): c for p, c in pieces.items()})
    ranks = [bytes([i]) for i in range(256)]
    known = set(ranks)
    merges: list[tuple[bytes, bytes]] = []
    while len(ranks) < n_ranks:
        pairs: Counter = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        new = best[0] + best[1]
        if new not in known:
            known.add(new)
            ranks.append(new)
        rewritten: Counter = Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(new)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            rewritten[tuple(out)] += c
        words = rewritten
    return ranks, merges


def reference_encode(piece: bytes, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
    """Merge-list semantics: repeatedly apply the lowest-ranked merge present."""
    rank = {m: i for i, m in enumerate(merges)}
    syms = [bytes([b]) for b in piece]
    while True:
        cands = [(rank[(a, b)], i) for i, (a, b) in enumerate(zip(syms, syms[1:]))
                 if (a, b) in rank]
        if not cands:
            return syms
        _, i = min(cands)
        syms[i:i + 2] = [syms[i] + syms[i + 1]]


# ------------------------------------------------------------------ corpora


def corpus(seed: int, n: int = 2500) -> str:
    """Small, tie-heavy text; odd seeds a tiny alphabet, even ones mixed scripts."""
    rng = random.Random(seed)
    if seed % 3 == 0:
        alphabet = ["a", "b", "a", " ", "\n", "aa", "ab"]
    elif seed % 3 == 1:
        alphabet = list("xyz ") + ["\r\n", "  ", "\t", "'s", "'LL", "12", "345"]
    else:
        alphabet = list("héllo wörld ") + ["日本語", "Привет", "!!", "..", "\n\n", " \n", "🙂"]
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
             for _ in range(rng.randint(20, 60))]
    text = "".join(rng.choice(words) + rng.choice([" ", "", "\n", ", "]) for _ in range(n // 4))
    if seed % 2 == 0:  # special tokens inside and between words
        text = text.replace("ab", "a<|endoftext|>b").replace("\n\n", "<|sep|>\n")
    return text


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


# ------------------------------------------------------------------ acceptance 2


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("seed", range(6))
def test_merges_equal_reference_including_ties(tmp_path, pattern, seed):
    text = corpus(seed)
    path = write(tmp_path, "c.txt", text)
    n_ranks = 256 + 120
    want_ranks, want_merges = reference_train(reference_pieces(text, pattern, SPECIALS), n_ranks)
    got = T.learn([path], n_ranks + len(SPECIALS), pattern, SPECIALS, progress=False,
                  num_workers=1)
    assert got.merges == want_merges
    assert got.ranks == want_ranks
    # the corpus is small enough that ties at the lowest counts are certain to occur
    assert len(set(got.merge_counts)) < len(got.merge_counts)


def test_exhausts_pairs_like_reference(tmp_path):
    text = "aaaa abab abab ba " * 3 + "a" * 17
    path = write(tmp_path, "c.txt", text)
    want_ranks, want_merges = reference_train(reference_pieces(text, "o200k_base", []), 10_000)
    got = T.learn([path], 10_000, "o200k_base", [], progress=False, num_workers=1)
    assert got.merges == want_merges and got.ranks == want_ranks
    assert len(got.ranks) < 10_000  # stopped early: no adjacent pair left


def test_tie_break_prefers_greatest_byte_pair(tmp_path):
    # pieces "ab", " AB", " xy": every pair occurs once, so bytes order decides
    path = write(tmp_path, "c.txt", "ab AB xy")
    got = T.learn([path], 256 + 3, "o200k_base", [], progress=False, num_workers=1)
    assert got.merges == [(b"x", b"y"), (b"a", b"b"), (b"A", b"B")]
    assert got.merge_counts == [1, 1, 1]


def test_tie_break_compares_bytes_not_ids(tmp_path):
    # (b"z", b"z") outranks (b"\xc3", b"\xa9") only if compared as ids; bytes say the latter
    path = write(tmp_path, "c.txt", "zz \u00e9")
    got = T.learn([path], 256 + 1, r"\S+|\s+", [], progress=False, num_workers=1)
    assert got.merges == [(b"\xc3", b"\xa9")]


def test_special_tokens_never_inside_merges(tmp_path):
    # the literals are by far the most frequent strings; none may leak into a token
    rng = random.Random(7)
    text = "".join(rng.choice(["<|endoftext|>", "<|sep|>", "end", "of", " text", "|>", "<|"])
                   for _ in range(4000))
    path = write(tmp_path, "c.txt", text)
    got = T.learn([path], 256 + 200 + 2, "o200k_base", SPECIALS, progress=False, num_workers=1)
    for tok in got.ranks:
        for lit in SPECIALS:
            assert lit.encode() not in tok
    for a, b in got.merges:
        for lit in SPECIALS:
            assert lit.encode() not in a + b
    # and the result is what training on the text with the literals cut out gives
    want = reference_train(reference_pieces(text, "o200k_base", SPECIALS), 256 + 200)
    assert (got.ranks, got.merges) == want


def test_training_twice_gives_byte_identical_artifacts(tmp_path):
    files = [write(tmp_path, f"c{i}.txt", corpus(10 + i, 20_000)) for i in range(3)]
    roots = [tmp_path / "one", tmp_path / "two"]
    for root, workers in zip(roots, (1, 2)):
        result = T.learn(files, 1000, "o200k_base", SPECIALS, progress=False,
                         num_workers=workers)
        T.write_artifact(result, root, "mini", "1", "o200k_base", SPECIALS)
    a, b = (sorted(p.relative_to(r) for p in r.rglob("*") if p.is_file()) for r in roots)
    assert a == b and len(a) == 2
    for rel in a:
        assert (roots[0] / rel).read_bytes() == (roots[1] / rel).read_bytes(), rel


# ------------------------------------------------------------------ counting


TRICKY = (
    "Hello world\n  indented\nnext\r\nCRLF line\n\n\nblank lines\n\t tab\n"
    "x.\nY!!\n<|endoftext|>\nafter\n日本語の文\n\u3000ideographic space\n"
    "trailing   \nend\n<|a\nb|>\nNUMBERS 12345\n's 'LL\n"
)


@pytest.mark.parametrize("pattern", ["o200k_base", "cl100k_base", "llama3", "qwen", r"\w+|\W"])
def test_chunked_parallel_counts_equal_whole_text(tmp_path, pattern):
    """Cuts at line starts never change the pieces (presets), whatever the block size,
    the task size or the number of workers; a literal holding a newline is never cut."""
    specials = ["<|endoftext|>", "<|a\nb|>"]
    rng = random.Random(3)
    texts = ["".join(rng.choice(TRICKY.splitlines(keepends=True)) for _ in range(400))
             for _ in range(2)]
    files = [write(tmp_path, f"f{i}.txt", t) for i, t in enumerate(texts)]
    want: Counter = Counter()
    for t in texts:
        want.update(reference_pieces(t, pattern, specials))
    for workers, block, task in ((1, 1 << 20, None), (2, 64, 700), (2, 1000, 3000)):
        counter = T.count_pieces(files, pattern, specials, num_workers=workers,
                                 block_size=block, task_bytes=task)
        assert dict(counter.items()) == dict(want), (workers, block, task)
        assert counter.total() == sum(want.values())


def test_invalid_utf8_is_replaced(tmp_path):
    path = tmp_path / "bad.bin"
    path.write_bytes(b"abc \xff\xfe def\n")
    counter = T.count_pieces([str(path)], "o200k_base", [], num_workers=1)
    assert dict(counter.items()) == dict(reference_pieces("abc \ufffd\ufffd def\n",
                                                          "o200k_base", []))


# ------------------------------------------------------------------ artifact and engine


def test_artifact_loads_and_encodes_with_merges_in_rank_order(tmp_path):
    text = corpus(4, 6000)
    path = write(tmp_path, "c.txt", text)
    result = T.learn([path], 380, "o200k_base", SPECIALS, progress=False, num_workers=1)
    assert len(result.ranks) == 378  # the corpus has pairs enough for every rank
    manifest = T.write_artifact(result, tmp_path / "root", "mini", "1", "o200k_base", SPECIALS)
    vdir = tmp_path / "root" / "mini" / "1"
    on_disk = json.loads((vdir / "manifest.json").read_text(encoding="utf-8"))
    assert on_disk == manifest
    assert manifest["format"] == "tiktoken" and manifest["preset"] is None
    assert manifest["pattern"] == resolve_pattern("o200k_base")
    assert manifest["special_tokens"] == {"<|endoftext|>": 378, "<|sep|>": 379}
    assert manifest["vocab_size"] == 380
    lines = (vdir / "mini.tiktoken").read_bytes().splitlines()
    assert [base64.b64decode(l.split()[0]) for l in lines] == result.ranks
    assert [int(l.split()[1]) for l in lines] == list(range(len(result.ranks)))

    tok = tokserve.load(vdir)
    assert tok.vocab_size == 380
    assert tok.special_tokens == manifest["special_tokens"]
    index = {t: i for i, t in enumerate(result.ranks)}
    rx = regex.compile(adapt_pattern(result.pattern, "tiktoken"))
    sample = text.replace("<|endoftext|>", "").replace("<|sep|>", "")[:3000]
    want = [index[s] for p in rx.findall(sample)
            for s in reference_encode(p.encode("utf-8"), result.merges)]
    assert tok.encode(sample, special_tokens="text") == want
    assert tok.encode("<|sep|>", special_tokens="allow") == [379]
    # every learned token encodes to itself when it is a whole piece of valid text
    for rank, tbytes in enumerate(result.ranks[256:], start=256):
        try:
            s = tbytes.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if rx.findall(s) == [s]:
            assert tok.encode(s, special_tokens="text") == [rank]


def test_write_artifact_refuses_to_overwrite(tmp_path):
    path = write(tmp_path, "c.txt", corpus(1))
    result = T.learn([path], 300, "llama3", [], progress=False, num_workers=1)
    T.write_artifact(result, tmp_path, "mini", "1", "llama3", [])
    with pytest.raises(ArtifactError):
        T.write_artifact(result, tmp_path, "mini", "1", "llama3", [])


def test_cli_main(tmp_path, capsys):
    path = write(tmp_path, "c.txt", corpus(2, 8000))
    rc = train_cli(["--corpus", path, "--vocab-size", "400", "--special-tokens", "<|endoftext|>",
                 "--pattern", "qwen", "--name", "cli", "--version", "2", "--out",
                 str(tmp_path / "root"), "--workers", "2"])
    out, err = capsys.readouterr()
    assert rc == 0
    vdir = tmp_path / "root" / "cli" / "2"
    assert out.splitlines()[0] == str(vdir)
    tok = tokserve.load(vdir)
    assert out.splitlines()[1] == tok.hash
    assert "merging" in err and "counting" in err  # progress goes to stderr
    # captured stderr is not a terminal: plain lines, no carriage-return frames
    assert "\r" not in err
    assert all(line.startswith("tokserve train: ") for line in err.splitlines())
    assert tok.manifest["pattern"] == resolve_pattern("qwen")


def test_progress_bar_redraws_in_place_only_on_a_terminal(tmp_path):
    """A real pseudo-terminal as stderr: the trainer draws its bar with carriage returns."""
    import os
    import pty
    import subprocess
    import sys

    path = write(tmp_path, "c.txt", corpus(2, 8000))
    primary, secondary = pty.openpty()
    proc = subprocess.run(
        [sys.executable, "-P", "-c", "import sys; from tokserve.service.artifact_cli import train; "
         "sys.exit(train(sys.argv[1:]))", "--corpus", path, "--vocab-size", "400",
         "--name", "tty", "--version", "1", "--out", str(tmp_path / "root")],
        stdout=subprocess.PIPE, stderr=secondary, timeout=120)
    os.close(secondary)
    drawn = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(primary)
    assert proc.returncode == 0
    assert b"\r" in drawn and b"merging" in drawn


def test_progress_can_be_disabled(tmp_path, capsys):
    path = write(tmp_path, "c.txt", corpus(5))
    T.learn([path], 300, "o200k_base", [], progress=False, num_workers=1)
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_bad_arguments(tmp_path):
    path = write(tmp_path, "c.txt", "hello")
    with pytest.raises(EngineError):
        T.learn([path], 200, "o200k_base", [], progress=False)
    with pytest.raises(EngineError):
        T.learn([path], 300, "o200k_base", ["<|x|>", "<|x|>"], progress=False)
    with pytest.raises(EngineError):
        T.learn([str(tmp_path / "missing.txt")], 300, "o200k_base", [], progress=False)
    rc = train_cli(["--corpus", str(tmp_path / "missing.txt"), "--vocab-size", "300", "--name",
                 "x", "--version", "1", "--out", str(tmp_path)])
    assert rc == 2
