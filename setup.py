"""Build the Cython hot loops; everything else is declared in pyproject.toml."""
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
        "engine._bpe",
        ["engine/_bpe.pyx"],
        language="c++",
        extra_compile_args=["-O3", "-std=c++17"],
    ),
]

setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES))
