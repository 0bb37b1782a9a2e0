"""Where tokenizers come from, as plain functions: the rule ``Settings`` validates with
and the one-shot CLI reads directly (importing pydantic-settings cost a one-shot count
0.1 s, a third of its run time).

Roots are scanned in order: the bundled root (``TOKSERVE_BUNDLED_ARTIFACTS``, default the
installed package data, empty disables it), then ``TOKSERVE_ARTIFACTS`` (``os.pathsep``-
or comma-separated). A later root wins a ``name@version`` clash.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ... import bundled_root

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
