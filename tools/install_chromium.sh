#!/usr/bin/env bash
# Installs Debian's Chromium and chromedriver for the browser tests (tests/browser) when
# /usr/bin/chromium is missing, plus Noto CJK/emoji fonts so screenshots show every glyph.
# Idempotent and quiet: prints nothing and exits 0 when everything is already there.
# Exit status: 0 when /usr/bin/chromium exists afterwards (fonts are best effort).
# A test tool's own browser download (`playwright install`) does not work here: the tests
# drive this system Chromium through the `playwright` Python package.
set -euo pipefail

browser=()
[ -x /usr/bin/chromium ] || browser+=(chromium)
[ -x /usr/bin/chromedriver ] || browser+=(chromium-driver)
fonts=()
installed_fonts=$(fc-list 2>/dev/null || true)
grep -qi "Noto Color Emoji" <<<"$installed_fonts" || fonts+=(fonts-noto-color-emoji)
grep -qi "Noto Sans CJK" <<<"$installed_fonts" || fonts+=(fonts-noto-cjk)
[ ${#browser[@]} -eq 0 ] && [ ${#fonts[@]} -eq 0 ] && exit 0

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  elif [ ${#browser[@]} -gt 0 ]; then
    echo "install_chromium.sh: need root (or passwordless sudo) to apt-get install ${browser[*]}" >&2
    exit 1
  else
    exit 0  # only fonts missing: not worth failing over
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  [ ${#browser[@]} -eq 0 ] && exit 0
  echo "install_chromium.sh: no apt-get; install Chromium yourself (${browser[*]})" >&2
  exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
apt() { DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get "$@" >>"$log" 2>&1; }

apt update -qq || true   # a stale mirror list should not stop an install that can still work
if [ ${#browser[@]} -gt 0 ] && ! apt install -y -qq "${browser[@]}"; then
  tail -n 20 "$log" >&2
  echo "install_chromium.sh: apt-get install ${browser[*]} failed" >&2
  exit 1
fi
if [ ${#fonts[@]} -gt 0 ]; then
  apt install -y -qq "${fonts[@]}" || true
fi
[ -x /usr/bin/chromium ] || { echo "install_chromium.sh: /usr/bin/chromium still missing" >&2; exit 1; }
