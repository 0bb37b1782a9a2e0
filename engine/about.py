"""What this installation is: the package version and the engine build.

``__version__`` has its one home here (pyproject.toml reads it; the package re-exports
it), so that nothing needs to import the package itself to know it.
"""

from __future__ import annotations

from pathlib import Path

from .models.bpe import _bpe

#: The package version.
__version__ = "0.2.0"


def build_info() -> dict[str, str]:
    """What this installation runs: the package version and the engine build.

    ``engine`` is ``compiled`` when the extension modules are native code (they always
    are: the package does not import without them); ``tokserve --version`` prints it and
    the service exports it as a metric label.
    """
    native = Path(_bpe.__file__).suffix in (".so", ".pyd")
    return {"version": __version__, "engine": "compiled" if native else "fallback"}
