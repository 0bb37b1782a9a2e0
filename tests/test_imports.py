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


def test_imports_every_compiled_module_matches_its_stub():
    """Each compiled module has a .pyi stub beside it naming exactly its public names
    (and each class's public methods), so type checkers and readers see the real API."""
    import ast
    import importlib

    import tokserve

    engine = Path(tokserve.__file__).parent
    modules = sorted(p.stem for p in engine.glob("*.pyx"))
    assert modules == ["_bpe", "_offsets", "_scan", "_trainer"]
    for name in modules:
        stub = ast.parse((engine / f"{name}.pyi").read_text())
        module = importlib.import_module(f"tokserve.{name}")
        declared: dict[str, set[str] | None] = {}
        for node in stub.body:
            if isinstance(node, ast.ClassDef):
                declared[node.name] = {n.name for n in node.body
                                       if isinstance(n, ast.FunctionDef)
                                       and not n.name.startswith("_")}
            elif isinstance(node, ast.FunctionDef):
                declared[node.name] = None
            elif isinstance(node, ast.AnnAssign):
                declared[node.target.id] = None
        public = {n for n, v in vars(module).items() if not n.startswith("_")
                  and getattr(v, "__module__", module.__name__) == module.__name__}
        assert set(declared) == public, name
        for cls, methods in declared.items():
            if methods is not None:
                real = {n for n in vars(getattr(module, cls)) if not n.startswith("_")}
                assert methods == real, f"{name}.{cls}"
