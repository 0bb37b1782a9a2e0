"""The BPE model's caches: what they hold never changes an id.

The shared piece cache (piece_cache.h: bounded, admitting a piece on its second
sighting), the per-thread pair cache (pair_cache.h) and the per-thread memo of short
pieces (short_pieces.h) against models without them, on the real vocabularies: models
interleaved on one thread, threads sharing one model, entries evicting each other.
"""

from __future__ import annotations

import base64
import random

import pytest

import tokserve
from tokserve.models.bpe._bpe import BpeModel

from bpe_inputs import mixed_pieces, rank_file


@pytest.fixture(scope="module")
def o200k_tok():
    return tokserve.load("o200k_base")


def test_bpe_cache_is_bounded_and_transparent(o200k_tok):
    tok = o200k_tok
    model = BpeModel(tiktoken_data=open(rank_file(tok), "rb").read(), cache_capacity=8)
    words = [f"zq{i}xv{i}wq".encode() for i in range(50)]
    first = [model.encode_piece(w) for w in words]
    second = [model.encode_piece(w) for w in words]
    assert first == second
    assert model.cache_hits + model.cache_misses > 0


def test_bpe_caches_never_mix_models_or_threads(o200k_tok):
    """The piece cache (bounded, cleared when full) and the per-thread pair cache give
    the same ids as a model with no piece cache, with two models of different
    vocabularies interleaved on one thread (a pair of ids means different things in
    each) and with threads sharing one model."""
    from concurrent.futures import ThreadPoolExecutor

    cl100k = tokserve.load("cl100k_base")
    data = {name: open(rank_file(t), "rb").read()
            for name, t in (("o200k", o200k_tok), ("cl100k", cl100k))}
    small = {n: BpeModel(tiktoken_data=d, cache_capacity=64) for n, d in data.items()}
    plain = {n: BpeModel(tiktoken_data=d, cache_capacity=0) for n, d in data.items()}
    pieces = [p.encode() for p in mixed_pieces(7, 3000)]
    expected = {n: [m.encode_piece(p) for p in pieces] for n, m in plain.items()}
    assert expected["o200k"] != expected["cl100k"]
    for _ in range(2):  # second round: served from caches that overflowed many times
        for k, piece in enumerate(pieces):
            for name in ("o200k", "cl100k"):
                assert small[name].encode_piece(piece) == expected[name][k]
    shared = BpeModel(tiktoken_data=data["o200k"], cache_capacity=256)

    def run(offset: int) -> bool:
        order = pieces[offset:] + pieces[:offset]
        want = expected["o200k"][offset:] + expected["o200k"][:offset]
        return all(shared.encode_piece(p) == w for p, w in zip(order, want))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, [0, 750, 1500, 2250]))
    assert shared.cache_hits > 0


def test_piece_cache_admits_a_piece_on_its_second_sighting(o200k_tok):
    """First sighting: merged, only remembered. Second: merged and cached. Third: a hit.
    A sighting on another thread counts (the filter is the model's, so a batch's two
    workers meeting a piece once each still cache it)."""
    import threading

    tok = o200k_tok
    model = BpeModel(tiktoken_data=open(rank_file(tok), "rb").read())
    piece = b" zqxvwqjk"  # ASCII: never cut into parts (piece_split.h), one cache entry
    expected = model.encode_piece(piece)
    assert (model.cache_hits, model.cache_misses) == (0, 1)
    worker = threading.Thread(target=lambda: model.encode_piece(piece))
    worker.start()
    worker.join()
    assert (model.cache_hits, model.cache_misses) == (0, 2)
    assert model.encode_piece(piece) == expected
    assert (model.cache_hits, model.cache_misses) == (1, 2)


def test_piece_cache_admits_text_repeated_with_a_long_period(o200k_tok):
    """40,000 distinct pieces read three times over: the third round is served from the
    cache. (A seen filter that forgets faster than the text repeats admits nothing:
    a 16 KiB one made the benchmark's warm loop 30% slower.)"""
    tok = o200k_tok
    model = BpeModel(tiktoken_data=open(rank_file(tok), "rb").read())
    pieces = [f" zq{i}xv{i}wq".encode() for i in range(40_000)]
    for _ in range(2):
        for piece in pieces:
            model.encode_piece(piece)
    hits = model.cache_hits
    for piece in pieces:
        model.encode_piece(piece)
    assert model.cache_hits - hits >= 0.95 * len(pieces)


def test_bpe_ids_beyond_the_pair_cache_key(o200k_tok):
    """Ids of 2^21 and more do not fit the pair cache's packed key; such a model skips
    that cache and still merges exactly (same merges as the model with small ids)."""
    tok = o200k_tok
    data = open(rank_file(tok), "rb").read()
    small = BpeModel(tiktoken_data=data, cache_capacity=0)
    shift = 3_000_000
    lines = [line.split() for line in data.splitlines() if line]
    shifted = BpeModel([(base64.b64decode(b), int(r) + (shift if int(r) >= 256 else 0))
                        for b, r in lines], cache_capacity=0)
    for piece in mixed_pieces(3, 500):
        want = [i + shift if i >= 256 else i for i in small.encode_piece(piece.encode())]
        assert shifted.encode_piece(piece.encode()) == want


def _short_pieces(seed: int, count: int) -> list[bytes]:
    """Pieces of 1 to 6 bytes (the memo holds 2 to 5): characters of several scripts
    alone or in pairs, random bytes, and pieces that differ only by trailing zero
    bytes (the memo's key must hold the length, not only the bytes)."""
    rng = random.Random(seed)
    pools = [(0x0400, 0x04FF), (0x0900, 0x097F), (0x0B80, 0x0BFF), (0x0E00, 0x0E7F),
             (0x0530, 0x058F), (0x4E00, 0x9FFF), (0x1F300, 0x1F6FF), (0x20, 0x7E)]
    pieces = [b"ab", b"ab\x00", b"ab\x00\x00", b"\x00ab", b"\x00\x00", b"\x00\x00\x00"]
    while len(pieces) < count:
        kind = rng.random()
        if kind < 0.6:
            lo, hi = rng.choice(pools)
            piece = "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 2))).encode()
        else:
            piece = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
        if len(piece) <= 6:
            pieces.append(piece)
    return pieces


@pytest.mark.parametrize("whole_piece_lookup", [True, False])
def test_short_piece_memo_never_mixes_models_or_threads(whole_piece_lookup):
    """The per-thread memo of short pieces (short_pieces.h) gives the ids a model
    without it gives: two vocabularies interleaved on one thread (the same bytes mean
    different ids in each), more distinct pieces than the memo has entries (they
    evict each other), each piece several times, and threads sharing one model."""
    from concurrent.futures import ThreadPoolExecutor

    data = {name: open(rank_file(tokserve.load(name)), "rb").read()
            for name in ("cl100k_base", "o200k_base")}
    memo = {n: BpeModel(tiktoken_data=d, cache_capacity=0, whole_piece_lookup=whole_piece_lookup)
            for n, d in data.items()}
    plain = {n: BpeModel(tiktoken_data=d, cache_capacity=0, whole_piece_lookup=whole_piece_lookup,
                         short_memo=False)
             for n, d in data.items()}
    pieces = _short_pieces(5, 12000)
    expected = {n: [m.encode_piece(p) for p in pieces] for n, m in plain.items()}
    assert expected["cl100k_base"] != expected["o200k_base"]
    ab, zero = plain["cl100k_base"].encode_piece(b"ab"), plain["cl100k_base"].encode_piece(b"\0")
    assert expected["cl100k_base"][:3] == [ab, ab + zero, ab + 2 * zero]  # three keys
    for _ in range(3):  # later rounds: served from the memo, after evictions
        for k, piece in enumerate(pieces):
            for name in ("o200k_base", "cl100k_base"):
                assert memo[name].encode_piece(piece) == expected[name][k], (name, piece)

    def run(offset: int) -> bool:
        order = pieces[offset:] + pieces[:offset]
        want = expected["cl100k_base"][offset:] + expected["cl100k_base"][:offset]
        return all(memo["cl100k_base"].encode_piece(p) == w for p, w in zip(order, want))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, [0, 3000, 6000, 9000]))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_short_piece_memo_changes_no_id_in_text(name):
    """Whole texts with many short pieces (Indic and Thai words the patterns cut at
    every vowel sign, punctuation runs, emoji) through the compiled scanner, three
    times so that later passes come from the memo: the ids of the model without it."""
    tok = tokserve.load(name)
    data = open(rank_file(tok), "rb").read()
    family = tok._model.family
    assert family >= 0
    memo = BpeModel(tiktoken_data=data, family=family)
    plain = BpeModel(tiktoken_data=data, family=family, short_memo=False)
    texts = ["नमस्ते दुनिया, यह एक परीक्षण है। ", "வணக்கம் உலகம்! இது ஒரு சோதனை. ",
             "สวัสดีชาวโลก นี่คือการทดสอบ ", '"),\n\n("', "🫠🫡 ok 🧪!? ", "ä, ö; ü. ß!"]
    for text in texts * 3:
        assert memo.encode(text.encode()) == plain.encode(text.encode()), text
