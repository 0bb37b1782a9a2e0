"""Work moved off the event loop into a worker thread, leaving nothing behind there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from anyio import to_thread

T = TypeVar("T")


async def in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread, its result or exception handed over in a box that
    only this request holds.

    anyio's worker thread keeps the last job's result or exception in a local until its
    next job, and an exception's traceback holds the frames that raised it, with the
    request's body in their locals: a refused 4 MiB body of bad ids stayed alive that way,
    ~100 MiB per worker thread, until the thread's next job (issue 33). Through the box,
    the thread's job returns None and both go with the request."""
    box: list[Any] = []

    def job() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # raised again below, on the loop
            box.append(_Raised(exc))

    await to_thread.run_sync(job)
    outcome = box.pop()
    if type(outcome) is not _Raised:
        return outcome
    exc, outcome = outcome.exc, None
    try:
        raise exc
    finally:  # this frame is in exc's traceback: no local may hold exc (a cycle,
        exc = None  # freed only by a full collection, with the request's body in it)


class _Raised:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
