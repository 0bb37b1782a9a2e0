"""Import hygiene: the engine is a library without HTTP, and the compiled core is loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_imports_engine_pulls_no_web_framework():
    code = (
        "import sys, engine; engine.load('o200k_base').encode('x');"
        "bad = [m for m in ('fastapi', 'starlette', 'uvicorn', 'service') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_imports_compiled_core_is_loaded():
    import engine._bpe
    import engine._offsets

    assert engine._bpe.__file__.endswith((".so", ".pyd"))
    assert engine._offsets.__file__.endswith((".so", ".pyd"))
