"""The Unigram model against tokenizers' on T5's real file: ids and byte spans per word.

tokenizers' ``model.tokenize`` on an already normalized, pre-tokenized word is the
reference (its offsets there are byte offsets into the word). Every API path must agree
with it: one word, a text of words with ``ends``, a batch on threads, with the cache and
without, cold and warm.
"""

from __future__ import annotations

import itertools

import pytest

from tokserve.models.unigram._unigram import UnigramModel

from unigram_inputs import reference_tokens, t5_model_dict, t5_reference, t5_words


@pytest.fixture(scope="module")
def t5():
    return UnigramModel.from_json_dict(t5_model_dict())


@pytest.fixture(scope="module")
def expected():
    ref = t5_reference().model
    return {word: reference_tokens(ref, word) for word in t5_words()}


def test_words_cover_the_unknown_rules(expected):
    # the test set reaches what it is meant to: <unk> (fused runs), long words
    assert len(expected) >= 500
    assert sum(2 in ids for ids, _ in expected.values()) >= 50
    assert sum(2 not in ids and len(ids) > 1 for ids, _ in expected.values()) >= 2000
    assert any(len(word.encode()) > 1000 for word in expected)
    assert any(ids.count(2) == 1 and len(ids) == 1 and len(word) > 3
               for word, (ids, _) in expected.items())


def test_each_word_ids_and_spans(t5, expected):
    for word, (ids, spans) in expected.items():
        assert t5.encode_with_spans(word.encode()) == (ids, spans), word
        assert t5.encode(word.encode()) == ids, word
        assert t5.count(word.encode()) == len(ids), word


def test_uncached_model_agrees(expected):
    model = UnigramModel.from_json_dict(t5_model_dict(), cache_capacity=0)
    for word, (ids, spans) in expected.items():
        assert model.encode_with_spans(word.encode()) == (ids, spans), word
    assert model.cache_hits == model.cache_misses == 0


def test_words_of_a_text_with_ends(t5, expected):
    words = list(expected)
    for size in (1, 7, 50, len(words)):
        chunk = words[:size]
        data = b"".join(w.encode() for w in chunk)
        ends = list(itertools.accumulate(len(w.encode()) for w in chunk))
        ids, spans = [], []
        start = 0
        for word in chunk:
            word_ids, word_spans = expected[word]
            ids += word_ids
            spans += [s + start for s in word_spans]
            start += len(word.encode())
        assert t5.encode(data, ends) == ids
        assert t5.count(data, ends) == len(ids)
        assert t5.encode_with_spans(data, ends) == (ids, spans)


def test_bad_ends_are_refused(t5):
    for ends in ([2, 1, 3], [1, 5], [1, 2], [-1, 3]):
        with pytest.raises(ValueError):
            t5.encode(b"abc", ends)
    assert t5.encode(b"", []) == []


def test_batch_on_threads_cold_and_warm(expected):
    words = [w.encode() for w in expected]
    model = UnigramModel.from_json_dict(t5_model_dict())
    want = [expected[w.decode()][0] for w in words]
    assert model.encode_many(words, num_threads=2) == want  # cold: misses on two threads
    assert model.cache_misses > 0
    assert model.encode_many(words, num_threads=2) == want  # warm: hits
    assert model.cache_hits >= len({w for w in words if len(w) <= 255})
    texts = [(b"".join(words[i:i + 9]),
              list(itertools.accumulate(len(w) for w in words[i:i + 9])))
             for i in range(0, len(words), 9)]
    flat = [[t for ids in want[i:i + 9] for t in ids] for i in range(0, len(words), 9)]
    assert model.encode_many(texts, num_threads=2) == flat
    assert model.count_many(texts, num_threads=2) == [len(f) for f in flat]
    model.clear_cache()
    assert model.encode_many(words, num_threads=1) == want


def test_vocabulary_lookups(t5):
    vocab = t5_model_dict()["vocab"]
    assert t5.size == len(vocab) == 32100
    assert t5.unk_id == 2 and t5.byte_fallback is False
    for i in (0, 1, 2, 3, 100, 31999, 32099):
        assert t5.id_to_piece(i) == vocab[i][0]
        assert t5.piece_to_id(vocab[i][0]) == i
    assert t5.id_to_piece(32100) is None and t5.id_to_piece(-1) is None
    assert t5.piece_to_id("no such piece") is None
