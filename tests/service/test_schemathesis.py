"""Schemathesis against a real server: every check, 0 failures.

The server is ``tokserve serve`` in its own process on loopback; schemathesis reads the
served OpenAPI document and runs its phases (examples, coverage, fuzzing, stateful)
with every check on (``schemathesis.toml``): server errors, status codes, content types, headers and response
schemas against the document, negative-data rejection, positive-data acceptance (see
``schemathesis.toml`` beside this file for its one setting), unsupported methods,
ignored auth. A second, shorter run has an API token set, so the document declares the
bearer scheme and schemathesis checks that it is enforced.

``TOKSERVE_SCHEMATHESIS_SECONDS`` sets the time budget of the main run (default 150).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "schemathesis.toml"
SECONDS = int(os.environ.get("TOKSERVE_SCHEMATHESIS_SECONDS", "150"))


def _run(workdir: Path, url: str, seconds: int, *extra: str) -> str:
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run",
               f"{url}/openapi.json", "--max-time", str(seconds),
               "--workers", "2", "--no-color", "--generation-database", "none",
               "--request-timeout", "30", *extra]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks",  # NDJSON bodies
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 300,
                         cwd=workdir, env=env)  # schemathesis writes state in the cwd
    report = out.stdout + out.stderr
    print(report[-3000:])
    assert out.returncode == 0, report[-6000:]
    cases = re.search(r"(\d+) generated", report)
    assert cases and int(cases.group(1)) > 100, report[-3000:]
    return report


def test_schemathesis_finds_nothing(server_process, tmp_path):
    with server_process("--workers", "1") as srv:
        _run(tmp_path, srv.url, SECONDS)


def test_schemathesis_with_auth_on(server_process, tmp_path):
    token = "schemathesis-token"
    with server_process("--workers", "1", env={"TOKSERVE_AUTH_TOKEN": token}) as srv:
        _run(tmp_path, srv.url, max(30, SECONDS // 5), "--header", f"Authorization: Bearer {token}")
