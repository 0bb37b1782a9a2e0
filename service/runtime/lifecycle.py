"""A worker's life: loading, ready, draining, stopped.

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

The server that drives it (SIGTERM starts the drain) is ``worker.py``'s; what ends
"loading" is the app's lifespan (``http/app.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..errors import NotReady

log = logging.getLogger("tokserve.lifecycle")


class Lifecycle:
    """Where one app is between loading and exit (see the module docstring)."""

    def __init__(self) -> None:
        self.loaded = False
        self.draining = False
        self.failure: str | None = None
        #: Called with the reason when the server cannot serve at all (the runner stops
        #: the process with ``worker.STARTUP_FAILURE``); unset in-process, where it only
        #: logs.
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
