"""``python -m tokserve.tiktoken_shim``: run a program with tokserve as its tiktoken.

usage:
  python -m tokserve.tiktoken_shim script.py [args...]
  python -m tokserve.tiktoken_shim -m module [args...]
  python -m tokserve.tiktoken_shim -c code [args...]
  python -m tokserve.tiktoken_shim --pythonpath

The program runs as ``python script.py`` (``-m``, ``-c``) would run it: ``__name__`` is
``"__main__"`` and ``sys.argv`` lacks this prefix; the shim is installed first. Processes
it starts inherit ``PYTHONPATH`` with the stand-in folder first, so they get the shim
too. ``--pythonpath`` prints that folder, for starting programs through the environment.
"""

from __future__ import annotations

import os
import runpy
import sys

from ..errors import TiktokenAlreadyImported
from . import PYTHONPATH_DIR, install, pythonpath

_USAGE = __doc__.split("\n\n")[1]


def main(argv: list[str] | None = None) -> int:
    """Run the program ``argv`` names (see the module docstring); the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in ([], ["-h"], ["--help"]):
        print(__doc__.strip(), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    if args[0] == "--pythonpath":
        print(PYTHONPATH_DIR)
        return 0
    if args[0] in ("-m", "-c") and len(args) < 2:
        print(f"tokserve.tiktoken_shim: {args[0]} needs an argument\n{_USAGE}", file=sys.stderr)
        return 2
    try:
        install()
    except TiktokenAlreadyImported as e:
        print(f"tokserve.tiktoken_shim: {e.message}", file=sys.stderr)
        return 1
    os.environ["PYTHONPATH"] = pythonpath()
    if args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[0] == "-c":
        sys.argv = ["-c", *args[2:]]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = args
        if not sys.flags.safe_path:  # as `python script.py`: the script's folder first
            sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
