"""Where tokenizers come from, as plain functions: the rule ``Settings`` validates with
and the one-shot CLI reads directly (importing pydantic-settings cost a one-shot count
0.1 s, a third of its run time), and ``load_one``, the one tokenizer a one-shot command
uses.

Roots are scanned in order: the bundled root (``TOKSERVE_BUNDLED_ARTIFACTS``, default the
installed package data, empty disables it), then ``TOKSERVE_ARTIFACTS`` (``os.pathsep``-
or comma-separated). A later root wins a ``name@version`` clash.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ... import bundled_root

if TYPE_CHECKING:
    from ...tokenizer import Tokenizer

#: the tokenizer a request or command that names none gets
DEFAULT_TOKENIZER = "o200k_base"


def split_roots(value: str) -> list[str]:
    """``TOKSERVE_ARTIFACTS``'s value -> its roots (blank parts dropped)."""
    parts = value.replace(",", os.pathsep).split(os.pathsep)
    return [p.strip() for p in parts if p.strip()]


def roots_from_env(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """The artifact roots ``Settings().artifact_roots()`` gives for ``environ``."""
    bundled = environ.get("TOKSERVE_BUNDLED_ARTIFACTS")
    roots = [bundled_root()] if bundled is None else ([Path(bundled)] if bundled.strip() else [])
    return roots + [Path(p) for p in split_roots(environ.get("TOKSERVE_ARTIFACTS", ""))]


def default_tables_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The user's own cache directory for compiled tables (XDG's rule)."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "tokserve" / "tables"


def default_from_env(environ: Mapping[str, str] = os.environ) -> str:
    return environ.get("TOKSERVE_DEFAULT_TOKENIZER") or DEFAULT_TOKENIZER


class UnknownTokenizer(Exception):
    """``load_one`` found no such tokenizer under the roots (the CLI's exit status 2)."""

    code = "tokenizer_not_found"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def load_one(roots: Sequence[Path], spec: str | None) -> Tokenizer:
    """Load only the tokenizer ``spec`` names, as the server would resolve it (a later
    root's ``name@version`` wins; a bare name is its newest version).

    Not the service's Registry: that one loads every root and imports the web stack,
    which made counting one string cost 0.54 s against 0.20 s for this.
    """
    from ... import bundled_names, load
    from ...versions import check_name

    if spec is None:
        raise UnknownTokenizer("no tokenizer given and no default is configured")
    name, _, version = spec.partition("@")
    check_name(name, "name")  # before it becomes a path under any root
    if version:
        check_name(version, "version")
    for root in reversed(list(roots)):
        folder = Path(root) / name
        if folder.is_dir() and (not version or (folder / version / "manifest.json").is_file()):
            return load(spec, root=root)
    available = sorted({n for root in roots for n in bundled_names(root)})
    raise UnknownTokenizer(f"unknown tokenizer {spec!r}; available: "
                           f"{', '.join(available) or 'none'}")
