"""Build the Cython hot loops: every .pyx under engine/, installed as tokserve.<dotted path>
(engine/models/bpe/_bpe.pyx is tokserve.models.bpe._bpe).

Everything else, including the engine/ -> tokserve folder mapping, is in pyproject.toml.
"""
import os
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "embedsignature": True,
}

# -O3 for every real build; tests/test_wheel.py, which checks what a wheel holds and that
# it installs and serves (not its speed), builds with -O0 to keep the suite's time down.
OPTIMIZATION = os.environ.get("TOKSERVE_BUILD_OPTIMIZATION", "-O3")
if OPTIMIZATION not in ("-O0", "-O1", "-O2", "-O3"):
    raise SystemExit(f"TOKSERVE_BUILD_OPTIMIZATION must be -O0..-O3, not {OPTIMIZATION!r}")

ENGINE = Path("engine")
# The C/C++ headers: the shared ones in engine/_native, each model's in its own folder.
# Every folder holding a header is on the include path (headers include each other by
# name), and every header or .pxi is a dependency of every extension (a change rebuilds).
NATIVE = sorted(p for pattern in ("*.h", "*.pxi") for p in ENGINE.rglob(pattern))
INCLUDE_DIRS = sorted({str(p.parent) for p in NATIVE if p.suffix == ".h"})

extensions = [
    Extension(
        "tokserve." + ".".join(pyx.relative_to(ENGINE).with_suffix("").parts),
        [str(pyx)],
        language="c++",
        include_dirs=INCLUDE_DIRS,
        depends=[str(p) for p in NATIVE],
        extra_compile_args=[OPTIMIZATION, "-std=c++17"],
    )
    for pyx in sorted(ENGINE.rglob("*.pyx"))
]

# Cython finds .pxd files by qualified name (tokserve/models/bpe/_bpe.pxd), and the
# package's source folder is engine/: a link named tokserve in the build tree lets it
# find them.
PXD_ROOT = Path("build", "pxd")
PXD_ROOT.mkdir(parents=True, exist_ok=True)
if not (PXD_ROOT / "tokserve").exists():
    (PXD_ROOT / "tokserve").symlink_to(ENGINE.resolve(), target_is_directory=True)

setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES,
                            include_path=[str(PXD_ROOT)]))
