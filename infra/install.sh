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
.venv/bin/python -m pip install -q --upgrade pip
extras="${1:-}"
.venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
