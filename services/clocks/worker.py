"""The clocks service: finds the matches whose first running clock has run out and sends the
match service a ``TimeOut`` for each, through the durable command path.

Postgres holds every clock: the match service publishes each clocked match's deadline in its
read model ``match_deadlines`` (docs/architecture.md), so this process keeps nothing of its own: a
copy killed at any point, several copies at once, or a wiped Redis only delay a timeout. Each
timeout's command is named by the match and version it fires at, so it is recorded once however
many copies see it; the match service applies it only if the match is still at that version (a
move that came first wins), in the transaction that marks the command done.

It sleeps until the next deadline it knows of (at most ``clocks_poll_s``). Only clocked matches
say when they set a clock (``ClockSet`` on ``CLOCKS_STREAM``, read by every copy), and one that
runs out sooner wakes it: matches without clocks cost it nothing, and a word lost with Redis only
waits for the next look.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from datetime import datetime
from typing import NamedTuple

import msgspec
from psycopg import AsyncConnection
from psycopg.rows import args_row
from psycopg_pool import AsyncConnectionPool

from shared.domain.messages import ClockSet, TimeOut, command, now_ms
from shared.edge.runtime import run_until_signalled
from shared.infra import tracing
from shared.infra.bus import PAYLOAD_FIELD, TRANSIENT_ERRORS, Bus, OutageLog, redis_client
from shared.infra.commands import CommandRedriver
from shared.infra.db import new_pool, open_when_reachable
from shared.infra.metrics import TIMEOUTS_SENT, Metrics, serve_metrics
from shared.infra.readiness import ReadyChecks, ready_checks
from shared.infra.settings import Settings
from shared.infra.streams import CLOCKS_STREAM, MATCH_TIMEOUTS_STREAM

log = logging.getLogger(__name__)

BATCH = 500
FOLLOW_BLOCK_MS = 1000
"""How long one read of ``CLOCKS_STREAM`` waits for a clock to be set."""

REDRIVE_POLL_S = 1.0
"""How often this process's command re-driver looks for timeouts to send again (it is woken
at once for those it just recorded; a timeout sent again waits 1 s, then 2 s)."""

_LOOK = """
select * from (
    select match_id, version, deadline, null::float8 from match_deadlines
    where deadline <= now() order by deadline limit %s) due
union all
select null, null, null, extract(epoch from min(deadline) - now())::float8
from match_deadlines where deadline > now()
"""
"""The clocks run out (up to a batch), then one row with the seconds until the next deadline
(null: none): a look at nothing due is one round trip."""


class _Looked(NamedTuple):
    """A row of ``_LOOK``: a clock run out, or (match_id None) the seconds to the next one."""

    match_id: str | None
    version: int | None
    deadline: datetime | None
    next_s: float | None


_RECORD = """
insert into commands (command_id, topic, subject, payload)
select * from unnest(%s::text[], %s::text[], %s::text[], %s::bytea[])
on conflict (command_id) do nothing
"""


def timeout_command_id(match_id: str, version: int) -> str:
    """One command per match and version: a timeout can fire only once at a version."""
    return f"timeout-{match_id}-{version}"


class ClockWatch:
    """Records a ``TimeOut`` for every clock that ran out, then sleeps until the next deadline
    (at most ``poll_s``: a timeout recorded but not applied yet is looked at again then, and
    its command is re-driven), unless a clock set meanwhile runs out sooner (``follow``)."""

    def __init__(
        self, pool: AsyncConnectionPool, redriver: CommandRedriver, bus: Bus, settings: Settings
    ):
        self.pool = pool
        self.redriver = redriver
        self.bus = bus
        self.topic = settings.stream(MATCH_TIMEOUTS_STREAM)
        self.clocks_set = settings.stream(CLOCKS_STREAM)
        self.poll_s = settings.clocks_poll_s
        self._woken = asyncio.Event()
        self._look_at_ms = math.inf
        """When the watch looks next (epoch ms); infinity while it looks, so that a clock set
        meanwhile, which that look may have missed, wakes it again."""

    async def run(self, stop: asyncio.Event) -> None:
        stopping = asyncio.create_task(self._wake_on(stop))
        try:
            while not stop.is_set():
                self._woken.clear()
                self._look_at_ms = math.inf
                try:
                    wait = await self.fire_due()
                except Exception:
                    log.exception("looking for clocks that ran out failed; trying again")
                    wait = max(self.poll_s, 1.0)
                self._look_at_ms = now_ms() + wait * 1000
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._woken.wait(), wait)
        finally:
            stopping.cancel()

    async def _wake_on(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self._woken.set()

    async def follow(self, stop: asyncio.Event) -> None:
        """Read the clocks set (``ClockSet``) and wake the watch for one that runs out before
        it would look; Redis failing only leaves the watch to its looks."""
        outage = OutageLog(log, "clocks following the clocks set")
        after: str | None = None
        while not stop.is_set():
            try:
                if after is None:
                    after = await self.bus.newest_id(self.clocks_set)
                entries = await self.bus.read(self.clocks_set, after, block_ms=FOLLOW_BLOCK_MS)
            except TRANSIENT_ERRORS as error:
                outage.failed(error)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_s)
                continue
            outage.succeeded()
            for entry_id, fields in entries:
                after = entry_id
                self.clock_set((fields or {}).get(PAYLOAD_FIELD, b""))

    def clock_set(self, payload: bytes) -> None:
        """A clock was set: look now if it runs out before the next look."""
        try:
            deadline_ms = _clock_set.decode(payload).deadline_ms
        except msgspec.DecodeError:
            log.warning("ignored an entry of %s it cannot read: %r", self.clocks_set, payload)
            return
        if deadline_ms < self._look_at_ms:
            self._woken.set()

    async def fire_due(self) -> float:
        """Record the timeouts due now; return how long to sleep until the next deadline (at
        most ``poll_s``)."""
        while True:
            async with self.pool.connection() as conn:
                looked = conn.cursor(row_factory=args_row(_Looked))
                rows = await (await looked.execute(_LOOK, (BATCH,))).fetchall()
                due = [row for row in rows if row.match_id is not None]
                next_s = next(row.next_s for row in rows if row.match_id is None)
                recorded = await self._record(conn, due) if due else 0
            if recorded:
                TIMEOUTS_SENT.inc(recorded)
                self.redriver.wake()
            if len(due) < BATCH:
                return self.poll_s if next_s is None else min(self.poll_s, max(0.0, next_s))

    async def _record(self, conn: AsyncConnection, due: list[_Looked]) -> int:
        """Record a ``TimeOut`` per clock run out (one statement); how many were new."""
        ids, subjects, payloads = [], [], []
        for match_id, version, deadline, _ in due:
            body = TimeOut(match_id=match_id, version=version, deadline_ms=_ms(deadline))
            envelope = command("TimeOut", body, command_id=timeout_command_id(match_id, version))
            ids.append(envelope.command_id)
            subjects.append(f"match-{match_id}")
            payloads.append(msgspec.json.encode(envelope))
        found = await conn.execute(_RECORD, (ids, [self.topic] * len(ids), subjects, payloads))
        return found.rowcount


_clock_set = msgspec.json.Decoder(ClockSet)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


async def serve(settings: Settings, stop: asyncio.Event) -> None:
    """Bootstrap: Postgres, Redis, the command re-driver and the watch, until stopped."""
    tracing.configure(settings, "clocks")
    pool = new_pool(settings.database_url, min_size=1, max_size=4)
    redis = redis_client(settings)
    bus = Bus(redis)
    redriver = CommandRedriver(pool, bus, poll_interval_s=REDRIVE_POLL_S)
    watch = ClockWatch(pool, redriver, bus, settings)
    exporter = None
    if settings.metrics_port:
        ready = ReadyChecks(ready_checks(lambda: pool, lambda: redis))
        exporter = await serve_metrics(
            Metrics({}), settings.host, settings.metrics_port, ready.failed
        )
    try:
        if not await open_when_reachable(pool, settings.database_url, stop, "starting"):
            return
        log.info("clocks %s watching deadlines", settings.instance_id)
        await asyncio.gather(redriver.run(stop), watch.run(stop), watch.follow(stop))
    finally:
        if exporter is not None:
            await exporter.cleanup()
        await redis.aclose()
        await pool.close()


def run_clocks(settings: Settings) -> None:
    """``playtable clocks``: until SIGINT or SIGTERM."""
    run_until_signalled(serve, settings)
