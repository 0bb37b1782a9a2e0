"""A Unigram model with byte fallback, trained here by SentencePiece, against both
references: sentencepiece's own encode (ids) and tokenizers' Unigram on the same
``(piece, score)`` list (ids and spans).

T5 has no byte fallback, so the rule needs a model that has: the trainer makes one
from a small in-memory corpus in a fraction of a second. Identity normalization makes
sentencepiece see each word exactly as our model does ("▁" + word, its dummy prefix).
Characters outside the training text become their UTF-8 bytes (<0xNN>) in all three.
"""

from __future__ import annotations

import io
import random

import pytest

from tokserve.models.unigram._unigram import UnigramModel

spm = pytest.importorskip("sentencepiece")

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "hello", "world",
         "token", "model", "unigram", "piece", "score", "byte", "fallback", "café", "naïve",
         "über", "straße", "hello", "again", "tokens", "scored"]


@pytest.fixture(scope="module")
def trained():
    rng = random.Random(11)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(2000)]
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=proto, model_type="unigram",
        vocab_size=300, byte_fallback=True, character_coverage=1.0,
        normalization_rule_name="identity", minloglevel=2, num_threads=1)
    sp = spm.SentencePieceProcessor(model_proto=proto.getvalue())
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    return sp, vocab


def _words() -> list[str]:
    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyzéïü"
    words = list(WORDS)
    words += ["".join(rng.choice(letters) for _ in range(rng.randint(1, 15))) for _ in range(300)]
    words += ["wörld", "日本語", "a😀b", "ĳ", "x" * 50, "Zebra", "QUIET", "ž", "ab日cd本"]
    return words


def test_ids_equal_sentencepiece(trained):
    sp, vocab = trained
    model = UnigramModel(vocab, sp.unk_id(), byte_fallback=True)
    assert model.byte_fallback and model.piece_to_id("<0xE6>") == 3 + 0xE6
    fallbacks = 0
    for word in _words():
        ids = model.encode(("▁" + word).encode())
        assert ids == sp.encode(word), word
        fallbacks += any(3 <= i < 259 for i in ids)
    assert fallbacks >= 5


def test_ids_and_spans_equal_tokenizers(trained):
    from tokenizers.models import Unigram

    sp, vocab = trained
    model = UnigramModel(vocab, sp.unk_id(), byte_fallback=True)
    ref = Unigram(vocab, sp.unk_id(), True)
    for word in _words():
        text = "▁" + word
        tokens = ref.tokenize(text)
        assert model.encode_with_spans(text.encode()) == (
            [t.id for t in tokens], [o for t in tokens for o in t.offsets]), word
