#!/usr/bin/env bash
# Make Postgres and Redis reachable for the stack and the tests. In order of preference:
# already running; the machine's own packages (started, or installed with apt-get when missing
# and we are root); embedded servers from Python packages (the zero-setup default elsewhere).
# Also install nginx (the gateway `playtable stack` starts itself) when missing and root.
# PLAYTABLE_PG_PORT / PLAYTABLE_REDIS_PORT pick other ports (defaults 5432 / 6379);
# PLAYTABLE_EMBEDDED=1 skips the machine's packages. Embedded servers keep running after this
# script; stop them with: kill $(cat .stack/embedded-*.pid)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
python="${PLAYTABLE_PYTHON:-$root/.venv/bin/python}"
pg_host=127.0.0.1 pg_port="${PLAYTABLE_PG_PORT:-5432}" redis_port="${PLAYTABLE_REDIS_PORT:-6379}"
export PLAYTABLE_PG_PORT="$pg_port" PLAYTABLE_REDIS_PORT="$redis_port"  # for embedded.py

reachable() { "$python" - "$1" "$2" <<'PY'
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1).close()
except OSError:
    sys.exit(1)
PY
}

wait_for() { for _ in $(seq 1 60); do reachable "$1" "$2" && return 0; sleep 0.5; done; return 1; }

# The machine's newest cluster (Debian's postgresql-common), if it is the one on $pg_port.
machine_cluster() {
  local version
  version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)"
  [ -n "$version" ] || return 1
  [ "$pg_port" = "$(pg_conftool -s "$version" main show port 2>/dev/null || echo 5432)" ] || return 1
  echo "$version"
}

start_machine_postgres() {
  if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
    echo "installing PostgreSQL from the machine's packages" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  version="$(machine_cluster)" || return 1
  # trust auth on loopback, as the tests and the stack expect (a development machine)
  hba="/etc/postgresql/$version/main/pg_hba.conf"
  if ! grep -q "playtable" "$hba" 2>/dev/null; then
    sed -i '1i host all all 127.0.0.1/32 trust # playtable\nhost all all ::1/128 trust # playtable\nlocal all all trust # playtable' "$hba"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for "$pg_host" "$pg_port"
}

start_machine_redis() {
  if ! command -v redis-server >/dev/null; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
    echo "installing Redis from the machine's packages" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
    --dir /tmp --logfile /tmp/playtable-redis.log
  wait_for 127.0.0.1 "$redis_port"
}

install_machine_nginx() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
  echo "installing nginx from the machine's packages" >&2
  apt-get update -qq
  local package=nginx-light  # the smallest build with the proxy; newer releases only ship nginx
  [ -n "$(apt-cache policy nginx-light | grep 'Candidate: [0-9]')" ] || package=nginx
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
}

# PLAYTABLE_PG_CONNECTIONS: the connections the caller needs (infra/test.sh: its workers' stacks
# outgrow a default server's 100). The machine's own cluster is raised to it, with a restart,
# once; any other server is left as it is.
raise_machine_postgres_connections() {
  local wanted="${PLAYTABLE_PG_CONNECTIONS:-0}" version current
  [ "$wanted" -gt 0 ] && [ -z "${DATABASE_URL:-}" ] && [ "$(id -u)" = 0 ] || return 0
  command -v pg_ctlcluster >/dev/null || return 0
  version="$(machine_cluster)" || return 0
  current="$(psql -h "$pg_host" -p "$pg_port" -U postgres -Atc 'show max_connections')" || return 0
  [ "$current" -lt "$wanted" ] || return 0
  echo "raising PostgreSQL's max_connections from $current to $wanted (a restart)" >&2
  psql -h "$pg_host" -p "$pg_port" -U postgres -qc "alter system set max_connections = $wanted"
  pg_ctlcluster --skip-systemctl-redirect "$version" main restart
  wait_for "$pg_host" "$pg_port"
}

machine_packages() { [ "${PLAYTABLE_EMBEDDED:-0}" != 1 ]; }

install_embedded_packages() {
  # only the [embedded] extra's requirements: the project itself is already installed
  "$python" - "$root/pyproject.toml" <<'PY'
import subprocess, sys, tomllib
with open(sys.argv[1], "rb") as file:
    requirements = tomllib.load(file)["project"]["optional-dependencies"]["embedded"]
subprocess.run([sys.executable, "-m", "pip", "install", "-q", *requirements], check=True)
PY
}

start_embedded() {
  echo "starting embedded $1 on 127.0.0.1:$2 from Python packages" >&2
  install_embedded_packages
  mkdir -p "$root/.stack"
  local log="$root/.stack/embedded-$1.log" pid
  nohup "$python" "$here/embedded.py" "$1" >"$log" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 120); do
    if reachable 127.0.0.1 "$2"; then echo "$pid" >"$root/.stack/embedded-$1.pid"; return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  echo "embedded $1 did not start; the end of $log:" >&2
  tail -n 20 "$log" >&2
  return 1
}

if [ -z "${DATABASE_URL:-}" ] && ! reachable "$pg_host" "$pg_port"; then
  { machine_packages && start_machine_postgres; } || start_embedded postgres "$pg_port"
fi
machine_packages && raise_machine_postgres_connections
if [ -z "${REDIS_URL:-}" ] && ! reachable 127.0.0.1 "$redis_port"; then
  { machine_packages && start_machine_redis; } || start_embedded redis "$redis_port"
fi
if ! PATH="$PATH:/usr/sbin" command -v nginx >/dev/null && ! install_machine_nginx; then
  echo "nginx is missing (install it as root): the stack runs without its gateway" >&2
fi
echo "postgres and redis are reachable" >&2
