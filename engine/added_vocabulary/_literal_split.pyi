"""Typing stub for the added-token stage's compiled literal search (_literal_split.pyx)."""

from array import array
from collections.abc import Iterable

class LiteralSplitter:
    def __init__(self, pairs: Iterable[tuple[bytes, int]], refused: Iterable[bytes] = ()) -> None: ...
    def find(self, data: bytes, stop_on_refused: bool = False) -> array[int] | None: ...
