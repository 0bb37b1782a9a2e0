"""An installed tokserve, checked as a user meets it: ``tokserve --version`` names the
compiled engine, the library encodes, and ``tokserve serve`` started from this
interpreter's scripts answers ``POST /encode`` right on a loopback port.

Run with the interpreter of the environment that holds the wheel, from any directory:
``python wheel_smoke.py``. The release workflow runs it (cibuildwheel's test-command) on
every wheel it builds, manylinux and musllinux, x86_64 and aarch64 (under QEMU), and
tests/test_wheel.py runs it here in a fresh venv with no compiler. One script, so the
check CI makes of a published wheel is the one the test suite makes.

Standard library and tokserve's own dependencies only (httpx is one). Prints one JSON
line: the seconds from starting the server to its first right /encode answer.
Exit status 0 on success; anything else raises with the server's output.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import httpx

#: Under QEMU (aarch64 wheels built on x86_64) a start takes far longer than natively.
DEADLINE_SECONDS = 300.0
HELLO_WORLD = {"o200k_base": [24912, 2375], "cl100k_base": [15339, 1917]}


def _tokserve() -> str:
    """The console script installed beside this interpreter, not one found on PATH."""
    script = Path(sysconfig.get_path("scripts")) / "tokserve"
    assert script.is_file(), f"no tokserve script in {script.parent}"
    return str(script)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_version(env: dict[str, str]) -> None:
    out = subprocess.run([_tokserve(), "--version"], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    expected = f"tokserve {version('tokserve')} (engine: compiled)\n"
    assert out == expected, (out, expected)


def check_library() -> None:
    import tokserve

    for name, ids in HELLO_WORLD.items():
        assert tokserve.get_encoding(name).encode("hello world") == ids, name


def check_serve(env: dict[str, str], cwd: str) -> float:
    """Seconds from starting ``tokserve serve`` to its first right /encode answer."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/encode"
    started = time.monotonic()
    proc = subprocess.Popen([_tokserve(), "serve", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"tokserve serve exited {proc.returncode}:\n"
                                     f"{proc.stdout.read()}")
            try:
                r = httpx.post(url, json={"text": "hello world"}, timeout=5)
                if r.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > DEADLINE_SECONDS:
                raise AssertionError("tokserve serve gave no answer in time")
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        body = r.json()
        assert body["ids"] == HELLO_WORLD["o200k_base"], body
        assert body["tokenizer"] == "o200k_base@1", body
        return elapsed
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def main() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKSERVE_")}
    with tempfile.TemporaryDirectory(prefix="tokserve-smoke-") as cwd:
        check_version(env)
        check_library()
        seconds = check_serve(env, cwd)
    print(json.dumps({"serving_seconds": round(seconds, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
