#!/usr/bin/env bash
# Install everything (with the test tools), make Postgres and Redis reachable, run all tests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install.sh" test
bash "$here/ensure-services.sh"
bash "$here/ensure-node.sh"
bash "$here/ensure-chromium.sh"
bash "$here/ensure-prometheus.sh" || true  # without it, the observability test is skipped
cd "$here/.."
exec .venv/bin/python -m pytest "$@"
