"""Bounded LRU in front of the engine, keyed so versions can never share entries.

Every answer is keyed the same way (``CacheKey``), text and chat alike: ``(tokenizer_hash,
template, policy, add_special_tokens, options, text)``. ``tokenizer_hash`` is
content-derived and changes whenever anything that can change ids changes, so a new
artifact version (or an edited one under the same name) can never be answered from
another version's entries; two versions with byte-identical tokenizers share the hash
and, by the hash's contract, the ids.

Admission on the second sighting: ``lookup`` tells the caller to ``store`` a key's value
only when the key was looked up before (a set of key hashes, cleared when it reaches
``max_entries``, remembers the first sightings).
Most texts a billing or serving gateway sends are seen once; storing each would fill the
cache with entries that never hit, at the cost of an insert and a 1 KB+ allocation per
request (page faults while the cache grows, evictions once it is full). Texts that do
repeat (system prompts, retries, templates) are stored from their second request on.

Values are what the route needs to answer without the engine: an ``int`` for counts, the
serialized JSON fragment (bytes) of one encode result, or for a chat the serialized body
and its count, so a hit costs one dict lookup
and no re-serialization. The byte bound counts key text plus value, approximately.

Thread-safety: routes may fill the cache from worker threads, so every operation holds a
plain lock; operations are O(1) dict work.

Why not ``cachetools.LRUCache``: its pure-Python ``__setitem__`` (size callback, eviction
loop) cost about 9 µs per insert, a quarter of a whole cold 1 KB /count on the fast lane;
``OrderedDict`` (C) keeps the recency order for well under a microsecond.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

#: The one key type of the cache, six slots whatever the answer:
#:
#: 0. the tokenizer's hash (``Entry.hash``);
#: 1. the template: None for a text; for a chat, how it becomes tokens
#:    (``("template", template_hash)`` or OpenAI's accounting);
#: 2. the special-token policy (``special_tokens``; a chat's ``reserved_literals``);
#: 3. ``add_special_tokens`` (a chat's ids never get the post-processor's: False);
#: 4. every other option that changes the answer, a tuple whose first item names the
#:    kind of answer (``"encode"``, ``"count"``, ``"chat"``);
#: 5. the text: the caller's, or a chat's messages, tools and template_kwargs as sent,
#:    serialized (its size is what ``cacheable`` bounds and the byte bound counts).
CacheKey = tuple[str, Hashable, str, bool, tuple[Hashable, ...], str]


def _entry_size(key: CacheKey, value: Any) -> int:
    text = key[-1]
    size = 200 + (sys.getsizeof(text) if isinstance(text, str) else 64)
    for part in value if isinstance(value, tuple) else (value,):
        if isinstance(part, (bytes, bytearray)):
            size += len(part)
    return size


class ResultCache:
    """LRU bounded by ``max_entries`` and (approximately) ``max_bytes``."""

    def __init__(self, max_entries: int, max_bytes: int, max_text_chars: int) -> None:
        self.enabled = max_entries > 0 and max_bytes > 0
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_text_chars = max_text_chars
        self._lock = threading.Lock()
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()  # key -> (value, size)
        self._bytes = 0
        self._seen: set[int] = set()  # hashes of keys put once (see "Admission")
        # lookups by kind ("text", "chat"), counted under the lock; the metrics read them
        self.hits: dict[str, int] = {"text": 0, "chat": 0}
        self.misses: dict[str, int] = {"text": 0, "chat": 0}

    def cacheable(self, text: str) -> bool:
        return self.enabled and len(text) <= self.max_text_chars

    def lookup(self, key: CacheKey, kind: str = "text") -> tuple[Any, bool]:
        """``(value, False)`` on a hit; on a miss ``(None, store)``, ``store`` saying
        whether the caller should ``store`` the value it computes (the key's second
        sighting; see "Admission"). Values are never ``None``. ``kind`` ("text" or
        "chat") labels the hit or miss in the metrics. One lock for all of it: a cold
        request pays for the cache once."""
        with self._lock:
            item = self._data.get(key)
            if item is not None:
                self._data.move_to_end(key)
                self.hits[kind] += 1
                return item[0], False
            self.misses[kind] += 1
            digest = hash(key)  # the text's hash is kept by the str: no second pass
            if digest in self._seen:
                return None, True
            if len(self._seen) >= self.max_entries:
                self._seen.clear()
            self._seen.add(digest)
            return None, False

    def store(self, key: CacheKey, value: Any) -> None:
        """Store ``value`` (the oldest entries go when a bound is passed)."""
        size = _entry_size(key, value)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, size)
            self._bytes += size
            while len(self._data) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, evicted) = self._data.popitem(last=False)
                self._bytes -= evicted

    def __len__(self) -> int:
        return len(self._data)

    @property
    def bytes(self) -> int:
        return self._bytes
