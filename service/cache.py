"""Bounded LRU in front of the engine, keyed so versions can never share entries.

Key = ``(tokenizer_hash, template_hash or None, special-token policy, add_special_tokens,
other options, text)``. ``tokenizer_hash`` is content-derived and changes whenever
anything that can change ids changes, so a new artifact version (or an edited one under
the same name) can never be answered from another version's entries; two versions with
byte-identical tokenizers share the hash and, by the hash's contract, the ids.

Values are what the route needs to answer without the engine: an ``int`` for counts, or
the serialized JSON fragment (bytes) of one encode result, so a hit costs one dict lookup
and no re-serialization. The byte bound counts key text plus value, approximately.

Thread-safety: routes may fill the cache from worker threads, so every operation holds a
plain lock (cachetools caches are not thread-safe); operations are O(1) dict work.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Hashable
from typing import Any

from cachetools import LRUCache

_MISSING = object()


def _entry_size(key: tuple[Any, ...], value: Any) -> int:
    text = key[-1]
    size = 200 + (sys.getsizeof(text) if isinstance(text, str) else 64)
    if isinstance(value, (bytes, bytearray)):
        size += len(value)
    return size


class ResultCache:
    """LRU bounded by ``max_entries`` and (approximately) ``max_bytes``."""

    def __init__(self, max_entries: int, max_bytes: int, max_text_chars: int) -> None:
        self.enabled = max_entries > 0 and max_bytes > 0
        self.max_entries = max_entries
        self.max_text_chars = max_text_chars
        self._lock = threading.Lock()
        self._lru: LRUCache[Hashable, Any] = LRUCache(
            maxsize=max(max_bytes, 1), getsizeof=self._sizeof
        )
        self.hits = 0
        self.misses = 0
        self.on_hit: Callable[[], None] | None = None
        self.on_miss: Callable[[], None] | None = None

    _pending_size = 0  # set under the lock just before an insert

    def _sizeof(self, value: Any) -> int:
        # cachetools sizes values only; our size includes the key's text, so `put`
        # stores the precomputed size here (under the lock) right before inserting.
        return self._pending_size

    def cacheable(self, text: str) -> bool:
        return self.enabled and len(text) <= self.max_text_chars

    def get(self, key: tuple[Any, ...]) -> Any:
        """Return the cached value or ``None`` (values are never ``None``)."""
        with self._lock:
            value = self._lru.get(key, _MISSING)
        if value is _MISSING:
            self.misses += 1
            if self.on_miss:
                self.on_miss()
            return None
        self.hits += 1
        if self.on_hit:
            self.on_hit()
        return value

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        size = _entry_size(key, value)
        with self._lock:
            if size > self._lru.maxsize:
                return
            while len(self._lru) >= self.max_entries and key not in self._lru:
                self._lru.popitem()
            self._pending_size = size
            self._lru[key] = value

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def bytes(self) -> int:
        return int(self._lru.currsize)
