"""Fitting a conversation into a context window: ``fit: "drop_oldest"``.

What stays, always: every system and developer message (the instructions), and the last
user turn (the last user message and everything after it: the question being answered
and the tool calls and results that follow it). What may go: whole turns before that,
oldest first. A turn is a user message and the messages after it up to the next user
message (assistant replies, tool calls, tool results), so a template that insists on
alternating roles still sees a well-formed conversation; messages before the first user
message (other than system/developer) form a turn of their own.

The render is repeated for candidate cuts (binary search over how many turns to drop,
so about log2(turns) renders); fewer kept turns never render to more tokens for the
templates we know, and the result is checked by rendering the kept messages anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

KEPT_ROLES = ("system", "developer")


def droppable_turns(messages: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Indices of the turns ``drop_oldest`` may remove, oldest first."""
    roles = [m.get("role") if isinstance(m, Mapping) else None for m in messages]
    last_user = max((i for i, r in enumerate(roles) if r == "user"), default=None)
    if last_user is None:
        return []
    turns: list[list[int]] = []
    for i, role in enumerate(roles[:last_user]):
        if role in KEPT_ROLES:
            continue
        if role == "user" or not turns:
            turns.append([])
        turns[-1].append(i)
    return turns


def drop_oldest(messages: Sequence[Any], max_tokens: int,
                count: Callable[[list[int]], int]) -> tuple[list[int], int]:
    """The fewest oldest turns to drop so that ``count(kept indices) <= max_tokens``:
    ``(dropped indices, count)``. When even dropping every droppable turn is too long,
    that is what it returns (the count is then over ``max_tokens``: the caller refuses).
    ``count`` renders the conversation made of the given message indices."""
    everything = list(range(len(messages)))
    turns = droppable_turns(messages)

    def without(k: int) -> tuple[list[int], list[int]]:
        gone = {i for turn in turns[:k] for i in turn}
        return sorted(gone), [i for i in everything if i not in gone]

    n = count(everything)
    if n <= max_tokens:
        return [], n
    dropped, kept = without(len(turns))
    least = count(kept)
    if least > max_tokens:
        return dropped, least
    lo, hi, best = 1, len(turns), (dropped, least)  # fits(hi); find the smallest that fits
    while lo < hi:
        mid = (lo + hi) // 2
        dropped, kept = without(mid)
        n = count(kept)
        if n <= max_tokens:
            hi, best = mid, (dropped, n)
        else:
            lo = mid + 1
    return best
