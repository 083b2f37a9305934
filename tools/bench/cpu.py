"""The CPU time of every process of a running stack, read from /proc, and what it comes to per
move (``bench api`` reads it at both ends of its window)."""

from __future__ import annotations

import os
from pathlib import Path

from shared.infra.settings import Settings
from tools.traffic import CLI_MODULE

CpuReading = dict[tuple[int, int], tuple[str, float]]
"""CPU seconds so far of each counted process, by (pid, start time), with what it is."""


async def server_pids(settings: Settings) -> dict[int, str]:
    """The Postgres postmaster and the Redis server the stack uses (other servers on this
    machine, a benchmark peer's say, are not the stack's)."""
    import psycopg

    from shared.infra.bus import redis_client

    async with await psycopg.AsyncConnection.connect(settings.database_url) as conn:
        backend = (await (await conn.execute("select pg_backend_pid()")).fetchone() or (0,))[0]
    postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    redis = redis_client(settings)
    try:
        redis_pid = int((await redis.info("server"))["process_id"])
    finally:
        await redis.aclose()
    return {postmaster: "postgres", redis_pid: "redis"}


def stack_cpu_seconds(servers: dict[int, str], database: str) -> CpuReading:
    """CPU time so far of every process of the stack: each ``playtable <service>`` process with
    its children (Celery's pool; only those under a ``playtable stack``, if one runs, so that
    other copies on the machine, a test's, are left out), the ``servers`` with their processes
    (of Postgres, the background ones and the backends of ``database`` only), nginx, and this
    process (the load). Each process's own time and its ended children's."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    reading: dict[int, tuple[int, float]] = {}
    kind: dict[int, str] = {}
    excluded: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        pid = int(stat.parent.name)
        try:
            text = stat.read_text()
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        parent[pid] = int(fields[1])
        reading[pid] = int(fields[19]), sum(int(field) for field in fields[11:15]) / ticks
        title = argv[0].decode(errors="replace").split()
        if pid == os.getpid():
            kind[pid] = "load (bench client)"
        elif pid in servers:
            kind[pid] = servers[pid]
        elif CLI_MODULE in argv[:-1]:
            kind[pid] = argv[argv.index(CLI_MODULE) + 1].decode()
        elif name.startswith("nginx"):
            kind[pid] = "nginx"
        elif name.startswith("postgres") and backend_database(title) not in (None, database):
            excluded.add(pid)  # a backend of another database: not the stack's
    stacks = {pid for pid, what in kind.items() if what == "stack"}

    def counted_as(pid: int) -> str | None:
        ancestor, what = pid, None
        while ancestor in parent and ancestor > 1:
            if ancestor in excluded:
                return None
            if what is None and ancestor in kind:
                what = kind[ancestor]
            if ancestor in stacks or ancestor in servers:
                return what
            ancestor = parent[ancestor]
        if what is None or (stacks and what not in ("nginx", "load (bench client)")):
            return None  # a service outside the running stack
        return what

    counted: CpuReading = {}
    for pid, (started, spent) in reading.items():
        what = counted_as(pid)
        if what is not None:
            counted[pid, started] = what, spent
    return counted


def backend_database(title: list[str]) -> str | None:
    """The database of a Postgres backend from its process title (``postgres: [cluster:] user
    database address activity``), None for a background process."""
    for at, word in enumerate(title):
        if at >= 2 and ("(" in word or word == "[local]"):
            return title[at - 1]
    return None


def cpu_per_move_table(before: CpuReading, after: CpuReading, moves: int) -> str:
    """CPU ms per move of each kind of process between two ``stack_cpu_seconds`` readings,
    with the stack's total (every process but the load's). A process that ended in between
    is not counted (its time is lost); one that started counts from nothing."""
    spent: dict[str, float] = {}
    for process, (what, seconds) in after.items():
        earlier = before.get(process, (what, 0.0))[1]
        spent[what] = spent.get(what, 0.0) + seconds - earlier
    stack = sum(value for name, value in spent.items() if not name.startswith("load"))
    rows = sorted(spent.items(), key=lambda item: -item[1])
    cells = ", ".join(f"{name} {1000 * value / max(moves, 1):.3f}" for name, value in rows)
    return f"CPU ms per move: stack total {1000 * stack / max(moves, 1):.2f} ({cells})"
