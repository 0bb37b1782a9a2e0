"""Live-server fixtures (the servers themselves are in ``tests/servers.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from servers import LiveServer, ServerProcess
from tokserve import bundled_root
from tokserve.service.runtime.settings import Settings


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
def server_process():
    """The ``ServerProcess`` class: ``with server_process("--workers", "2") as srv: ...``."""
    return ServerProcess


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
