"""ResultCache: bounded in entries and bytes, counts hits and misses, admits on the
second sighting."""

from __future__ import annotations

from tokserve.service.runtime.cache import ResultCache


def _key(i: int, text: str = "t") -> tuple:
    return ("sha256:h", None, "reject", False, ("count",), f"{text}{i}")


def test_cache_admits_a_key_on_its_second_sighting():
    cache = ResultCache(max_entries=10, max_bytes=10**9, max_text_chars=100)
    assert cache.lookup(_key(1)) == (None, False)  # first sighting: do not store
    assert cache.lookup(_key(1)) == (None, True)   # second: store what you compute
    cache.store(_key(1), 1)
    assert cache.lookup(_key(1)) == (1, False) and len(cache) == 1


def test_cache_first_sightings_are_forgotten_in_bounded_memory():
    cache = ResultCache(max_entries=10, max_bytes=10**9, max_text_chars=100)
    cache.lookup(_key(0))
    for i in range(1, 11):  # ten more first sightings: the set of seen keys is cleared
        cache.lookup(_key(i))
    assert len(cache._seen) <= 10
    assert cache.lookup(_key(0)) == (None, False)  # a first sighting again


def test_stored_entries_outlive_the_first_sightings_set():
    cache = ResultCache(max_entries=4, max_bytes=10**9, max_text_chars=100)
    cache.store(_key(0), 0)
    for i in range(1, 20):
        cache.lookup(_key(i))
    assert cache.lookup(_key(0)) == (0, False)


def test_cache_bounded_in_entries():
    cache = ResultCache(max_entries=3, max_bytes=10**9, max_text_chars=100)
    for i in range(10):
        cache.store(_key(i), i)
    assert len(cache) == 3
    assert cache.lookup(_key(9)) == (9, False) and cache.lookup(_key(0))[0] is None
    assert (cache.hits["text"], cache.misses["text"]) == (1, 1)
    cache.lookup(_key(9), kind="chat")
    assert (cache.hits["chat"], cache.misses["chat"]) == (1, 0)


def test_cache_bounded_in_bytes():
    cache = ResultCache(max_entries=10**6, max_bytes=20_000, max_text_chars=10**6)
    for i in range(100):
        cache.store(_key(i), b"x" * 1000)
    assert cache.bytes <= 20_000 and 0 < len(cache) < 100


def test_cache_lru_order():
    cache = ResultCache(max_entries=2, max_bytes=10**9, max_text_chars=100)
    cache.store(_key(1), 1)
    cache.store(_key(2), 2)
    cache.lookup(_key(1))
    cache.store(_key(3), 3)
    assert cache.lookup(_key(1))[0] == 1 and cache.lookup(_key(2))[0] is None


def test_cache_keys_differ_by_hash_and_options():
    cache = ResultCache(max_entries=100, max_bytes=10**9, max_text_chars=100)
    cache.store(("sha256:a", None, "allow", False, ("count",), "x"), 1)
    assert cache.lookup(("sha256:b", None, "allow", False, ("count",), "x"))[0] is None
    assert cache.lookup(("sha256:a", None, "text", False, ("count",), "x"))[0] is None
    assert cache.lookup(("sha256:a", None, "allow", True, ("count",), "x"))[0] is None
    assert cache.lookup(("sha256:a", None, "allow", False, ("count",), "x"))[0] == 1


def test_cache_disabled_and_long_texts_bypass():
    assert not ResultCache(0, 10**6, 100).cacheable("x")
    cache = ResultCache(10, 10**6, max_text_chars=5)
    assert cache.cacheable("12345") and not cache.cacheable("123456")
