"""Running a coroutine from a test, whatever the main thread's event loop is doing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any


def run_in_fresh_thread(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    """``asyncio.run(coro_fn())`` in a thread of its own: the suite's browser tests leave a
    running event loop in the main thread (playwright's sync API), where ``asyncio.run``
    refuses to start."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = asyncio.run(coro_fn())
        except BaseException as exc:  # re-raised in the test's thread below
            out["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(120)
    if "error" in out:
        raise out.pop("error")
    return out["value"]
