"""Build the Cython hot loops (every engine/*.pyx, installed as tokserve.<module>).

Everything else, including the engine/ -> tokserve folder mapping, is in pyproject.toml.
"""
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

extensions = [
    Extension(
        f"tokserve.{pyx.stem}",
        [str(pyx)],
        language="c++",
        include_dirs=["engine"],
        depends=[str(f) for pattern in ("*.h", "*.pxi")
                 for f in sorted(Path("engine").glob(pattern))],
        extra_compile_args=["-O3", "-std=c++17"],
    )
    for pyx in sorted(Path("engine").glob("*.pyx"))
]

# Cython finds .pxd files by qualified name (tokserve/_bpe.pxd), and the package's
# source folder is engine/: a link named tokserve in the build tree lets it find them.
PXD_ROOT = Path("build", "pxd")
PXD_ROOT.mkdir(parents=True, exist_ok=True)
if not (PXD_ROOT / "tokserve").exists():
    (PXD_ROOT / "tokserve").symlink_to(Path("engine").resolve(), target_is_directory=True)

setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES,
                            include_path=[str(PXD_ROOT)]))
