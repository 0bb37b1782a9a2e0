"""The compiled BPE model against the pure-Python oracle, on both merge paths.

Pieces up to 48 bytes take the flat-array path, longer ones the heap path; both must
equal the oracle on the real vocabularies (tiktoken concat ranks and a tokenizer.json
merges list), including ties between equal-rank pairs in repeated text.
"""

from __future__ import annotations

import random

import pytest

import engine
from engine import _bpe_reference as reference
from engine._bpe import BpeModel


@pytest.fixture(scope="module")
def o200k():
    tok = engine.load("o200k_base")
    ranks = {}
    for tid in range(tok.vocab_size):
        if tid in tok.special_tokens.values():
            continue
        try:
            ranks[tok.token_bytes(tid)] = tid
        except engine.UnknownTokenId:
            pass
    return tok, ranks


def _pieces(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    alphabet = [b"a", b"b", b"ab", b" ", b"e", b"\xe6\x97\xa5", b"0", b"=", b"th", b"in"]
    pieces = [b"a" * n for n in (2, 3, 7, 47, 48, 49, 50, 200, 1001)]
    pieces += [b" " * n for n in (2, 48, 49, 300)]
    pieces += [b"ab" * n for n in (24, 25, 100)]
    for _ in range(300):
        pieces.append(b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120))))
    return pieces


def test_bpe_compiled_equals_reference_tiktoken_ranks(o200k):
    tok, ranks = o200k
    pair_rank, token_id = reference.tiktoken_ranks(ranks)
    # whole_piece_lookup=False forces merging even for pieces that are tokens
    model = BpeModel(tiktoken_data=open(_rank_file(tok), "rb").read(), whole_piece_lookup=False)
    for piece in _pieces(1):
        assert model.encode_piece(piece) == reference.merge(piece, pair_rank, token_id), piece


def test_bpe_compiled_equals_reference_merges_list():
    vocab_list = [bytes([b]) for b in range(256)]
    merges = [(b"a", b"a"), (b"aa", b"a"), (b"a", b"b"), (b"ab", b"ab"), (b" ", b" "),
              (b"aa", b"aa"), (b"  ", b"  "), (b"b", b"a")]
    for left, right in merges:
        if left + right not in vocab_list:
            vocab_list.append(left + right)
    vocab = {tok: i for i, tok in enumerate(vocab_list)}
    model = BpeModel(list(vocab.items()), merges, whole_piece_lookup=False)
    pair_rank, token_id = reference.merges_ranks(vocab, merges)
    for piece in _pieces(2):
        piece = bytes(c for c in piece if c in b"ab ")
        if piece:
            assert model.encode_piece(piece) == reference.merge(piece, pair_rank, token_id)


def test_bpe_rejects_vocabulary_without_every_byte():
    with pytest.raises(engine.ArtifactError, match="single byte"):
        BpeModel([(b"a", 0)], [])


def test_bpe_rejects_merge_of_unknown_tokens():
    vocab = [(bytes([b]), b) for b in range(256)]
    with pytest.raises(engine.ArtifactError, match="missing from the vocabulary"):
        BpeModel(vocab, [(b"a", b"b")])


def test_bpe_cache_is_bounded_and_transparent(o200k):
    tok, _ = o200k
    model = BpeModel(tiktoken_data=open(_rank_file(tok), "rb").read(), cache_capacity=8)
    words = [f"zq{i}xv{i}wq".encode() for i in range(50)]
    first = [model.encode_piece(w) for w in words]
    second = [model.encode_piece(w) for w in words]
    assert first == second
    assert model.cache_hits + model.cache_misses > 0


def _rank_file(tok) -> str:
    directory = tok.artifact.directory
    return str(directory / tok.manifest["tokenizer_file"])
