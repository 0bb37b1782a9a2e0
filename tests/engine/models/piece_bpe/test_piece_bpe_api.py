"""The piece BPE model's calls: batches, threads, the cache, spans, long inputs.

On Llama 2's file: ``encode_many`` on 1 and 2 threads and ``encode`` from several Python
threads at once (the GIL is released; the cache is shared) give what one thread gives;
the cache changes no id and can be emptied; a byte-fallback token's span is its one
byte; a 10^6-character sequence with no space is merged in O(n log n) (a quadratic
merge would take minutes: the bounds here are loose, against such regressions only;
benchmarks/piece_bpe_model_bench.py --hostile measures).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from piece_bpe_texts import hostile_texts, load_pair, normalized, raw_texts


@pytest.fixture(scope="module")
def pair():
    return load_pair("llama2")


@pytest.fixture(scope="module")
def datas(pair):
    _, reference = pair
    texts = normalized(reference, raw_texts())
    return [t.encode("utf-8") for t in texts] + [b"", "▁".encode() * 5000]


def test_encode_many_equals_encode(pair, datas):
    ours, _ = pair
    expected = [ours.encode(d) for d in datas]
    assert ours.encode_many(datas, 1) == expected
    ours.clear_cache()
    assert ours.encode_many(datas, 2) == expected
    assert ours.encode_many([], 2) == []
    with pytest.raises(TypeError):
        ours.encode_many(["text"], 1)
    with pytest.raises(TypeError):
        ours.encode("text")


def test_threads_share_the_model(pair, datas):
    ours, _ = pair
    expected = [ours.encode(d) for d in datas]
    long_docs = [b"".join(datas[i::4]) for i in range(4)]
    expected_long = [ours.encode(d) for d in long_docs]
    for _ in range(2):
        ours.clear_cache()
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(ours.encode, datas)) == expected
            assert list(pool.map(ours.encode, long_docs * 3)) == expected_long * 3


def test_cache_changes_no_id(pair, datas):
    ours, reference = pair
    import json

    from tokserve.models.piece_bpe._piece_bpe import from_model

    uncached = from_model(json.loads(reference.to_str())["model"], cache_capacity=0)
    ours.clear_cache()
    hits = ours.cache_hits
    first = [ours.encode(d) for d in datas]
    again = [ours.encode(d) for d in datas]
    assert ours.cache_hits > hits
    assert first == again == [uncached.encode(d) for d in datas]
    assert uncached.cache_hits == 0
    small = from_model(json.loads(reference.to_str())["model"], cache_capacity=40)
    for _ in range(2):  # a cache far too small for the text is emptied and refilled
        assert [small.encode(d) for d in datas] == first


def test_spans(pair):
    ours, _ = pair
    data = "▁a😀b".encode()
    ids, spans = ours.encode_with_spans(data)
    assert ids[-5:-1] == [ours.piece_to_id(f"<0x{b:02X}>") for b in "😀".encode()]
    assert spans == [0, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9]
    assert ours.encode_with_spans(b"") == ([], [])


def test_long_sequences_are_not_quadratic(pair):
    ours, _ = pair
    for label, text in hostile_texts(10**6).items():
        data = text.encode()
        small = data[: len(data) // 10]
        ours.clear_cache()
        start = time.thread_time()
        ours.count(small)
        t_small = time.thread_time() - start
        start = time.thread_time()
        ours.count(data)
        t_big = time.thread_time() - start
        assert t_big < 5.0, (label, t_big)
        assert t_big < 40 * max(t_small, 0.005), (label, t_small, t_big)
