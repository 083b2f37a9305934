#!/usr/bin/env bash
# Install everything (with the test tools), make Postgres and Redis reachable, run all tests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install.sh" test
PLAYTABLE_PG_CONNECTIONS=300 bash "$here/ensure-services.sh"  # three workers' stacks
bash "$here/ensure-node.sh"
bash "$here/ensure-chromium.sh"
bash "$here/ensure-prometheus.sh" || true  # without it, the observability test is skipped
cd "$here/.."
# three workers, a test file's tests in one (its services start once): on two cores a third keeps
# both busy while the others wait on their services. PLAYTABLE_TEST_WORKERS=0 runs in this one.
# The longest files go first (tests/durations.json), in that order: not xdist's most tests first.
exec .venv/bin/python -m pytest -n "${PLAYTABLE_TEST_WORKERS:-3}" --dist loadfile \
    --no-loadscope-reorder "$@"
