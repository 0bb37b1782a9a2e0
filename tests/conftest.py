"""Shared fixtures: the real tokenizer artifacts, our engine on them, and the references.

The reference builders live in ``conformance/references.py`` (importable by tests and
helpers alike); here they become session fixtures. A fixture that needs a file in
``../shared/artifacts`` uses the repo's bundled copy when there is one and otherwise
skips, naming the file (``shared_files.py``).

Knobs: ``TOKSERVE_CORPUS_MB`` (differential corpus size per tokenizer, default 2) and
``TOKSERVE_HYPOTHESIS_MAX_EXAMPLES`` (per hypothesis test, default 200).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

# Compiled tables of every service a test starts (in process or as a subprocess, which
# inherits this) go to a directory of this run, not to the user's cache.
_TABLES = tempfile.mkdtemp(prefix="tokserve-test-tables-")
os.environ.setdefault("TOKSERVE_TABLES_DIR", _TABLES)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_TABLES, ignore_errors=True)

from conformance.references import (
    ALL_NAMES,
    TIKTOKEN_NAMES,
    Pair,
    get_pair,
)


@pytest.fixture(scope="session", params=ALL_NAMES)
def pair(request) -> Pair:
    """Every tokenizer: ours plus its reference."""
    return get_pair(request.param)


@pytest.fixture(scope="session", params=TIKTOKEN_NAMES)
def tiktoken_pair(request) -> Pair:
    """The tiktoken-format tokenizers (cl100k_base, o200k_base, llama3, qwen)."""
    return get_pair(request.param)


@pytest.fixture(scope="session")
def deepseek_pair() -> Pair:
    return get_pair("deepseek-v4")


@pytest.fixture(scope="session")
def cl100k_pair() -> Pair:
    return get_pair("cl100k_base")


@pytest.fixture(scope="session")
def o200k_pair() -> Pair:
    return get_pair("o200k_base")


@pytest.fixture(scope="session")
def llama3_pair() -> Pair:
    return get_pair("llama3")


def pytest_terminal_summary(terminalreporter) -> None:
    """Print what the differential tests compared (cases, bytes, mismatches)."""
    import sys

    diff = sys.modules.get("conformance.diff")
    if diff is not None and diff.STATS:
        terminalreporter.write_sep("-", "differential comparisons")
        for line in diff.summary_lines():
            terminalreporter.write_line(line)
