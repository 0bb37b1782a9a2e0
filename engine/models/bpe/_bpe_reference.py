"""Pure-Python BPE merge: the oracle the compiled model is tested against.

Deliberately the plainest possible statement of the rule (recompute every adjacent
pair's rank, merge the lowest, leftmost on ties, repeat), quadratic and slow, so that
its correctness is evident by reading. Never used on a request path.
"""

from __future__ import annotations

from collections.abc import Callable


def merge(piece: bytes, pair_rank: Callable[[bytes, bytes], int | None],
          token_id: Callable[[bytes], int]) -> list[int]:
    """Merge ``piece`` byte by byte; ``pair_rank(left, right)`` is None when not mergeable."""
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best = None
        for i in range(len(parts) - 1):
            rank = pair_rank(parts[i], parts[i + 1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return [token_id(p) for p in parts]


def tiktoken_ranks(ranks: dict[bytes, int]):
    """The (pair_rank, token_id) functions for a tiktoken vocabulary."""
    return (lambda a, b: ranks.get(a + b)), ranks.__getitem__


def merges_ranks(vocab: dict[bytes, int], merges: list[tuple[bytes, bytes]]):
    """The (pair_rank, token_id) functions for a tokenizer.json merges list."""
    table: dict[tuple[bytes, bytes], int] = {}
    for rank, pair in enumerate(merges):
        table.setdefault(pair, rank)
    return (lambda a, b: table.get((a, b))), vocab.__getitem__
