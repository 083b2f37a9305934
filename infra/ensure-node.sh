#!/usr/bin/env bash
# Make node and npm available for the tests that build a TypeScript client from the contract
# (tests/e2e/test_generated_clients.py, which skips without them) and for the web client
# (services/web: ./infra/up.sh builds it, tests/e2e/test_web_client.py too; its Vite needs node
# 20.19 or later): when node is missing and we are root, install the machine's nodejs and npm
# packages with apt-get; otherwise say so.
set -euo pipefail
if command -v node >/dev/null; then
  command -v npm >/dev/null || echo "npm is missing: the TypeScript client tests will skip" >&2
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Node.js and npm from the machine's packages" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
else
  echo "node is missing (install nodejs and npm as root): the TypeScript client tests will skip" >&2
fi
