"""``python -m tokserve.service [serve options]``: same as ``tokserve serve``."""

import sys

from .cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = ["serve", *args]
    sys.exit(main(args))
