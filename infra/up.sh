#!/usr/bin/env bash
# Install everything and start the whole stack: Postgres and Redis (if none answer), then the
# lobby, match and rules services, each its own process. Ctrl-C stops the services.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install.sh"
bash "$here/ensure-services.sh"
exec "$here/../.venv/bin/playtable" stack "$@"
