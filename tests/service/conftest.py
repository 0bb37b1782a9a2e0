"""Live-server fixtures: the real app under uvicorn on a free loopback port.

Each server runs in a daemon thread of the test process (uvicorn skips signal handlers
off the main thread) and is stopped by setting ``should_exit``. Tests talk to it over
real HTTP with httpx — no TestClient, no mocks.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from tokserve.service.app import create_app
from tokserve import bundled_root
from tokserve.service.settings import Settings

REPO = Path(__file__).resolve().parents[2]


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
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port,
                                log_level="warning", access_log=False, lifespan="on")
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


def _bundled(name: str) -> Path:
    path = bundled_root() / name / "1"
    if not (path / "manifest.json").is_file():
        pytest.skip(f"bundled artifact {path / 'manifest.json'} is missing")
    return path


@pytest.fixture(scope="session")
def bundled():
    """``bundled("o200k_base")`` → the bundled version dir ``artifacts/o200k_base/1``."""
    return _bundled


@pytest.fixture(scope="session")
def live_server():
    """The ``LiveServer`` class, for tests that need their own settings."""
    return LiveServer


@pytest.fixture(scope="session")
def o200k(bundled):
    import tokserve

    return tokserve.load(str(bundled("o200k_base")))


@pytest.fixture(scope="session")
def server() -> Iterator[LiveServer]:
    """The service with zero configuration (bundled artifacts, default limits)."""
    if not (bundled_root() / "o200k_base").is_dir():
        pytest.skip(f"bundled artifacts missing under {bundled_root()}")
    with LiveServer(Settings(_env_file=None)) as srv:
        yield srv


@pytest.fixture(scope="session")
def client(server: LiveServer) -> httpx.Client:
    return server.client
