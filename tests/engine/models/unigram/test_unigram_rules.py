"""The Unigram model's rules on small hand-made vocabularies, against tokenizers' own
``Unigram`` built from the same ``(piece, score)`` list (the Python binding takes the
scores as given, so both sides hold the same doubles).

Random vocabularies over a tiny alphabet make the rules meet constantly: equal scores
(ties keep the earlier offer), duplicate pieces (the last id wins), characters without
a piece (<unk>, fused), the literal "<unk>" piece, byte fallback with some <0xNN>
pieces missing, and a model with no unk id (both must fail on the same words).
"""

from __future__ import annotations

import functools
import random

import pytest

from tokserve.errors import ArtifactError
from tokserve.models.unigram._unigram import UnigramModel

ALPHABET = ["a", "b", "c", "é", "日", "😀", "▁", "<unk>"]


def _reference(vocab, unk_id, byte_fallback):
    from tokenizers.models import Unigram

    return Unigram(vocab, unk_id, byte_fallback)


def _reference_tokens(ref, word: str) -> tuple[list[int], list[int]]:
    tokens = ref.tokenize(word)
    return [t.id for t in tokens], [o for t in tokens for o in t.offsets]


def _outcome(encode, word):
    try:
        return encode(word)
    except Exception as exc:  # noqa: BLE001 - the failure itself is compared
        return "missing unk" if "unk" in str(exc) else repr(exc)


def _random_vocab(rng: random.Random) -> tuple[list[tuple[str, float]], int | None, bool]:
    pieces = []
    for _ in range(rng.randint(1, 30)):
        piece = "".join(rng.choice(ALPHABET[:6]) for _ in range(rng.randint(1, 4)))
        score = rng.choice([-1.0, -2.0, -0.5, -3.0, 0.0, -rng.random() * 10])
        pieces.append((piece, score))
    if rng.random() < 0.3:
        pieces.append(("<unk>", 0.0))
    if rng.random() < 0.5:
        for byte in rng.sample(range(256), rng.randint(1, 256)):
            pieces.append((f"<0x{byte:02X}>", -rng.random() * 20))
    rng.shuffle(pieces)
    unk_id = rng.randrange(len(pieces)) if rng.random() < 0.8 else None
    return pieces, unk_id, rng.random() < 0.5


def test_random_vocabularies_equal_tokenizers():
    rng = random.Random(7)
    compared = failures = 0
    for _ in range(300):
        vocab, unk_id, byte_fallback = _random_vocab(rng)
        ours = UnigramModel(vocab, unk_id, byte_fallback, cache_capacity=rng.choice([0, 64]))
        ref = _reference(vocab, unk_id, byte_fallback)
        for _ in range(20):
            word = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 12)))
            want = _outcome(functools.partial(_reference_tokens, ref), word)
            got = _outcome(lambda w, model=ours: model.encode_with_spans(w.encode()), word)
            assert got == want, (vocab, unk_id, byte_fallback, word)
            compared += 1
            failures += want == "missing unk"
    assert compared == 6000 and failures > 50  # the no-unk-id failure path was met


def test_ties_keep_the_earlier_offer():
    # "ab"+"c" and "a"+"bc" score the same; tokenizers keeps the first offer to reach
    # the end ("a"+"bc" is offered from position 1, "ab"+"c" from position 2)
    vocab = [("<unk>", 0.0), ("a", -1.0), ("b", -1.0), ("c", -1.0), ("ab", -2.0),
             ("bc", -2.0)]
    ours = UnigramModel(vocab, 0)
    ref = _reference(vocab, 0, False)
    assert ours.encode(b"abc") == [1, 5]
    for word in ("abc", "abcabc", "aabbcc", "cab"):
        assert ours.encode(word.encode()) == [t.id for t in ref.tokenize(word)], word


def test_duplicate_pieces_take_the_last_id_and_score():
    vocab = [("<unk>", 0.0), ("a", -1.0), ("a", -9.0), ("aa", -10.0)]
    ours = UnigramModel(vocab, 0)
    assert ours.encode(b"aa") == [3]  # "a" scores -9.0 (its last entry): "aa" wins
    assert ours.piece_to_id("a") == 2
    assert ours.encode(b"a") == [2]


def test_unknown_runs_fuse_and_fall_back_to_bytes():
    vocab = [("<unk>", 0.0), ("a", -1.0)] + [(f"<0x{b:02X}>", -5.0) for b in range(256)]
    ours = UnigramModel(vocab, 0, byte_fallback=True)
    ids, spans = ours.encode_with_spans("a日😀a".encode())
    assert ids == [1] + [2 + b for b in "日😀".encode()] + [1]
    assert spans == [0, 1] + [1, 8] * 7 + [8, 9]  # each byte token spans the whole run
    no_fallback = UnigramModel(vocab, 0)
    assert no_fallback.encode_with_spans("a日😀a".encode()) == ([1, 0, 1], [0, 1, 1, 8, 8, 9])


def test_missing_unk_id_fails_like_tokenizers():
    ours = UnigramModel([("a", -1.0)], None)
    assert ours.encode(b"aaa") == [0, 0, 0]
    with pytest.raises(ArtifactError):
        ours.encode(b"ab")
    with pytest.raises(ArtifactError):
        ours.encode_many([b"a", b"b"])


@pytest.mark.parametrize("vocab, unk_id", [([], 0), ([("a", 0.0)], 1), ([("a", 0.0)], -1),
                                           ([("a", 0.0)], "0"), ([("a",)], 0),
                                           ([("a", "x")], 0), ([(1, 0.0)], 0)])
def test_malformed_vocabularies_are_refused(vocab, unk_id):
    with pytest.raises(ArtifactError):
        UnigramModel(vocab, unk_id)


def test_from_json_dict_formats():
    t5_style = {"unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5]]}
    assert UnigramModel.from_json_dict(t5_style).encode(b"ab") == [1, 0]
    typed = dict(t5_style, type="Unigram", byte_fallback=True)
    assert UnigramModel.from_json_dict(typed).byte_fallback is True
    for bad in ({"type": "BPE", "vocab": []}, {"unk_id": 0}, [], {"vocab": [["a"]]},
                {"vocab": [["a", 0.0]], "byte_fallback": "yes"}):
        with pytest.raises(ArtifactError):
            UnigramModel.from_json_dict(bad)


def test_empty_vocabulary_without_unk_id_fails_on_any_word():
    ours = UnigramModel([], None)
    assert ours.size == 0 and ours.encode(b"") == []
    with pytest.raises(ArtifactError):
        ours.encode(b"a")


def test_long_words_equal_tokenizers():
    # linear in the word's length (the hostile benchmark's inputs, at test sizes)
    from unigram_inputs import t5_model_dict, t5_reference

    ours = UnigramModel.from_json_dict(t5_model_dict())
    ref = t5_reference().model
    rng = random.Random(3)
    words = ["▁" + "a" * 20000,
             "▁" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20000)),
             "▁" + "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(20000)),
             "▁" + "".join(chr(rng.randint(0x1F600, 0x1F64F)) for _ in range(20000))]
    for word in words:
        tokens = ref.tokenize(word)
        assert ours.encode_with_spans(word.encode()) == (
            [t.id for t in tokens], [o for t in tokens for o in t.offsets])


def test_arguments_are_checked():
    ours = UnigramModel([("<unk>", 0.0), ("a", -1.0)], 0)
    for call in (lambda: ours.encode(None), lambda: ours.count("a"),
                 lambda: ours.encode_with_spans(None), lambda: ours.encode_many(["a"]),
                 lambda: ours.encode_many([(None, [1])])):
        with pytest.raises(TypeError):
            call()
