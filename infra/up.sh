#!/usr/bin/env bash
# Install everything and start the whole stack: Postgres and Redis (if none answer), then the
# lobby, match and rules services, each its own process, behind the gateway that also serves the
# web client (built here). Ctrl-C stops the services.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install.sh"
bash "$here/ensure-services.sh"
bash "$here/ensure-node.sh"
if ! (cd "$here/../services/web" && npm ci --no-audit --no-fund --loglevel=error \
      && npm run --silent build); then
  echo "the web client did not build (it needs node 20.19+ and npm): the API runs without it" >&2
fi
exec "$here/../.venv/bin/playtable" stack "$@"
