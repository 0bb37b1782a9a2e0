"""Hot reload: rescan the artifact roots and publish what is there, without a restart.

Triggered by SIGHUP (handler installed by the app's lifespan) and by POST /admin/reload.
The rescan (``Registry.sync``) loads and verifies new versions in a worker thread, so
requests keep being served from the old table until the new one is published in one
step; in-flight requests finish on the ``Entry`` they resolved. Results cached for a
removed version can never answer another: cache keys hold the tokenizer hash.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable

from anyio import to_thread

from .registry import SyncReport
from .state import ServiceState

log = logging.getLogger("tokserve.reload")


async def reload_artifacts(state: ServiceState, trigger: str) -> SyncReport:
    """Rescan ``state.settings.artifact_roots()``; concurrent calls run one after another."""
    roots = state.settings.artifact_roots()
    report = await to_thread.run_sync(state.registry.sync, roots)
    state.metrics.set_artifacts(state.registry.entries())
    outcome = "refused_some" if report.failed else "ok"
    state.metrics.reloads.labels(trigger, outcome).inc()
    if report.failed:
        state.metrics.artifact_failures.inc(len(report.failed))
    return report


_deferred = threading.Event()


def defer_sighup() -> None:
    """From process start until ``install_sighup``: remember a SIGHUP instead of dying of
    it (the default action) or dropping it. A worker that is still loading when the
    operator adds a version and sends SIGHUP may have scanned the roots before the
    version was there; ``install_sighup`` rescans once for it. Main thread only."""
    _deferred.clear()
    signal.signal(signal.SIGHUP, lambda sig, frame: _deferred.set())


def install_sighup(state: ServiceState, after: asyncio.Future | None = None
                   ) -> Callable[[], None]:
    """Reload on SIGHUP; returns the function that uninstalls the handler. A SIGHUP
    remembered by ``defer_sighup`` reloads now. Reloads wait for ``after`` (the initial
    load, when it runs in the background), so a rescan never races it.

    Only possible in the main thread of a process that owns its signals (``tokserve
    serve``); elsewhere (an app served from a thread, Windows) this logs and does nothing.
    """
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task] = set()

    async def run() -> None:
        if after is not None and not after.done():
            await asyncio.wait({after})
        try:
            await reload_artifacts(state, "sighup")
        except Exception:  # a failed rescan must not kill the loop; the old table stays
            log.exception("SIGHUP reload failed; still serving the previous artifacts")

    def on_hup() -> None:
        log.info("SIGHUP: rescanning artifact roots")
        task = loop.create_task(run())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    try:
        loop.add_signal_handler(signal.SIGHUP, on_hup)
    except (NotImplementedError, RuntimeError, ValueError, AttributeError) as exc:
        log.info("SIGHUP reload not available here (%s); use POST /admin/reload", exc)
        return lambda: None
    if _deferred.is_set():
        _deferred.clear()
        log.info("SIGHUP received while starting")
        on_hup()
    return lambda: loop.remove_signal_handler(signal.SIGHUP)
