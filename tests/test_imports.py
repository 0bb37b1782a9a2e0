"""Import hygiene: the engine is a library without HTTP, and the compiled core is loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_imports_engine_pulls_no_web_framework(tmp_path):
    code = (
        "import sys, tokserve; tokserve.load('o200k_base').encode('x');"
        "bad = [m for m in ('fastapi', 'starlette', 'uvicorn', 'httpx', 'tokserve.service')"
        " if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_imports_only_the_tokserve_namespace(tmp_path):
    """Outside the checkout, the source folder names are not importable: one namespace."""
    for name in ("engine", "service"):
        result = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=tmp_path,
                                capture_output=True, text=True)
        assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr, name


def test_imports_compiled_core_is_loaded():
    import tokserve._bpe
    import tokserve._offsets

    assert tokserve._bpe.__file__.endswith((".so", ".pyd"))
    assert tokserve._offsets.__file__.endswith((".so", ".pyd"))
