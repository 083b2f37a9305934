#!/usr/bin/env bash
# Create .venv and install playtable (with the extras named in $1, e.g. "test") into it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv 2>/dev/null || {
    [ "$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv .venv
  }
fi
extras="${1:-}"
# Installed already from this pyproject.toml (with these extras, or any for none): nothing to do,
# so a second ./infra/up.sh starts at once.
stamp=".venv/.installed-${extras:-base}"
hash="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if grep -qx "$hash" "$stamp" 2>/dev/null \
   || { [ -z "$extras" ] && cat .venv/.installed-* 2>/dev/null | grep -qx "$hash"; }; then
  exit 0
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
echo "$hash" >"$stamp"
