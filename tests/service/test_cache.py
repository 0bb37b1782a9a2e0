"""ResultCache: bounded in entries and bytes, counts hits and misses, admits on the
second sighting."""

from __future__ import annotations

from tokserve.service.cache import ResultCache


def _key(i: int, text: str = "t") -> tuple:
    return ("sha256:h", None, "reject", False, ("count",), f"{text}{i}")


class _Admitted(ResultCache):
    """Every put counts as the second sighting (to test the bounds and the LRU)."""

    def put(self, key, value) -> None:
        super().put(key, value)
        super().put(key, value)


def test_cache_admits_a_key_on_its_second_put():
    cache = ResultCache(max_entries=10, max_bytes=10**9, max_text_chars=100)
    cache.put(_key(1), 1)
    assert cache.get(_key(1)) is None and len(cache) == 0
    cache.put(_key(1), 1)
    assert cache.get(_key(1)) == 1


def test_cache_first_sightings_are_forgotten_in_bounded_memory():
    cache = ResultCache(max_entries=10, max_bytes=10**9, max_text_chars=100)
    cache.put(_key(0), 0)
    for i in range(1, 11):  # ten more first sightings: the set of seen keys is cleared
        cache.put(_key(i), i)
    assert len(cache._seen) <= 10
    cache.put(_key(0), 0)  # a first sighting again, not stored
    assert cache.get(_key(0)) is None


def test_cache_bounded_in_entries():
    cache = _Admitted(max_entries=3, max_bytes=10**9, max_text_chars=100)
    for i in range(10):
        cache.put(_key(i), i)
    assert len(cache) == 3
    assert cache.get(_key(9)) == 9 and cache.get(_key(0)) is None
    assert (cache.hits["text"], cache.misses["text"]) == (1, 1)


def test_cache_bounded_in_bytes():
    cache = _Admitted(max_entries=10**6, max_bytes=20_000, max_text_chars=10**6)
    for i in range(100):
        cache.put(_key(i), b"x" * 1000)
    assert cache.bytes <= 20_000 and 0 < len(cache) < 100


def test_cache_lru_order():
    cache = _Admitted(max_entries=2, max_bytes=10**9, max_text_chars=100)
    cache.put(_key(1), 1)
    cache.put(_key(2), 2)
    cache.get(_key(1))
    cache.put(_key(3), 3)
    assert cache.get(_key(1)) == 1 and cache.get(_key(2)) is None


def test_cache_keys_differ_by_hash_and_options():
    cache = _Admitted(max_entries=100, max_bytes=10**9, max_text_chars=100)
    cache.put(("sha256:a", None, "allow", False, ("count",), "x"), 1)
    assert cache.get(("sha256:b", None, "allow", False, ("count",), "x")) is None
    assert cache.get(("sha256:a", None, "text", False, ("count",), "x")) is None
    assert cache.get(("sha256:a", None, "allow", True, ("count",), "x")) is None
    assert cache.get(("sha256:a", None, "allow", False, ("count",), "x")) == 1


def test_cache_disabled_and_long_texts_bypass():
    assert not ResultCache(0, 10**6, 100).cacheable("x")
    cache = ResultCache(10, 10**6, max_text_chars=5)
    assert cache.cacheable("12345") and not cache.cacheable("123456")
