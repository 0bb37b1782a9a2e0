"""The compiled BPE model against the pure-Python oracle, on both merge paths.

Pieces up to 48 bytes take the flat-array path, longer ones the heap path; both must
equal the oracle on the real vocabularies (tiktoken concat ranks and a tokenizer.json
merges list), including ties between equal-rank pairs in repeated text.
"""

from __future__ import annotations

import gc
import random
import sys

import pytest

import tokserve
from tokserve.models.bpe import _bpe_reference as reference
from tokserve.models.bpe._bpe import BpeModel

from bpe_inputs import mixed_pieces, rank_file


@pytest.fixture(scope="module")
def o200k():
    tok = tokserve.load("o200k_base")
    ranks = {}
    for tid in range(tok.vocab_size):
        if tid in tok.special_tokens.values():
            continue
        try:
            ranks[tok.token_bytes(tid)] = tid
        except tokserve.UnknownTokenId:
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
    model = BpeModel(tiktoken_data=open(rank_file(tok), "rb").read(), whole_piece_lookup=False)
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
    with pytest.raises(tokserve.ArtifactError, match="single byte"):
        BpeModel([(b"a", 0)], [])


def test_bpe_rejects_merge_of_unknown_tokens():
    vocab = [(bytes([b]), b) for b in range(256)]
    with pytest.raises(tokserve.ArtifactError, match="missing from the vocabulary"):
        BpeModel(vocab, [(b"a", b"b")])


# ----------------------------------------------------------------- cutting pieces

def _tangled_vocabulary(seed: int) -> tuple[list[bytes], str]:
    """Bytes, then random byte substrings of random multi-script text in random rank
    order: many tokens begin or end inside a character (continuation bytes first,
    incomplete characters last) and many span character pairs, so all three ways a
    token can cross a boundary (piece_split.h) occur."""
    rng = random.Random(seed)
    alphabet = "的一是不了人我在ab éдж😀👍🏽à\u0301ก"
    text = "".join(rng.choice(alphabet) for _ in range(4000))
    raw = text.encode()
    tokens = {bytes([b]) for b in range(256)}
    extra = []
    while len(extra) < 1500:
        start = rng.randrange(len(raw) - 8)
        token = raw[start:start + rng.randint(2, 8)]
        if token not in tokens:
            tokens.add(token)
            extra.append(token)
    rng.shuffle(extra)
    return [bytes([b]) for b in range(256)] + extra, alphabet


def test_cut_pieces_merge_like_the_whole_piece_tiktoken_ranks():
    """Cutting a piece where no token can cross (piece_split.h) never changes its ids:
    the compiled model (which cuts) equals the plain merge oracle (which does not) on
    vocabularies full of tokens that cross character boundaries."""
    for seed in range(3):
        vocab, alphabet = _tangled_vocabulary(seed)
        ranks = {tok: i for i, tok in enumerate(vocab)}
        pair_rank, token_id = reference.tiktoken_ranks(ranks)
        model = BpeModel(list(ranks.items()), whole_piece_lookup=False)
        rng = random.Random(seed + 10)
        for _ in range(400):
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 40))).encode()
            assert model.encode_piece(piece) == reference.merge(piece, pair_rank, token_id), piece
        for _ in range(2):  # and again through the cache, parts and pieces alike
            piece = "".join(rng.choice(alphabet) for _ in range(30)).encode()
            assert model.encode_piece(piece) == reference.merge(piece, pair_rank, token_id)


def test_cut_pieces_merge_like_the_whole_piece_merges_list():
    for seed in range(3):
        vocab, alphabet = _tangled_vocabulary(seed)
        rng = random.Random(seed + 20)
        known = [bytes([b]) for b in range(256)]
        present = set(known)
        merges = []
        for token in vocab[256:]:  # every token reachable from two shorter known ones
            splits = [k for k in range(1, len(token))
                      if token[:k] in present and token[k:] in present]
            if splits:
                k = rng.choice(splits)
                merges.append((token[:k], token[k:]))
                present.add(token)
                known.append(token)
        ids = {tok: i for i, tok in enumerate(known)}
        model = BpeModel(list(ids.items()), merges, whole_piece_lookup=False)
        pair_rank, token_id = reference.merges_ranks(ids, merges)
        for _ in range(400):
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 40))).encode()
            assert model.encode_piece(piece) == reference.merge(piece, pair_rank, token_id), piece


def test_cutting_pieces_changes_no_id_on_real_vocabularies(o200k):
    """The same pieces merged with and without cutting, on o200k_base and cl100k_base,
    over characters of every plane the corpus uses (CJK, Indic, Thai, Hangul, emoji,
    combining marks, recently assigned code points). With cutting on, a piece none of
    whose byte pairs is a token is answered without merging (bpe_bytes_stay): Armenian
    and Georgian, which cl100k_base barely covers, test that answer too."""
    cl100k = tokserve.load("cl100k_base")
    rng = random.Random(5)
    pools = [(0x4E00, 0x9FFF), (0x3040, 0x30FF), (0xAC00, 0xD7A3), (0x0900, 0x097F),
             (0x0E00, 0x0E7F), (0x0400, 0x04FF), (0x1F300, 0x1FAFF), (0x0300, 0x036F),
             (0x20000, 0x2A6DF), (0x31350, 0x323AF), (0x0020, 0x007E), (0x0531, 0x0587),
             (0x10A0, 0x10FF)]
    pieces = []
    for _ in range(3000):
        lo, hi = rng.choice(pools)
        chars = [chr(rng.randint(lo, hi)) for _ in range(rng.randint(2, 24))]
        if rng.random() < 0.5:
            lo, hi = rng.choice(pools)
            chars += [chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))]
        pieces.append("".join(chars).encode())
    for tok in (o200k[0], cl100k):
        data = open(rank_file(tok), "rb").read()
        cutting = BpeModel(tiktoken_data=data)
        whole = BpeModel(tiktoken_data=data, split_pieces=False)
        for piece in pieces:
            assert cutting.encode_piece(piece) == whole.encode_piece(piece), piece


# ----------------------------------------------------------------- whole characters

def _byte_vocabulary(*extra: bytes) -> list[tuple[bytes, int]]:
    """The 256 bytes, then ``extra`` ranked in the order given (rank = id)."""
    return [(bytes([b]), b) for b in range(256)] + [(t, 256 + k) for k, t in enumerate(extra)]


@pytest.mark.parametrize("extra, piece, want", [
    # 3: a token ends with the byte before the character and its lead byte
    ((b"a\xd0", b"\xd0\xbf"), "aп", [256, 0xBF]),
    # 4: a token starts with the character's last byte and the byte after it
    ((b"\xbfz", b"\xd0\xbf"), "пz", [0xD0, 256]),
    # 3 for a 3-byte character: the byte before, the lead and first continuation byte
    ((b"a\xe4\xb8", b"\xe4\xb8", b"\xe4\xb8\xad"), "a中", [256, 0xAD]),
    # 4 for a 3-byte character: its last two bytes and the byte after
    ((b"\xb8\xadz", b"\xb8\xad", b"\xe4\xb8\xad"), "中z", [0xE4, 256]),
    # 2: a longer token holding the character ranks below the character itself
    ((b"\xd0\xbfq", b"qr", b"\xd0\xbf"), "пqr", [258, 257]),
    # 1: a 3-byte character's token that merging its bytes never builds
    ((b"\xe4\xb8\xad",), "中", [0xE4, 0xB8, 0xAD]),
    # all four hold: the character enters as its token, same ids
    ((b"\xd0\xbf", b"\xd0\xbf\xd0\xbf"), "aпп", [97, 257]),
])
def test_whole_characters_start_the_merge_only_where_exact(extra, piece, want):
    """Each condition of bpe_chars.h on a vocabulary where breaking it changes the ids:
    starting from the character's token would give other ids than merging its bytes.
    The model starting from characters gives the reference merge's ids, as does the one
    starting from bytes."""
    vocab = _byte_vocabulary(*extra)
    pair_rank, token_id = reference.tiktoken_ranks(dict(vocab))
    data = piece.encode()
    assert reference.merge(data, pair_rank, token_id) == want
    for chars in (True, False):
        model = BpeModel(vocab, whole_piece_lookup=False, char_symbols=chars, cache_capacity=0)
        assert model.encode_piece(data) == want, chars


def test_whole_characters_change_no_id_on_tangled_vocabularies():
    """Vocabularies full of tokens that begin or end inside characters, in random rank
    order (so every condition of bpe_chars.h fails somewhere): the model starting from
    characters, with no cutting, equals the reference merge on every piece."""
    for seed in range(3):
        vocab, alphabet = _tangled_vocabulary(seed)
        ranks = {tok: i for i, tok in enumerate(vocab)}
        pair_rank, token_id = reference.tiktoken_ranks(ranks)
        model = BpeModel(list(ranks.items()), whole_piece_lookup=False, split_pieces=False,
                         cache_capacity=0)
        rng = random.Random(seed + 30)
        for _ in range(600):
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))).encode()
            assert model.encode_piece(piece) == reference.merge(piece, pair_rank, token_id), piece


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_whole_characters_change_no_id_on_real_vocabularies(name):
    """Words of the scripts whose characters are tokens (Cyrillic, Greek, CJK, Hangul,
    Arabic, Devanagari, Thai), alone and next to ASCII, punctuation, other scripts and
    stray bytes: starting from characters gives the ids starting from bytes gives."""
    data = open(rank_file(tokserve.load(name)), "rb").read()
    chars = BpeModel(tiktoken_data=data, cache_capacity=0, split_pieces=False)
    plain = BpeModel(tiktoken_data=data, cache_capacity=0, split_pieces=False,
                     char_symbols=False)
    rng = random.Random(7)
    pools = [(0x0400, 0x04FF), (0x0370, 0x03FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
             (0x0600, 0x06FF), (0x0900, 0x097F), (0x0E00, 0x0E7F), (0x00C0, 0x024F),
             (0x3040, 0x30FF)]
    edges = [b"", b" ", b"a", b"'", b"\n", b"1", "\u00e9".encode(), "\u4e2d".encode(),
             "\U0001f600".encode(), b"\xff", b"\x80"]
    for _ in range(4000):
        lo, hi = rng.choice(pools)
        word = "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 14))).encode()
        piece = rng.choice(edges) + word + rng.choice(edges)
        assert chars.encode_piece(piece) == plain.encode_piece(piece), piece


# ----------------------------------------------------------------- the pair table

@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_pair_table_changes_no_id_on_real_vocabularies(name):
    """Ranking pairs by their ids (bpe_pairs.h) gives the ids ranking them by their
    joined bytes gives: English and code words, multi-script words, digits and random
    bytes, merged whole (no piece cache, no cutting) so every pair is asked."""
    data = open(rank_file(tokserve.load(name)), "rb").read()
    table = BpeModel(tiktoken_data=data, cache_capacity=0, split_pieces=False,
                     whole_piece_lookup=False)
    plain = BpeModel(tiktoken_data=data, cache_capacity=0, split_pieces=False,
                     whole_piece_lookup=False, pair_table=False)
    rng = random.Random(11)
    words = open(__file__, encoding="utf-8").read().split()
    pieces = [w.encode() for w in words] + [(" " + w).encode() for w in words]
    pieces += [piece.encode() for piece in mixed_pieces(12, 1500)]
    pieces += [bytes(rng.randrange(256) for _ in range(rng.randint(2, 40))) for _ in range(500)]
    pieces += [str(rng.randrange(10 ** rng.randint(1, 12))).encode() for _ in range(200)]
    for piece in pieces:
        assert table.encode_piece(piece) == plain.encode_piece(piece), piece


def test_pair_table_follows_the_byte_table_on_duplicate_tokens():
    """Two ids with the same bytes: a pair joining into those bytes takes the id the
    byte table gives (the last one listed), with the pair table as without it."""
    vocab = _byte_vocabulary(b"ab", b"abc", b"abc", b"bc", b"abcbc")
    want = BpeModel(vocab, pair_table=False, whole_piece_lookup=False, cache_capacity=0)
    got = BpeModel(vocab, whole_piece_lookup=False, cache_capacity=0)
    for piece in (b"ab", b"abc", b"abcbc", b"xabcab", b"bcab", b"abab"):
        assert got.encode_piece(piece) == want.encode_piece(piece), piece
    assert got.encode_piece(b"abc") == [258]  # "ab" + "c", joined: the later "abc"


def test_whole_piece_lookup_finds_tokens_merging_cannot_reach():
    """tiktoken's rule: a piece that is a token is that token, even when merging its
    bytes could never build it. The lookup is skipped only for pieces longer than every
    token starting with the same two bytes; the longest such token itself is found."""
    vocab = [(bytes([b]), b) for b in range(256)]
    vocab += [(b"abc", 256), (b"\xe4\xb8\xad\xe6", 257), (b"xq", 258)]
    model = BpeModel(vocab)
    assert model.encode_piece(b"abc") == [256]
    assert model.encode_piece(b"\xe4\xb8\xad\xe6") == [257]
    assert model.encode_piece(b"abcd") == [97, 98, 99, 100]
    assert BpeModel(vocab, whole_piece_lookup=False).encode_piece(b"abc") == [97, 98, 99]


# ----------------------------------------------------------------- long pieces

def _long_pieces(seed: int) -> list[bytes]:
    """Pieces past the flat loop's 48 bytes: runs of one unit (the hostile inputs of
    benchmarks/worst_case.py, short and with odd ends), random letters, random
    multi-script text, random bytes (not UTF-8) and mixtures."""
    rng = random.Random(seed)
    units = [b"a", b" ", b"\n", b"\r\n", b"7", "中".encode(), "😀".encode(), b"ab", b"=",
             b"abc", b"\t ", "é".encode(), b"\xff", b"aab"]
    pieces = []
    for unit in units:
        for n in (49, 50, 64, 129, 257, 1000, 4099):
            run = (unit * (n // len(unit) + 1))[:n]
            pieces += [run, b"x" + run, run + b"y", b"Q" + run[:-1] + b"zz"]
    letters = b"abcdefghijklmnopqrstuvwxyz"
    for _ in range(60):
        pieces.append(bytes(rng.choice(letters) for _ in range(rng.randint(49, 3000))))
    scripts = ["abcdefghij ", "的一是不了人我在有他", "абвгдежзий", "αβγδεζηθικ", "😀👍🏽🎉🔥✨",
               "0123456789", "!?.,;:-=+*"]
    for _ in range(60):
        pieces.append("".join(rng.choice(rng.choice(scripts))
                              for _ in range(rng.randint(20, 800))).encode())
    for _ in range(30):
        pieces.append(bytes(rng.randrange(256) for _ in range(rng.randint(49, 600))))
    return pieces


def _long_piece_models(name: str):
    """(backtracking, merging) models of one real vocabulary, neither cutting pieces
    nor caching them, so each long piece goes through the loop under test."""
    tok = tokserve.load(name)
    art = tok.artifact
    kwargs = dict(whole_piece_lookup=False, cache_capacity=0, split_pieces=False)
    if art.tiktoken_data is not None:
        return (BpeModel(tiktoken_data=art.tiktoken_data, **kwargs),
                BpeModel(tiktoken_data=art.tiktoken_data, backtracking=False, **kwargs))
    return (BpeModel(art.tokens, art.merges, **kwargs),
            BpeModel(art.tokens, art.merges, backtracking=False, **kwargs))


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "deepseek-v4"])
def test_backtracking_equals_merging_on_long_pieces(name):
    """The backtracking encoder (backtrack.h) gives the merge loop's ids on every long
    piece, for tiktoken ranks and a merges list, including bytes that are not UTF-8."""
    backtracking, merging = _long_piece_models(name)
    for piece in _long_pieces(11):
        assert backtracking.encode_piece(piece) == merging.encode_piece(piece), piece[:80]


def test_backtracking_equals_the_reference_oracle(o200k):
    """And the plain statement of the rule agrees, on pieces short enough for it."""
    tok, ranks = o200k
    pair_rank, token_id = reference.tiktoken_ranks(ranks)
    model = BpeModel(tiktoken_data=tok.artifact.tiktoken_data, whole_piece_lookup=False,
                     cache_capacity=0, split_pieces=False)
    for piece in _long_pieces(12):
        if len(piece) <= 300:
            assert model.encode_piece(piece) == reference.merge(piece, pair_rank, token_id)


def test_backtracking_records_are_shared_safely_across_threads():
    """Four threads meet the same new tokens at once on one fresh model (each token's
    record is filled by one thread while the others wait): same ids as one thread."""
    from concurrent.futures import ThreadPoolExecutor

    backtracking, merging = _long_piece_models("cl100k_base")
    pieces = _long_pieces(13)
    expected = [merging.encode_piece(p) for p in pieces]

    def run(offset: int) -> bool:
        order = list(range(offset, len(pieces))) + list(range(offset))
        return all(backtracking.encode_piece(pieces[k]) == expected[k] for k in order)

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, [0, 1, 2, 3]))


def test_returned_ids_hold_exactly_one_reference_each(o200k):
    """The id lists share one int per id (_bpe.pyx); each list entry holds exactly one
    reference to it, so the shared ints are neither leaked nor freed under a list.
    Only ids above 256 are counted: the ints up to 256 are the interpreter's own, and
    anything else running (a finalizer in gc.collect(), another test's thread) moves
    their counts (a full run once saw 11's count grow by 511 here)."""
    tok, _ = o200k
    text = "hello world, a sentence of ordinary words 12345 🙂"
    first = tok.encode(text, special_tokens="text")
    ours = [i for i in first if i > 256]
    assert len(ours) >= 8

    def refs() -> list[int]:
        return [sys.getrefcount(i) for i in ours]

    before = refs()
    kept = [tok.encode(text, special_tokens="text") for _ in range(100)]
    during = refs()
    assert [d - b for d, b in zip(during, before)] == [100 * first.count(i) for i in ours]
    del kept
    gc.collect()
    assert refs() == before
