"""Bodies built to cost the worker memory or time: bounded, and the memory given back.

A long list of wrong-typed items used to cost one pydantic error object per item, kept
alive after the answer by the worker thread that raised it (anyio keeps its last job's
outcome) and by the traceback's frames: ``{"ids": ["x", ...]}`` of 10^6 items left a
worker ~300 MiB larger after its 422 (issue 33). Checked here on a real server process,
its RSS read from /proc, and on ``in_thread`` itself.
"""

from __future__ import annotations

import sys
import time
import weakref

import orjson
import pytest

from event_loops import run_in_fresh_thread

from tokserve.service.runtime.offload import in_thread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads the worker's RSS from /proc")


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _settled_growth(pid: int, baseline: float) -> float:
    """RSS over ``baseline`` once the request's objects are gone: the answer is written
    before the handler's frames unwind, so give them a moment (they take milliseconds;
    memory kept alive stays)."""
    deadline = time.monotonic() + 3
    while True:
        grown = _rss_mib(pid) - baseline
        if grown < 64 or time.monotonic() > deadline:
            return grown
        time.sleep(0.05)


_BAD = [
    ("/decode", {"ids": ["x"] * 10**6}, 422, "ids.0"),
    ("/decode", {"batch_ids": [["x"] * 1000] * 1000}, 422, "batch_ids.0.0"),
    ("/encode", {"texts": [1] * 10**6}, 422, "texts.0"),
    ("/compat/vllm/detokenize", {"tokens": ["x"] * 10**6}, 400, "tokens.0"),
    ("/compat/sglang/detokenize", {"tokens": ["x"] * 10**6}, 400, "tokens"),
]


def test_hostile_bodies_long_wrong_lists_leave_no_memory_behind(server_process):
    with server_process() as srv:
        pid = srv.proc.pid
        srv.client.post("/decode", json={"ids": [1, 2, 3]})  # warm: imports, threads
        baseline = _rss_mib(pid)
        for path, body, status, where in _BAD:
            r = srv.client.post(path, content=orjson.dumps(body),
                                headers={"content-type": "application/json"})
            assert r.status_code == status, (path, r.text[:300])
            assert where in r.text and "999 more)" in r.text, r.text[:300]
            assert len(r.content) < 8192  # the errors listed are capped
            grown = _settled_growth(pid, baseline)
            assert grown < 64, f"{path}: the worker kept {grown:.0f} MiB after answering"


class _Payload:
    """Stands for a request's parsed body: weakly referenceable, so its death is seen."""


def test_hostile_bodies_in_thread_keeps_nothing_of_a_failed_job():
    """The job's exception is raised on the caller's side, and once it is handled
    nothing of the job (its frames, their locals) stays alive: no reference from the
    worker thread, and no cycle waiting for the collector (the check runs with the
    collector off)."""
    import gc

    async def main() -> weakref.ref:
        payload = _Payload()
        ref = weakref.ref(payload)

        def work() -> None:
            body = payload  # noqa: F841 - a local of the raising frame, as parse_json's
            raise ValueError("refused")

        with pytest.raises(ValueError, match="refused"):
            await in_thread(work)
        del payload, work
        return ref

    gc.disable()
    try:
        ref = run_in_fresh_thread(main)
        assert ref() is None, "a failed job's frame outlived the request"
    finally:
        gc.enable()


def test_hostile_bodies_in_thread_returns_the_result():
    assert run_in_fresh_thread(lambda: in_thread(lambda: 41 + 1)) == 42
