"""Typing stub for the compiled BPE model (_bpe.pyx; C-level contract in _bpe.pxd)."""

from collections.abc import Iterable, Sequence

from ...added_vocabulary._literals import LiteralHeads

IMAGE_LAYOUT: int

class Image:
    """A built image's read-only memory, in 2 MiB pages where the system gives them;
    a buffer (``memoryview(image)``, ``bytes(image)``)."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

def build_image(
    tokens: Iterable[tuple[bytes, int]] | None = None,
    merges: Sequence[tuple[bytes, bytes]] | None = None,
    added: Iterable[tuple[bytes, int]] | None = None,
    *,
    tiktoken_data: bytes | None = None,
) -> Image: ...

class BpeModel:
    """Ranks, merges and the id -> bytes table of one vocabulary."""

    def __init__(
        self,
        tokens: Iterable[tuple[bytes, int]] | None = None,
        merges: Sequence[tuple[bytes, bytes]] | None = None,
        added: Iterable[tuple[bytes, int]] | None = None,
        *,
        tiktoken_data: bytes | None = None,
        image: object | None = None,
        whole_piece_lookup: bool = True,
        family: int = -1,
        cache_capacity: int = 65536,
        split_pieces: bool = True,
        backtracking: bool = True,
        char_symbols: bool = True,
        pair_table: bool = True,
        short_memo: bool = True,
    ) -> None: ...
    @property
    def image(self) -> object: ...
    def encode(self, data: bytes, ends: Sequence[int] | None = None) -> list[int]: ...
    def count(self, data: bytes, ends: Sequence[int] | None = None) -> int: ...
    def encode_text(self, text: object, heads: LiteralHeads | None = None) -> list[int] | None: ...
    def count_text(self, text: object, heads: LiteralHeads | None = None) -> int: ...
    def encode_many(self, segments: list[tuple[bytes, Sequence[int] | None]],
                    num_threads: int = 1) -> list[list[int]]: ...
    def count_many(self, segments: list[tuple[bytes, Sequence[int] | None]],
                   num_threads: int = 1) -> list[int]: ...
    def encode_with_spans(self, data: bytes, ends: Sequence[int] | None = None,
                          base: int = 0) -> tuple[list[int], list[int]]: ...
    def encode_piece(self, piece: bytes) -> list[int]: ...
    def decode_bytes(self, ids: Iterable[object]) -> tuple[bytes, list[object]]: ...
    def splits(self) -> list[tuple[int, int] | None]: ...
    @property
    def family(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def cache_hits(self) -> int: ...
    @property
    def cache_misses(self) -> int: ...
    def clear_cache(self) -> None: ...
