"""Real servers for the tests, on free loopback ports.

``LiveServer`` runs the app in a daemon thread of the test process (uvicorn skips signal
handlers off the main thread) and is stopped by setting ``should_exit``. ``ServerProcess``
runs ``python -m tokserve.service serve`` as its own process, for tests that send it
signals or must not share the test process's GIL (fairness checks). Tests talk to either
over real HTTP with httpx: no TestClient, no mocks.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from tokserve.service.http.app import create_app
from tokserve.service.http.deadlines import protocol_with_deadlines
from tokserve.service.runtime.settings import Settings

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """``with LiveServer(settings) as srv: srv.client.post(...)``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # the protocol ``tokserve serve`` runs (one_write, deadlines): every test uses it
        protocol = protocol_with_deadlines(settings.header_timeout, settings.body_timeout)
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port,
                                log_level="warning", access_log=False, lifespan="on",
                                http=protocol)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("live server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)


class ServerProcess:
    """``tokserve serve`` in a subprocess on a free port, with ``args`` added and no
    ``TOKSERVE_*`` (nor ``PROMETHEUS_MULTIPROC_DIR``) variable inherited (``env`` adds
    some); ready once ``ready`` (/healthz) is 200. With ``log`` (a path) its stderr goes
    to that file (``logs()`` reads it), else to a pipe read only if it fails to start."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 ready: str = "/healthz", log: Path | None = None,
                 host: str = "127.0.0.1", port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://{host}:{self.port}"
        self.log = log
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(("TOKSERVE_", "PROMETHEUS_MULTIPROC_DIR"))}
        environ.update(env or {})
        stderr = open(log, "w") if log is not None else subprocess.PIPE  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tokserve.service", "serve", "--host", host,
             "--port", str(self.port), "--log-level", "warning", *args],
            cwd=REPO, env=environ, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        if log is not None:
            stderr.close()
        self.client = httpx.Client(base_url=self.url, timeout=30)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.logs()}")
            try:
                if self.client.get(ready).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.close()
        raise RuntimeError("server did not start")

    def __enter__(self) -> ServerProcess:
        return self

    def logs(self) -> str:
        if self.log is not None:
            return self.log.read_text()
        return self.proc.stderr.read() if self.proc.poll() is not None else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> float:
        """Send ``sig`` and wait for the exit; returns the seconds it took."""
        started = time.monotonic()
        self.proc.send_signal(sig)
        self.proc.wait(timeout=timeout)
        return time.monotonic() - started

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


