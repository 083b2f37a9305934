#!/usr/bin/env bash
# Install Prometheus (with promtool) from the machine's packages when missing and root, the way
# ensure-services.sh installs nginx: the observability test scrapes the stack with it.
set -euo pipefail
PATH="$PATH:/usr/sbin:/usr/bin"
command -v prometheus >/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "prometheus is missing (install it as root): the observability test is skipped" >&2
  exit 1
fi
echo "installing prometheus from the machine's packages" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# the package enables a system service where there is an init system: the tests run their own
command -v systemctl >/dev/null && systemctl disable --now prometheus >/dev/null 2>&1 || true
