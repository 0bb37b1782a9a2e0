"""A worker's life: loading, ready, draining, stopped; and the server that drives it.

Readiness (``Lifecycle``, one per app):

* **loading**: with one worker, artifacts load in the background after the socket
  opens (``create_app(load_in_background=True)``): /healthz and /readyz are 503, and
  every operation that needs artifacts answers 503 ``not_ready`` (``reason: loading``)
  with ``Retry-After``. With several workers each loads before it accepts connections
  (``ServeOptions.load_in_background``), so no request meets a loading worker.
* **ready**: loaded, at least one tokenizer, not draining: /readyz 200.
  Loaded with none (``--allow-empty``, or a reload that removed every version):
  /readyz 503 ``no_tokenizers``, /healthz 503 ``no_artifacts``.
* **draining**: SIGTERM arrived. /readyz is 503 ``draining`` so load balancers stop
  sending new requests; /healthz stays 200 (the process is alive, a liveness probe must
  not restart it); every request is still served, each answer carrying
  ``Connection: close`` so clients and proxies open their next connection elsewhere.
  After ``drain_seconds`` the server stops accepting, finishes in-flight requests within
  ``graceful_timeout`` and exits.

``DrainingServer`` is uvicorn's ``Server`` with that SIGTERM handling (``handle_exit``)
and a watch on its parent (a worker whose supervisor died exits). SIGINT (Ctrl+C) skips
the drain; a second SIGINT stops at once, as in uvicorn. ``run_worker`` builds logging,
the app and the server the way ``uvicorn.run`` does; ``supervisor.py`` runs N of them.
"""

from __future__ import annotations

import copy
import logging
import logging.config
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn

from ..errors import NotReady

log = logging.getLogger("tokserve.lifecycle")

#: Exit status of a worker that could not start serving (nothing loadable): the same as
#: uvicorn's, so its supervisor stops instead of restarting it forever.
STARTUP_FAILURE = 3


class Lifecycle:
    """Where one app is between loading and exit (see the module docstring)."""

    def __init__(self) -> None:
        self.loaded = False
        self.draining = False
        self.failure: str | None = None
        #: Called with the reason when the server cannot serve at all (the runner stops
        #: the process with ``STARTUP_FAILURE``); unset in-process, where it only logs.
        self.on_failure: Callable[[str], None] | None = None

    def not_ready(self, tokenizers: int) -> NotReady | None:
        """Why /readyz is 503 (None: ready), given the number of served tokenizers."""
        if self.draining:
            return NotReady("the server is draining before it stops; send new requests "
                            "to another replica", reason="draining")
        if not self.loaded:
            return NotReady("artifacts are still loading; retry shortly", reason="loading")
        if tokenizers == 0:
            return NotReady("no tokenizer artifact is loaded", reason="no_tokenizers")
        return None

    def begin_drain(self) -> None:
        self.draining = True

    def fail(self, reason: str) -> None:
        """Nothing can be served (loading ended with no tokenizer and ``allow_empty`` off)."""
        self.failure = reason
        log.error("cannot serve: %s", reason)
        if self.on_failure is not None:
            self.on_failure(reason)


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
    from ..http.app import create_app
    from ..http.one_write import OneWriteProtocol
    from .reload import defer_sighup
    from .settings import get_settings

    defer_sighup()
    logging.config.dictConfig(copy.deepcopy(options.log_config))
    app = create_app(get_settings(), load_in_background=options.load_in_background)
    # proxy_headers off: uvicorn's X-Forwarded-For/-Proto rewrite of the scope's client
    # and scheme costs every request a pass over its headers, and nothing here reads
    # either (logs and metrics carry no client address; no URL is built from the scheme).
    # OneWriteProtocol: the hot routes' head and body leave in one write (``one_write``).
    config = uvicorn.Config(
        app, host=options.host, port=options.port, log_config=None, access_log=False,
        server_header=False, lifespan="on", proxy_headers=False,
        http=OneWriteProtocol,
        timeout_graceful_shutdown=max(1, round(options.graceful_timeout)),
    )
    server = DrainingServer(config, app.lifecycle, drain_seconds=options.drain_seconds,
                            parent_pid=parent_pid)
    server.run(sockets=sockets)
    if not server.started:
        return STARTUP_FAILURE
    return server.exit_code
