#!/usr/bin/env bash
# Installs Debian's nginx for tests/deploy/test_compose.py (it runs the compose stack's
# nginx config for real, in front of tokserve processes) when no nginx binary exists.
# Best effort and quiet: exits 0 when nginx is there afterwards, 1 otherwise (the test
# then skips and says why). The package's own service is not started here (no init
# system); the test runs nginx itself, as the current user, on a loopback port.
set -euo pipefail

command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] && exit 0
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    echo "install_nginx.sh: need root (or passwordless sudo) to apt-get install nginx" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_nginx.sh: no apt-get; install nginx yourself" >&2
  exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends nginx >>"$log" 2>&1 \
  || { "${SUDO[@]}" apt-get update -qq >>"$log" 2>&1 || true
       "${SUDO[@]}" apt-get install -y -qq --no-install-recommends nginx >>"$log" 2>&1; } \
  || { tail -5 "$log" >&2; exit 1; }
[ -x /usr/sbin/nginx ]
