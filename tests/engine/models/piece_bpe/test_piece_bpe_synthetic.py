"""The piece BPE model against tokenizers on small random vocabularies: every quirk.

Real files exercise few of tokenizers' corner cases, so each case here builds a random
model (a few characters, merges of merges, some byte pieces or none, an unk_token that
is a piece, is not, or is absent, fuse_unk on or off, repeated merge pairs, two merges
making one piece, sometimes two pieces sharing an id or an empty piece, merges that
join across "▁") and loads the SAME model object into tokenizers (Tokenizer.from_str)
and into ours. On random strings of those characters and unknown ones, ids and spans
must be equal, on every path: chunks with the cache, no chunking, the heap only; or
both must fail (an unk_token that is not a piece, when a character needs it).
"""

from __future__ import annotations

import json
import random

import pytest
import tokenizers

from tokserve.errors import ArtifactError
from tokserve.models.piece_bpe._piece_bpe import from_model

CHARS = ["a", "b", "c", "▁", "é", "字", "<", ">", "x"]
UNKNOWN = ["z", "ß", "😀", "\U0001f9ea", "\t", "𒀀"]
OPTIONS = [{}, {"chunking": False}, {"short_merge_limit": 0}, {"cache_capacity": 0}]


def reference_of(model: dict) -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "model": model}))


def random_model(rng: random.Random) -> dict:
    vocab: dict[str, int] = {}

    def add(piece: str) -> None:
        if piece not in vocab:
            vocab[piece] = len(vocab)

    unk = rng.choice(["in", "in", "missing", "none"])
    if unk == "in":
        add("<unk>")
    for c in CHARS:
        if rng.random() < 0.9:
            add(c)
    byte_mode = rng.choice(["all", "some", "none"])
    for b in range(256):
        if byte_mode == "all" or (byte_mode == "some" and rng.random() < 0.7):
            add(f"<0x{b:02X}>")
    pieces = [p for p in vocab if not p.startswith("<0x") and p != "<unk>"]
    merges: list[tuple[str, str]] = []
    for _ in range(rng.randint(0, 60)):
        if merges and rng.random() < 0.1:
            merges.append(rng.choice(merges))  # a repeated pair: the later rank wins
            continue
        a, b = rng.choice(pieces), rng.choice(pieces)
        if len(a) + len(b) > 12:
            continue
        if rng.random() < 0.05 and vocab:  # a byte piece in a merge
            a = rng.choice(list(vocab))
        add(a + b)
        pieces.append(a + b)
        merges.append((a, b))
    if rng.random() < 0.1 and len(vocab) > 2:  # two pieces share an id
        alias = "".join(rng.choice(CHARS[:3]) for _ in range(3))
        if alias not in vocab:
            vocab[alias] = rng.choice(list(vocab.values()))
    if rng.random() < 0.05:
        vocab[""] = len(vocab)
    as_pairs = rng.random() < 0.5
    return {
        "type": "BPE", "dropout": None,
        "unk_token": None if unk == "none" else "<unk>",
        "continuing_subword_prefix": None, "end_of_word_suffix": None,
        "fuse_unk": rng.random() < 0.5, "byte_fallback": rng.random() < 0.7,
        "ignore_merges": rng.random() < 0.2, "vocab": vocab,
        "merges": [list(m) for m in merges] if as_pairs else [f"{a} {b}" for a, b in merges],
    }


def random_text(rng: random.Random, pieces: list[str]) -> str:
    n = rng.choice([0, 1, 2, 5, 10, 30, 90, 200])
    parts = []
    for _ in range(n):
        r = rng.random()
        parts.append(rng.choice(UNKNOWN) if r < 0.08 else rng.choice(pieces) if r < 0.3
                     else rng.choice(CHARS))
    return "".join(parts)


def spans_of(reference: tokenizers.Tokenizer, text: str) -> tuple[list[int], list[int]]:
    tokens = reference.model.tokenize(text)
    return [t.id for t in tokens], [x for t in tokens for x in t.offsets]


def outcome(fn, text: str):
    try:
        return fn(text)
    except Exception as exc:  # noqa: BLE001 - both must fail, for the same reason
        return ("error", type(exc).__name__ == "ArtifactError" or "unk" in str(exc).lower())


@pytest.mark.parametrize("seed", range(24))
def test_random_models_equal_reference(seed):
    rng = random.Random(seed)
    for _ in range(25):
        model = random_model(rng)
        try:
            reference = reference_of(model)
        except Exception:  # noqa: BLE001 - tokenizers refuses it: so must we
            with pytest.raises(ArtifactError):
                from_model(model)
            continue
        ours = [from_model(model, **options) for options in OPTIONS]
        pieces = [p for p in model["vocab"] if p]
        for _ in range(12):
            text = random_text(rng, pieces)
            expected = outcome(lambda t, r=reference: spans_of(r, t), text)
            for variant, options in zip(ours, OPTIONS):
                got = outcome(lambda t, v=variant: v.encode_with_spans(t.encode()), text)
                assert got == expected, (seed, options, model, text)


def test_chunking_follows_the_merges():
    base = {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True,
            "vocab": {"<unk>": 0, "a": 1, "b": 2, "▁": 3, "▁b": 4, "a▁b": 5, "▁▁": 6},
            "merges": ["▁ b", "▁ ▁"]}
    plain = from_model(base)
    assert plain.chunking
    crossing = from_model(dict(base, merges=["▁ b", "a ▁b"]))
    assert crossing.chunking  # only after "a": other boundaries still split
    reference = reference_of(dict(base, merges=["▁ b", "a ▁b"], dropout=None))
    for text in ["a▁b", "ba▁b▁b", "▁a▁b▁▁b", "b▁b" * 50 + "a▁b"]:
        expected = [t.id for t in reference.model.tokenize(text)]
        assert crossing.encode(text.encode()) == expected
    aliased = from_model(dict(base, vocab=dict(base["vocab"], alias=1)))
    assert not aliased.chunking  # a piece is no longer known by its id
    no_space = from_model(dict(base, vocab={k: v for k, v in base["vocab"].items()
                                            if "▁" not in k} | {"x▁": 3}, merges=[]))
    assert not no_space.chunking


def test_spans_when_a_merge_makes_a_byte_piece():
    """"<0x41>" typed as text merges into the byte piece <0x41> (6 bytes of text), which
    byte fallback also gives for one byte: a cached chunk's spans cannot come from its
    ids then, so the chunk is merged again."""
    chars = ["<", "0", "x", "4", "1", ">", "▁"]
    vocab = {c: i for i, c in enumerate(chars)}
    merges = [("<", "0"), ("<0", "x"), ("4", "1"), ("<0x", "41"), ("<0x41", ">")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    model = {"type": "BPE", "unk_token": None, "byte_fallback": True, "fuse_unk": False,
             "vocab": vocab, "merges": [[a, b] for a, b in merges]}
    reference = reference_of(dict(model, dropout=None))
    ours = from_model(model)
    for text in ["▁<0x41>A", "▁A<0x41>", "▁<0x41>A▁A<0x41>▁<0x41>A"]:
        for _ in range(2):  # the second time the chunks are cached
            assert ours.encode_with_spans(text.encode()) == spans_of(reference, text)


@pytest.mark.parametrize("merges, texts", [
    ([["<unk>", ">"]], ["<unk><unk>", "<q><qq>▁<q>"]),       # a merge takes in an unknown
    ([["<0x97>", "▁"], ["a", "<0x97>▁"]], ["a字▁a字▁", "字▁字▁字▁"]),  # ... a byte piece
])
def test_spans_of_cached_parts_with_unknown_or_byte_symbols(merges, texts):
    """A merged token that takes in an unknown symbol or a byte piece covers other text
    than its piece's bytes: a cached chunk or part holding one is merged again for its
    spans (found by the random models above)."""
    vocab = {"<unk>": 0, "<": 1, ">": 2, "▁": 3, "a": 4}
    for b in (0x97, 0xE5, 0xAD):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    model = {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True,
             "vocab": vocab, "merges": merges}
    reference = reference_of(dict(model, dropout=None))
    ours = from_model(model)
    for text in texts:
        for _ in range(2):
            assert ours.encode_with_spans(text.encode()) == spans_of(reference, text), text
