"""Run an embedded Postgres or Redis from Python packages, for machines that have neither.

Used by ensure-services.sh only when no server answers and the machine's packages cannot be
installed. It keeps running in the foreground until killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / ".stack"


def run_postgres() -> None:
    import pgserver  # type: ignore[import-not-found]

    server = pgserver.get_server(DATA / "pgdata", cleanup_mode=None)
    bin_dir = Path(server.pg_bin)  # type: ignore[attr-defined]
    server.cleanup()  # stop the socket-only instance pgserver starts, then serve on TCP
    subprocess.run(
        [
            str(bin_dir / "pg_ctl"),
            "-D",
            str(DATA / "pgdata"),
            "-w",
            "start",
            "-o",
            "-h 127.0.0.1 -p 5432 -k /tmp",
        ],
        check=True,
    )
    signal.sigwait({signal.SIGINT, signal.SIGTERM})


def run_redis() -> None:
    import redis_server  # type: ignore[import-not-found]

    os.execv(
        redis_server.REDIS_SERVER_PATH,
        [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
    )


if __name__ == "__main__":
    DATA.mkdir(exist_ok=True)
    {"postgres": run_postgres, "redis": run_redis}[sys.argv[1]]()
    while True:
        time.sleep(3600)
