#!/usr/bin/env bash
# Install everything and start the whole stack: Postgres and Redis (if none answer), then the
# lobby, match and rules services, each its own process, behind the gateway that also serves the
# web client (built here). Ctrl-C stops the services.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install.sh"
bash "$here/ensure-services.sh"
bash "$here/ensure-node.sh"
# The web client: its packages installed when the lock changed, built when a source or the
# contract it is generated from is newer than the last build.
build_web() {
  cd "$here/../services/web"
  if [ ! -f node_modules/.package-lock.json ] \
     || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error || return 1
  fi
  if [ -f dist/index.html ] && [ -z "$(find src index.html ./*.json ./*.ts \
      ../../openapi/openapi.json -newer dist/index.html -print -quit)" ]; then
    return 0
  fi
  npm run --silent build
}
if ! (build_web); then
  echo "the web client did not build (it needs node 20.19+ and npm): the API runs without it" >&2
fi
exec "$here/../.venv/bin/playtable" stack "$@"
