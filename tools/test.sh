#!/usr/bin/env bash
# Install what the tests need (the package in editable mode, so the Cython extensions are
# built in place, plus the [test] extras) and run the whole suite.
# Browser tests need Debian's chromium, and the compose stack's nginx test needs nginx;
# both are installed here when missing and possible, otherwise those tests skip and say
# how to enable them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check -e ".[test]"
if [ -x tools/install_chromium.sh ]; then
  bash tools/install_chromium.sh || echo "chromium not installed: browser tests will skip"
fi
if [ -x tools/install_nginx.sh ]; then
  bash tools/install_nginx.sh || echo "nginx not installed: the real-nginx compose test will skip"
fi
# Two worker processes (the machines have two cores): files are dealt to workers whole
# (--dist loadfile), so a file's module-scoped servers start once. Every worker must
# collect the same test ids, so str hashing (which orders sets) is seeded alike.
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
exec "$PY" -P -m pytest -q -n "${TOKSERVE_TEST_WORKERS:-2}" --dist loadfile "$@"
