#!/usr/bin/env bash
# Make the OS's Chromium available for the web client's browser tests
# (tests/e2e/test_web_client.py, which skip without it): when /usr/bin/chromium is missing and
# we are root, install the machine's chromium package with apt-get; otherwise say so.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Chromium from the machine's packages" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "chromium is missing (install the chromium package as root): the browser tests will skip" >&2
fi
