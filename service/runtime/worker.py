"""One server process: uvicorn's ``Server`` that drains on SIGTERM, and the runner that
builds logging, the app and the server the way ``uvicorn.run`` does.

``DrainingServer`` adds to uvicorn's server the SIGTERM handling of ``lifecycle.py``
(``handle_exit``: /readyz 503 and ``Connection: close`` for ``drain_seconds``, then stop)
and a watch on its parent (a worker whose supervisor died exits). SIGINT (Ctrl+C) skips
the drain; a second SIGINT stops at once, as in uvicorn. ``run_worker`` serves one app;
``supervisor.py`` runs N of them on one socket.
"""

from __future__ import annotations

import copy
import logging
import logging.config
import os
import signal
import socket
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn

from .lifecycle import Lifecycle
from .settings import get_settings

log = logging.getLogger("tokserve.lifecycle")

#: Exit status of a worker that could not start serving (nothing loadable): the same as
#: uvicorn's, so its supervisor stops instead of restarting it forever.
STARTUP_FAILURE = 3


class DrainingServer(uvicorn.Server):
    """uvicorn's server, draining on SIGTERM (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, lifecycle: Lifecycle, *,
                 drain_seconds: float, parent_pid: int | None = None) -> None:
        super().__init__(config)
        self.lifecycle = lifecycle
        self.drain_seconds = drain_seconds
        self.parent_pid = parent_pid
        self.exit_code = 0
        self._drain_until: float | None = None
        lifecycle.on_failure = self._fail

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Not uvicorn's: it also re-raises the signal after a graceful stop, which would
        # kill the process before `tokserve serve` removes its metrics directory.
        if self.should_exit or self._drain_until is not None:
            if sig == signal.SIGINT:  # Ctrl+C during a drain or a stop: stop now / force
                self.force_exit = self.should_exit
                self.should_exit = True
            return
        if sig == signal.SIGTERM and self.drain_seconds > 0:
            self.lifecycle.begin_drain()
            self._drain_until = time.monotonic() + self.drain_seconds
            log.info("SIGTERM: draining for %gs (/readyz 503, Connection: close), then "
                     "stopping", self.drain_seconds)
            return
        self.lifecycle.begin_drain()
        self.should_exit = True

    async def on_tick(self, counter: int) -> bool:
        if self._drain_until is not None and time.monotonic() >= self._drain_until:
            self.should_exit = True
        if (self.parent_pid is not None and counter % 10 == 0
                and os.getppid() != self.parent_pid):
            log.error("the supervisor (pid %d) is gone; stopping", self.parent_pid)
            self.parent_pid = None
            self.lifecycle.begin_drain()
            self.should_exit = True
        return await super().on_tick(counter)

    def _fail(self, reason: str) -> None:
        self.exit_code = STARTUP_FAILURE
        self.should_exit = True


@dataclass(frozen=True)
class ServeOptions:
    """What ``tokserve serve`` hands every worker (picklable: workers may be spawned)."""

    host: str
    port: int
    drain_seconds: float
    graceful_timeout: float
    log_config: dict[str, Any]
    #: Accept connections while artifacts load (503 ``not_ready`` meanwhile). One worker
    #: does; with several, each loads first and only then takes connections from the
    #: shared socket, so a worker that starts while its siblings serve (a replacement)
    #: never answers "loading": connections go to the siblings, or wait in the listen
    #: backlog until the first worker is ready.
    load_in_background: bool = True


def run_worker(options: ServeOptions, sockets: list[socket.socket] | None = None,
               parent_pid: int | None = None) -> int:
    """Serve until stopped; returns the exit status (``STARTUP_FAILURE`` when nothing
    could be served). Settings come from the ``TOKSERVE_*`` environment."""
    # Imported here, not with this module: they import prometheus_client, which must
    # come after `tokserve serve` has set PROMETHEUS_MULTIPROC_DIR (supervisor.py).
    from ..http.app import create_app
    from ..http.deadlines import protocol_with_deadlines
    from .reload import defer_sighup

    defer_sighup()
    logging.config.dictConfig(copy.deepcopy(options.log_config))
    settings = get_settings()
    app = create_app(settings, load_in_background=options.load_in_background)
    # proxy_headers off: uvicorn's X-Forwarded-For/-Proto rewrite of the scope's client
    # and scheme costs every request a pass over its headers, and nothing here reads
    # either (logs and metrics carry no client address; no URL is built from the scheme).
    # The protocol: the hot routes' head and body leave in one write (``one_write``), and
    # a request's head and body must arrive within their deadlines (``deadlines``).
    config = uvicorn.Config(
        app, host=options.host, port=options.port, log_config=None, access_log=False,
        server_header=False, lifespan="on", proxy_headers=False,
        http=protocol_with_deadlines(settings.header_timeout, settings.body_timeout),
        timeout_graceful_shutdown=max(1, round(options.graceful_timeout)),
    )
    server = DrainingServer(config, app.lifecycle, drain_seconds=options.drain_seconds,
                            parent_pid=parent_pid)
    server.run(sockets=sockets)
    if not server.started:
        return STARTUP_FAILURE
    return server.exit_code
