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
        # no-tree-loop-distribute-patterns: GCC turned the merge loop's few-element
        # shifts into memmove calls (5% of the time on Cyrillic text, in the PLT stub)
        extra_compile_args=["-O3", "-std=c++17", "-fno-tree-loop-distribute-patterns"],
    )
    for pyx in sorted(Path("engine").glob("*.pyx"))
]

setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES))
