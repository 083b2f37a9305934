"""Backlogs after a fault at load: how long match creation and turn clocks stay slow once a
fault is over.

``measure`` plays a load on running services (matches played and tables started by ``Load``,
and a steady stream of 2-seat Hanabi tables with a 1 s clock left to run out), injects one fault
(a callable, run in a thread) and reads back from the database, per second around the fault's
end, each table start's creation latency (its ``CreateMatch`` command recorded until done) and
each clock's lateness (a ``TurnTimedOut`` recorded after its deadline; a clock still running out
at the end counts as late as it is by then), and how long after the fault's end both stay under
``limit_s`` at the 99th percentile. ``playtable bench backlog`` runs it on services of its own
(``run``); ``tests/faults/test_backlog.py`` on the fault suite's.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import psycopg

from services.operator.keys import fresh_key
from shared.infra.settings import Settings
from tools import integrity
from tools.scratch import LOOPBACK, Copies, drop_database, free_port, scratch
from tools.traffic import Endpoints, GaveUp, Load, new_session

ONE_SECOND_CLOCK = {"clock": {"per_move_s": 1}, "on_timeout": "forfeit"}
SERVICES = ("rules", "match", "lobby", "clocks")
"""The services the bench runs (one copy each), in the order of a rolling restart."""


@dataclass
class Second:
    """What happened in one second, counted from the fault's end: table starts recorded then
    (creation latency) and clocks due then (lateness), in seconds."""

    creations: list[float] = field(default_factory=list)
    lateness: list[float] = field(default_factory=list)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * share) - 1)] if ordered else 0.0


@dataclass
class BacklogReport:
    fault: str
    fault_s: float
    limit_s: float
    seconds: dict[int, Second]
    doubled_timeouts: int
    tables_without_match: int
    lost_moves: int
    duplicated_moves: int
    acknowledged_moves: int
    starts_answered_202: int
    publishes: tuple[float, int]
    """Times each command was published on Redis: mean and most (1 when none was repeated)."""

    def over(self, second: int) -> bool:
        """Whether either p99 is at or over the limit in ``second``."""
        found = self.seconds.get(second, Second())
        return (
            percentile(found.creations, 0.99) >= self.limit_s
            or percentile(found.lateness, 0.99) >= self.limit_s
        )

    @property
    def recovered_s(self) -> float | None:
        """Seconds from the fault's end until every later second measured has both p99s
        under the limit (None: the last second measured is still over it)."""
        measured = sorted(second for second in self.seconds if second >= 0)
        if not measured or self.over(measured[-1]):
            return None
        over = [second for second in measured if self.over(second)]
        return float(over[-1] + 1) if over else 0.0

    @property
    def problems(self) -> list[str]:
        found = []
        if self.doubled_timeouts:
            found.append(f"{self.doubled_timeouts} clocks timed out twice")
        if self.tables_without_match:
            found.append(f"{self.tables_without_match} started tables have no match")
        if self.lost_moves or self.duplicated_moves:
            found.append(f"moves lost {self.lost_moves}, duplicated {self.duplicated_moves}")
        if not self.acknowledged_moves:
            found.append("no move was acknowledged")
        return found

    def lines(self) -> list[str]:
        out = [
            f"fault {self.fault}: {self.fault_s:.1f} s; {self.acknowledged_moves} moves"
            f" acknowledged, {self.starts_answered_202} starts answered 202; commands published"
            f" {self.publishes[0]:.2f} times each on average, at most {self.publishes[1]}",
            "  s   starts  create p50   p99 | clocks  late p99",
        ]
        for second in sorted(self.seconds):
            found = self.seconds[second]
            out.append(
                f"{second:4d} {len(found.creations):7d} {percentile(found.creations, 0.5):10.2f}"
                f" {percentile(found.creations, 0.99):5.2f} | {len(found.lateness):6d}"
                f" {percentile(found.lateness, 0.99):9.2f}"
            )
        recovered = self.recovered_s
        out.append(
            f"both p99 under {self.limit_s:.1f} s from "
            + ("never" if recovered is None else f"{recovered:.0f} s after the fault's end")
        )
        out += [f"problem: {problem}" for problem in self.problems]
        return out


_CREATIONS = """
select extract(epoch from created_at), extract(epoch from coalesce(done_at, now()) - created_at)
from commands where command_id not like 'timeout-%%' and created_at >= to_timestamp(%s)
"""
_FIRED = """
select (convert_from(data, 'UTF8')::json ->> 'deadline_ms')::float8 / 1000,
       extract(epoch from recorded_at), stream_id
from events where type = 'TurnTimedOut' and recorded_at >= to_timestamp(%s)
"""
_STILL_DUE = """
select extract(epoch from deadline), extract(epoch from now()) from matches
where status = 'running' and deadline < now()
"""


def read_seconds(database_url: str, since: float, fault_end: float) -> tuple[dict, int]:
    """Each second's creations and clock lateness (from ``since``, epoch s), keyed by seconds
    after ``fault_end``; and how many matches timed out more than once."""
    seconds: dict[int, Second] = defaultdict(Second)
    fired: dict[str, int] = defaultdict(int)
    with psycopg.connect(database_url, autocommit=True) as conn:
        for created, took in conn.execute(_CREATIONS, (since,)).fetchall():
            seconds[math.floor(float(created) - fault_end)].creations.append(float(took))
        for deadline, recorded, stream in conn.execute(_FIRED, (since,)).fetchall():
            fired[stream] += 1
            late = max(0.0, float(recorded) - deadline)
            seconds[math.floor(deadline - fault_end)].lateness.append(late)
        for deadline, now in conn.execute(_STILL_DUE).fetchall():
            late = float(now) - float(deadline)
            seconds[math.floor(float(deadline) - fault_end)].lateness.append(late)
    return dict(seconds), sum(1 for count in fired.values() if count > 1)


def publishes(database_url: str, since: float) -> tuple[float, int]:
    """How many times the commands recorded since ``since`` were published: mean and most."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "select coalesce(avg(attempts), 0), coalesce(max(attempts), 0) from commands"
            " where created_at >= to_timestamp(%s)",
            (since,),
        ).fetchone()
    return (float(row[0]), int(row[1])) if row else (0.0, 0)


_UNSETTLED = """
select (select count(*) from commands where done_at is null)
     + (select count(*) from matches where status = 'running' and deadline is not null)
"""


def unsettled(database_url: str) -> int:
    """Commands not done yet and clocks still running (each of the load's clocked matches
    ends at its first timeout): once none is left, nothing writes unless asked."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(_UNSETTLED).fetchone()
    return row[0] if row else 0


async def measure(
    lobby: str,
    matches: list[str],
    app_key: str,
    database_url: str,
    fault: tuple[str, Callable[[], None]],
    *,
    slots: int = 12,
    think_s: float = 0.25,
    clocks_per_s: float = 3.0,
    warmup_s: float = 5.0,
    after_s: float = 20.0,
    limit_s: float = 2.0,
    settle_s: float = 60.0,
) -> BacklogReport:
    """The load, the fault (``fault``: its name and what injects it, blocking) after
    ``warmup_s``, the load again for ``after_s`` past its end, then the figures, once every
    command is done and every clock has run out (or ``settle_s`` passed): the services write
    nothing more then, so a check of the stores afterwards races nothing."""
    session = new_session(app_key, connections=slots + 40)
    load = Load(session, Endpoints(lobby, matches), slots=slots, seed=11, think_s=think_s)
    stop = asyncio.Event()

    async def clocked_table() -> None:
        with contextlib.suppress(GaveUp):
            await load.open_table("hanabi", 2, hosting=ONE_SECOND_CLOCK)

    async def clocked_tables() -> None:
        opening: set[asyncio.Task[None]] = set()
        while not stop.is_set():
            task = asyncio.create_task(clocked_table())
            opening.add(task)
            task.add_done_callback(opening.discard)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1 / clocks_per_s)
        await asyncio.gather(*opening, return_exceptions=True)

    since = time.time()
    running = [asyncio.create_task(load.run(stop)), asyncio.create_task(clocked_tables())]
    try:
        await asyncio.sleep(warmup_s)
        began = time.monotonic()
        await asyncio.to_thread(fault[1])
        fault_s = time.monotonic() - began
        fault_end = time.time()
        await asyncio.sleep(after_s)
    finally:
        stop.set()
        await asyncio.gather(*running, return_exceptions=True)
        await session.close()
    deadline = time.monotonic() + settle_s
    while await asyncio.to_thread(unsettled, database_url) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    seconds, doubled = await asyncio.to_thread(read_seconds, database_url, since, fault_end)
    logged = await asyncio.to_thread(integrity.check_log, database_url, load)
    orphans = await asyncio.to_thread(
        integrity.tables_without_match, database_url, list(load.tables)
    )
    return BacklogReport(
        fault=fault[0],
        fault_s=fault_s,
        limit_s=limit_s,
        seconds={s: found for s, found in seconds.items() if s <= after_s},
        doubled_timeouts=doubled,
        tables_without_match=len(orphans),
        lost_moves=len(logged.lost),
        duplicated_moves=len(logged.duplicated),
        acknowledged_moves=len(load.acks),
        starts_answered_202=load.start_answers[202],
        publishes=await asyncio.to_thread(publishes, database_url, since),
    )


# --- the bench's own services ----------------------------------------------------------------


class OwnRedis:
    """A redis-server of the bench's own (paused and flushed at will), without persistence."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="playtable-backlog-redis-"))
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: the bench pauses a Redis of its own")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", LOOPBACK, "--save", ""]
            + ["--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def wait_answering(self) -> None:
        import redis

        client = redis.Redis(host=LOOPBACK, port=self.port)
        try:
            for _ in range(300):
                with contextlib.suppress(redis.ConnectionError):
                    if client.ping():
                        return
                time.sleep(0.05)
        finally:
            client.close()
        raise RuntimeError("the bench's redis-server did not start")

    def flush(self) -> None:
        import redis

        client = redis.Redis(host=LOOPBACK, port=self.port)
        try:
            client.flushall()
        finally:
            client.close()

    def pause(self, seconds: float) -> None:
        self.process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGCONT)
        self.process.kill()
        self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def rolling_restart(stack: Copies, services: tuple[str, ...] = SERVICES) -> None:
    """Each service in turn stopped (SIGTERM) and started again, once the one before answers."""
    for service in services:
        process = stack.processes[service, 0]
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            stack.kill(service, 0)
        stack.start(service, 0)
        stack.wait_healthy(service, 0)


def faults(stack: Copies, redis: OwnRedis, pause_s: float) -> dict[str, Callable[[], None]]:
    def kill_match() -> None:
        stack.kill("match", 0)
        time.sleep(1.0)
        stack.start("match", 0)
        stack.wait_healthy("match", 0)

    return {
        "rolling-restart": lambda: rolling_restart(stack),
        "redis-pause": lambda: redis.pause(pause_s),
        "redis-flush": redis.flush,
        "kill-match": kill_match,
    }


async def run_backlog(settings: Settings, args: Any) -> list[BacklogReport]:
    """Each fault asked for, on a fresh database, stream prefix and Redis of its own."""
    reports = []
    for fault in args.fault:
        for _ in range(args.runs):
            redis = OwnRedis()
            database_url, _prefix, env, directory = await scratch(settings, "backlog")
            env.update(REDIS_URL=redis.url, PLAYTABLE_HTTP_WORKERS="1")
            stack = Copies(env, 1, directory)
            try:
                await asyncio.to_thread(redis.wait_answering)
                subprocess.run(
                    [sys.executable, "-m", "services.operator.cli", "migrate"],
                    env=env,
                    check=True,
                    capture_output=True,
                    timeout=120,
                )
                local = msgspec.structs.replace(settings, database_url=database_url)
                app_key = await fresh_key(local, "backlog", "playtable bench backlog")
                for service in SERVICES:
                    stack.start(service, 0)
                for service in SERVICES:
                    await asyncio.to_thread(stack.wait_healthy, service, 0)
                lobby = f"http://{LOOPBACK}:{stack.ports['lobby'][0]}"
                match = f"http://{LOOPBACK}:{stack.ports['match'][0]}"
                report = await measure(
                    lobby,
                    [match],
                    app_key,
                    database_url,
                    (fault, faults(stack, redis, args.pause)[fault]),
                    slots=args.matches,
                    clocks_per_s=args.clocks_per_s,
                    warmup_s=args.warmup,
                    after_s=args.after,
                )
            finally:
                await asyncio.to_thread(stack.stop_all)
                redis.stop()
                await asyncio.to_thread(drop_database, database_url)
            print("\n".join(report.lines()), flush=True)
            reports.append(report)
    return reports


def run(settings: Settings, args: Any) -> int:
    """``playtable bench backlog``: the report of each run; 1 if any found a problem or never
    recovered."""
    reports = asyncio.run(run_backlog(settings, args))
    summary = [
        f"{report.fault}: recovered "
        + ("never" if report.recovered_s is None else f"{report.recovered_s:.0f} s")
        + f" after a {report.fault_s:.1f} s fault"
        for report in reports
    ]
    print("\n".join(summary))
    failed = [r for r in reports if r.problems or r.recovered_s is None]
    return 1 if failed else 0
