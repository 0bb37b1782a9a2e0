"""Typing stub for the added-token stage's compiled pre-check (_literals.pyx)."""

from collections.abc import Iterable

class LiteralHeads:
    def __init__(self, literals: Iterable[bytes]) -> None: ...
    def present(self, data: bytes) -> bool: ...
