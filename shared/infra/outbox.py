"""The transactional outbox: messages are written with the business change, published after.

A service writes the messages it must publish into ``outbox`` in the same statement as the
events they announce (``shared.infra.eventstore.append_all``), so a crash can never commit one
without the other. The relay then moves rows to Redis and deletes them in one transaction: a crash
before that commit only republishes (at least once), never loses a row.

Relays in several processes take turns under an advisory lock rather than splitting rows with
``SKIP LOCKED``: one relay at a time publishes in id order, so every Redis stream receives its
messages in commit order (appends are serialised by the event store), which consumers rely on
when they skip what they have already seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg
from psycopg_pool import AsyncConnectionPool

from shared.infra.bus import TRANSIENT_ERRORS, Bus, OutageLog

log = logging.getLogger(__name__)

RELAY_LOCK = 0x6F7574626F78  # "outbox": advisory lock key held by the publishing relay

_TAKE = """
DELETE FROM outbox
WHERE id IN (SELECT id FROM outbox ORDER BY id LIMIT %s::int)
RETURNING id, topic, payload
"""


class Pump:
    """Moves what Postgres holds to Redis in passes: when woken after a commit, and at least
    every ``poll_interval_s``. An outage of either is logged once, and passes are retried with
    backoff until it ends; a pump with a ``bus`` pings Redis after a pass during a Redis
    outage, as a pass with nothing to publish did not ask it (its end, logged then, was not)."""

    def __init__(
        self, name: str, *, poll_interval_s: float, linger_s: float = 0.0, bus: Bus | None = None
    ) -> None:
        self._name = name
        self._pinged = bus
        """What a pass during a Redis outage pings."""
        self._poll_interval_s = poll_interval_s
        self._linger_s = linger_s
        self._wakeup = asyncio.Event()

    def wake(self) -> None:
        """Run a pass now rather than at the next poll: call after committing rows."""
        self._wakeup.set()

    async def run_pass(self) -> None:
        raise NotImplementedError

    async def run(self, stop: asyncio.Event) -> None:
        """Run passes whenever woken, and at least every ``poll_interval_s``, until stop."""
        watcher = asyncio.create_task(self._wake_on(stop))
        postgres_outage = OutageLog(log, self._name, "postgres")
        redis_outage = OutageLog(log, self._name)
        backoff = 0.1
        try:
            while not stop.is_set():
                self._wakeup.clear()
                try:
                    await self.run_pass()
                    if redis_outage.down and self._pinged is not None:
                        await self._pinged.redis.ping()
                except (psycopg.Error, *TRANSIENT_ERRORS) as exc:
                    outage = postgres_outage if isinstance(exc, psycopg.Error) else redis_outage
                    outage.failed(exc)
                    delay, backoff = backoff, min(backoff * 2, 5.0)
                else:
                    postgres_outage.succeeded()
                    redis_outage.succeeded()
                    delay, backoff = self._poll_interval_s, 0.1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), timeout=delay)
                    # Under load many commits wake us at once: let a few more land so that one
                    # pass (a handful of round trips) publishes them all.
                    await asyncio.sleep(self._linger_s)
        finally:
            watcher.cancel()

    async def _wake_on(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self.wake()


class OutboxRelay(Pump):
    """Publishes outbox rows on the bus in id order and deletes them once published.

    Each pass (``wake`` after a commit, and at least every ``poll_interval_s``) drains every
    committed row under the advisory lock, whichever process wrote it, so the periodic pass also
    publishes the rows of a process that died between its commit and its relay's pass.
    """

    def __init__(
        self,
        pool: AsyncConnectionPool,
        bus: Bus,
        *,
        batch: int = 500,
        poll_interval_s: float = 1.0,
        linger_s: float = 0.003,
    ) -> None:
        super().__init__(
            "outbox relay", poll_interval_s=poll_interval_s, linger_s=linger_s, bus=bus
        )
        self._pool = pool
        self._bus = bus
        self._batch = batch

    async def run_pass(self) -> None:
        await self.drain()

    async def drain(self) -> int:
        """Publish every row committed so far; return how many were published."""
        total = 0
        while True:
            published = await self._publish_batch()
            total += published
            if published < self._batch:
                return total

    async def _publish_batch(self) -> int:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (RELAY_LOCK,))
            cursor = await conn.execute(_TAKE, (self._batch,))
            rows = sorted(await cursor.fetchall())
            if rows:
                # The deletion commits only after Redis accepted every message.
                await self._bus.publish_many([(topic, payload) for _, topic, payload in rows])
        return len(rows)
