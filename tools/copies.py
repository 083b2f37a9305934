"""``playtable copies``: several copies of every service behind a real load balancer.

Starts ``copies`` processes of each service (rules workers, lobby, match, webhooks API, webhook
workers) on a fresh database and stream prefix, with nginx in front as the one URL; plays a load
of concurrent matches through nginx, with a webhook subscription to every event delivered to a
receiver of its own on 127.0.0.1; then kills (SIGKILL) one copy of each service in turn and
starts it again. Afterwards it checks what the README promises of several copies: no
acknowledged move lost or doubled, ``playtable verify`` clean, every started table with its
match, every committed event on the published stream and delivered by webhook, each stream in
order, and the throughput back once the copy is. Each phase's moves per second are reported, so
one copy against two measures how the stack scales on a machine.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import psycopg

from services.operator.keys import fresh_key
from shared.infra.settings import Settings
from tools import integrity
from tools.scratch import LOOPBACK, Copies, drop_database, forget_streams, scratch
from tools.traffic import Endpoints, Load, new_session

KILLED = ("lobby", "match", "rules", "webhooks", "webhooks-api")
"""One copy of each is killed in turn, in this order."""


@dataclass
class Phase:
    name: str
    seconds: float
    moves: int

    @property
    def moves_per_s(self) -> float:
        return self.moves / self.seconds if self.seconds else 0.0


def slow_returns(phases: list[Phase], share: float) -> list[str]:
    """Each phase after a copy is back that made less than ``share`` of the moves per second
    of the phase before that copy's kill (all copies up then), not of the first phase: the
    matches' own pace drifts as they go on, which no kill caused."""
    problems = []
    for before, killed, back in zip(phases, phases[1:], phases[2:], strict=False):
        if killed.name.endswith("killed") and back.moves_per_s < share * before.moves_per_s:
            problems.append(
                f"throughput did not return: {back.name} {back.moves_per_s:.1f} moves/s,"
                f" {before.moves_per_s:.1f} before the kill ({before.name})"
            )
    return problems


@dataclass
class CopiesReport:
    copies: int
    matches: int
    phases: list[Phase] = field(default_factory=list)
    acknowledged_moves: int = 0
    lost: int = 0
    duplicated: int = 0
    unacknowledged_commits: int = 0
    webhook_deliveries: int = 0
    webhook_redeliveries: int = 0
    """Deliveries of an event its subscriber had already received (at least once: a worker
    killed between the POST and recording it sends it again)."""
    failed_attempts: dict[str, int] = field(default_factory=dict)
    cpu_ms_per_move: dict[str, float] = field(default_factory=dict)
    """During the first phase: CPU time per acknowledged move of each service's processes (all
    copies), of the Postgres and Redis servers, and of nginx and this process (the load)."""
    postgres_per_move: dict[str, float] = field(default_factory=dict)
    """During the first phase: WAL bytes and commits per acknowledged move."""
    stored_bytes: dict[str, float] = field(default_factory=dict)
    """At the end: bytes (table, indexes and TOAST) per row of the event log, per match of the
    matches row and per snapshot, and the events per match and snapshots per match seen."""
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        phases = [
            f"  {p.name:<24} {p.moves_per_s:7.1f} moves/s ({p.moves} in {p.seconds:.1f} s)"
            for p in self.phases
        ]
        cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in self.cpu_ms_per_move.items())
        postgres = ", ".join(
            f"{name} {value:.1f}" for name, value in self.postgres_per_move.items()
        )
        stored = ", ".join(f"{name} {value:.0f}" for name, value in self.stored_bytes.items())
        return [
            f"{self.copies} cop{'y' if self.copies == 1 else 'ies'} of each service,"
            f" {self.matches} matches at once, through nginx:",
            *phases,
            f"CPU ms per move (first phase): {cpu}",
            f"Postgres per move (first phase): {postgres}",
            f"stored: {stored}",
            f"acknowledged moves {self.acknowledged_moves}: lost {self.lost}, duplicated"
            f" {self.duplicated}, committed unacknowledged {self.unacknowledged_commits};"
            f" webhook deliveries {self.webhook_deliveries}"
            f" ({self.webhook_redeliveries} again); retried attempts"
            f" {sum(self.failed_attempts.values())} {dict(self.failed_attempts)}",
            "problems: none" if not self.problems else f"problems ({len(self.problems)}):",
            *(f"  {problem}" for problem in self.problems[:40]),
        ]


@dataclass
class Deliveries:
    """A webhook receiver's deliveries against the event log."""

    missing: dict[str, list[int]] = field(default_factory=dict)
    """Each stream's committed versions never delivered."""
    late: dict[str, list[int]] = field(default_factory=dict)
    """Each stream's versions first delivered after a later version of it."""
    order: dict[str, list[int]] = field(default_factory=dict)
    """The order the streams of ``late`` were first delivered in."""
    again: int = 0
    """Deliveries of an event its receiver had already received."""

    def problems(self) -> list[str]:
        return [
            *(f"webhooks: {s} never delivered versions {v[:10]}" for s, v in self.missing.items()),
            *(f"webhooks: {s} delivered out of order: {self.order[s][:20]}" for s in self.late),
        ]


class WebhookReceiver:
    """Records every delivery's stream and version, in arrival order; answers each after
    ``delay_s`` (0: at once), as a slow receiver does."""

    def __init__(self) -> None:
        self.received: list[tuple[str, int, str]] = []
        self.port = 0
        self.delay_s = 0.0
        self._runner: Any = None

    async def start(self) -> None:
        from aiohttp import web

        async def receive(request: web.Request) -> web.Response:
            body = msgspec.json.decode(await request.read())
            self.received.append((body["stream_id"], body["version"], body["type"]))
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return web.Response(status=204)

        app = web.Application()
        app.router.add_post("/hook", receive)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, LOOPBACK, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def compare(self, committed: dict[str, int]) -> Deliveries:
        """The deliveries against ``committed`` (each stream's last version)."""
        firsts: dict[str, list[int]] = defaultdict(list)
        seen: set[tuple[str, int, str]] = set()
        found = Deliveries()
        for delivery in self.received:
            if delivery in seen:
                found.again += 1
                continue
            seen.add(delivery)
            stream, version, _type = delivery
            if version not in firsts[stream]:  # MatchFinished shares the last event's version
                if firsts[stream] and version < max(firsts[stream]):
                    found.late.setdefault(stream, []).append(version)
                firsts[stream].append(version)
        for stream, last in committed.items():
            missing = sorted(set(range(1, last + 1)) - set(firsts.get(stream, [])))
            if missing:
                found.missing[stream] = missing
        found.order = {stream: firsts[stream] for stream in found.late}
        return found

    def problems(self, committed: dict[str, int]) -> tuple[list[str], int]:
        """How the deliveries fall short of ``committed``, and how many came again."""
        found = self.compare(committed)
        return found.problems(), found.again


def committed_versions(database_url: str) -> dict[str, int]:
    """Each stream's last version in the event log."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute("select stream_id, max(version) from events group by stream_id")
        return dict(rows.fetchall())


async def play_and_kill(
    copies: Copies,
    app_key: str,
    database_url: str,
    *,
    matches: int,
    warmup_s: float,
    phase_s: float,
    kill: bool,
    report: CopiesReport,
    think_s: float = 0.0,
) -> Load:
    """The load through nginx (paced by ``think_s``, see ``Load``); a phase of ``phase_s`` as
    it is, then per service one with a copy killed and one after it is back. Moves per phase
    go into ``report``."""
    session = new_session(app_key, connections=matches + 10)
    endpoints = Endpoints(copies.url, [copies.url])
    load = Load(session, endpoints, slots=matches, seed=11, think_s=think_s)
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))

    async def phase(name: str) -> None:
        began = time.monotonic()
        await asyncio.sleep(phase_s)
        ended = time.monotonic()
        report.phases.append(Phase(name, ended - began, load.moves_between(began, ended)))

    try:
        await asyncio.sleep(warmup_s)
        cpu_before, postgres_before = copies.cpu_seconds(), await _postgres_counters(database_url)
        load_before = time.process_time()
        await phase("all copies")
        moves = max(report.phases[0].moves, 1)
        cpu_after, postgres_after = copies.cpu_seconds(), await _postgres_counters(database_url)
        cpu = {name: cpu_after[name] - cpu_before.get(name, 0.0) for name in cpu_after}
        cpu["load (this process)"] = time.process_time() - load_before
        report.cpu_ms_per_move = {name: 1000 * s / moves for name, s in sorted(cpu.items())}
        report.postgres_per_move = {
            name: (postgres_after[name] - postgres_before[name]) / moves for name in postgres_after
        }
        for service in KILLED if kill and copies.copies > 1 else ():
            await asyncio.to_thread(copies.kill, service, 0)
            await phase(f"{service} copy killed")
            await asyncio.to_thread(copies.start, service, 0)
            await asyncio.to_thread(copies.wait_healthy, service, 0)
            await phase(f"{service} copy back")
    finally:
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(running), timeout=30)
        except TimeoutError:
            running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await session.close()
    return load


async def _postgres_counters(database_url: str) -> dict[str, float]:
    """The server's WAL position (bytes) and this database's commits so far."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), xact_commit"
            " FROM pg_stat_database WHERE datname = current_database()"
        )
        wal, commits = await cursor.fetchone() or (0, 0)
    return {"WAL bytes": float(wal), "commits": float(commits)}


STORED = {
    "event": ("events", "SELECT count(*) FROM events"),
    "matches row": ("matches", "SELECT count(*) FROM matches"),
    "snapshot": ("match_snapshots", "SELECT count(*) FROM match_snapshots"),
}


def stored_bytes(database_url: str) -> dict[str, float]:
    """Bytes per row (with indexes and TOAST) of the event log, the matches rows and the
    snapshots, and how many events and snapshots a match had."""
    found: dict[str, float] = {}
    counts: dict[str, int] = {}
    with psycopg.connect(database_url, autocommit=True) as conn:
        for label, (table, count) in STORED.items():
            rows = conn.execute(count).fetchone()[0]  # type: ignore[index]
            size = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " WHERE c.oid = %s::regclass OR c.oid IN"
                " (SELECT inhrelid FROM pg_inherits WHERE inhparent = %s::regclass)",
                (table, table),
            ).fetchone()[0]  # type: ignore[index]
            counts[label] = rows
            found[f"bytes per {label}"] = float(size) / rows if rows else 0.0
    matches = max(counts["matches row"], 1)
    found["events per match"] = counts["event"] / matches
    found["snapshots per match"] = counts["snapshot"] / matches
    return found


async def run_copies(
    settings: Settings,
    *,
    copies: int = 2,
    matches: int = 30,
    warmup_s: float = 8.0,
    phase_s: float = 10.0,
    kill: bool = True,
    recovered_share: float = 0.5,
    directory: Path | None = None,
    keep: bool = False,
    webhooks: bool = True,
    think_s: float = 0.0,
) -> CopiesReport:
    """Everything the module docstring says, on a database and stream prefix of its own
    (dropped afterwards unless ``keep``); the report lists every problem found. Without
    ``webhooks`` no subscription is made (the cost of a move without any); ``think_s`` paces
    the load (``Load``)."""
    database_url, prefix, env, directory = await scratch(settings, "copies", directory)
    env.update(
        PLAYTABLE_HTTP_WORKERS="1",
        PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
    )
    report = CopiesReport(copies, matches)
    migrated = subprocess.run(
        [sys.executable, "-m", "services.operator.cli", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if migrated.returncode:
        raise RuntimeError(f"migrate failed: {migrated.stderr[-2000:]}")
    local = msgspec.structs.replace(settings, database_url=database_url)
    app_key = await fresh_key(local, "copies", "playtable copies")
    receiver = WebhookReceiver()
    await receiver.start()
    stack = Copies(env, copies, directory)
    try:
        await asyncio.to_thread(stack.start_all)
        if webhooks:
            await subscribe(stack.url, app_key, receiver.port)
        load = await play_and_kill(
            stack,
            app_key,
            database_url,
            matches=matches,
            warmup_s=warmup_s,
            phase_s=phase_s,
            kill=kill,
            report=report,
            think_s=think_s,
        )
        await _check(
            stack,
            load,
            database_url,
            settings.redis_url,
            prefix,
            receiver if webhooks else None,
            report,
        )
        report.stored_bytes = await asyncio.to_thread(stored_bytes, database_url)
    finally:
        await asyncio.to_thread(stack.stop_all)
        await receiver.stop()
        if not keep:
            await asyncio.to_thread(drop_database, database_url)
            await forget_streams(settings.redis_url, prefix)
    report.problems.extend(slow_returns(report.phases, recovered_share))
    if not report.acknowledged_moves:
        report.problems.append("no move was acknowledged")
    return report


async def subscribe(url: str, app_key: str, port: int) -> None:
    """A webhook subscription of ``app_key``'s app to all its events, sent to ``port``."""
    import aiohttp

    body = {"url": f"http://{LOOPBACK}:{port}/hook"}
    headers = {"X-API-Key": app_key, "Idempotency-Key": uuid.uuid4().hex}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{url}/webhooks/subscriptions", json=body, headers=headers) as r:
            if r.status != 201:
                raise RuntimeError(f"webhook subscription refused: {r.status} {await r.text()}")


async def _check(
    stack: Copies,
    load: Load,
    database_url: str,
    redis_url: str,
    prefix: str,
    receiver: WebhookReceiver | None,
    report: CopiesReport,
) -> None:
    logged = await asyncio.to_thread(integrity.check_log, database_url, load)
    report.acknowledged_moves = len(load.acks)
    report.lost, report.duplicated = len(logged.lost), len(logged.duplicated)
    report.unacknowledged_commits = len(logged.unacknowledged)
    report.failed_attempts = dict(load.errors)
    report.problems += logged.problems
    report.problems += [f"unexpected answer: {answer}" for answer in load.unexpected[:20]]
    tables = list(load.tables)
    await asyncio.to_thread(integrity.wait_started_tables, database_url, tables, 0.0, 30.0)
    orphans = await asyncio.to_thread(integrity.tables_without_match, database_url, tables)
    report.problems += [f"table {table} started, its match missing" for table in orphans]
    report.problems += await asyncio.to_thread(
        integrity.check_published, database_url, redis_url, prefix, {}, 30.0
    )
    verified = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "services.operator.cli", "verify"],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if verified.returncode:
        report.problems.append(f"verify: {(verified.stdout + verified.stderr)[-2000:]}")
    if receiver is None:
        return
    committed = await asyncio.to_thread(committed_versions, database_url)
    deadline = time.monotonic() + 60
    while True:
        missing, again = receiver.problems(committed)
        if not missing or time.monotonic() > deadline:
            break
        await asyncio.sleep(1.0)
    report.webhook_deliveries, report.webhook_redeliveries = len(receiver.received), again
    report.problems += missing


def run(settings: Settings, args: Any) -> int:
    """``playtable copies``: print the report (and write it as JSON with ``--json``)."""
    report = asyncio.run(
        run_copies(
            settings,
            copies=args.copies,
            matches=args.matches,
            warmup_s=args.warmup,
            phase_s=args.phase,
            kill=not args.no_kill,
            keep=args.keep,
            webhooks=not args.no_webhooks,
        )
    )
    print("\n".join(report.lines()))
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(report), indent=2) + "\n")
    return 1 if report.problems else 0
