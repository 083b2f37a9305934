"""The transactional outbox: messages are written with the business change, published after.

A service writes the messages it must publish into ``outbox`` inside the same transaction as the
events they announce, so a crash can never commit one without the other. The relay then moves
rows to Redis and deletes them in one transaction: a crash before that commit only republishes
(at least once), never loses a row.

Relays in several processes take turns under an advisory lock rather than splitting rows with
``SKIP LOCKED``: one relay at a time publishes in id order, so every Redis stream receives its
messages in commit order (appends are serialised by the event store), which consumers rely on
when they skip what they have already seen. A process may also publish what it has just
committed itself, without reading it back (``OutboxRelay.publish``); the rows then stay as the
safety net until deleted, and the first copy of each message still arrives in each stream's
order (see ``OutboxRelay``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Sequence
from typing import NamedTuple

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from shared.bus import TRANSIENT_ERRORS, Bus, OutageLog

log = logging.getLogger(__name__)

RELAY_LOCK = 0x6F7574626F78  # "outbox": advisory lock key held by the publishing relay

_ENQUEUE = """
INSERT INTO outbox (topic, payload)
SELECT o.topic, o.payload
FROM unnest(%s::text[], %s::bytea[]) WITH ORDINALITY AS o(topic, payload, n)
ORDER BY o.n
"""

_TAKE = """
DELETE FROM outbox
WHERE id IN (SELECT id FROM outbox ORDER BY id LIMIT %s::int)
RETURNING id, topic, payload
"""

_TAKE_ORPHANS = """
DELETE FROM outbox
WHERE id IN (
    SELECT id FROM outbox
    WHERE created_at < clock_timestamp() - %s::float8 * interval '1 second'
    ORDER BY id LIMIT %s::int
)
RETURNING id, topic, payload
"""

FORGET = "DELETE FROM outbox WHERE id = ANY(%s::bigint[])"
"""Deletes rows published directly (``OutboxRelay.take_published``)."""


async def enqueue(conn: AsyncConnection, items: Sequence[tuple[str, bytes]]) -> None:
    """Add ``(stream, payload)`` messages to the outbox, in the caller's transaction."""
    if not items:
        return
    await conn.execute(_ENQUEUE, ([topic for topic, _ in items], [payload for _, payload in items]))


class Pump:
    """Moves what Postgres holds to Redis in passes: when woken after a commit, and at least
    every ``poll_interval_s``. An outage of either is logged once, and passes are retried with
    backoff until it ends."""

    def __init__(self, name: str, *, poll_interval_s: float, linger_s: float = 0.0) -> None:
        self._name = name
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


class _Direct(NamedTuple):
    """Messages a process has just committed, with their outbox rows: published as they are."""

    items: list[tuple[str, bytes]]
    ids: list[int]


_DRAIN = None
"""A queued drain: every committed row, in id order."""


class OutboxRelay(Pump):
    """Publishes outbox rows on the bus and deletes them once published, two ways, taken in
    one queue so that what this process committed goes out in commit order.

    A drain (``wake``, and at start) publishes every committed row in id order under the
    advisory lock, as the relays of other processes do. A direct publication (``publish``)
    hands over messages the caller has just committed, with their row ids: they go out without
    being read back, and their rows are deleted afterwards in a batch, with the committer's
    next statement (``take_published``) or by the relay within ``poll_interval_s``. Whoever
    publishes directly must ensure that nothing of the same streams is still unpublished from
    another process (``services/match/commit.py`` checks who published each match last), and
    queue a drain otherwise. Every ``poll_interval_s`` the relay also sweeps up rows older than
    ``orphan_after_s`` (those of a process that died between commit and publication): a live
    process publishes its own long before that, and should one be that late, its messages go
    out twice, the first copies still in order, since the sweep too takes rows in id order.
    """

    def __init__(
        self,
        pool: AsyncConnectionPool,
        bus: Bus,
        *,
        batch: int = 500,
        poll_interval_s: float = 1.0,
        linger_s: float = 0.003,
        orphan_after_s: float = 3.0,
        max_queued: int = 1000,
    ) -> None:
        super().__init__("outbox relay", poll_interval_s=poll_interval_s, linger_s=linger_s)
        self._pool = pool
        self._bus = bus
        self._batch = batch
        self._orphan_after_s = orphan_after_s
        self._max_queued = max_queued
        self._queue: deque[_Direct | None] = deque([_DRAIN])
        self._resets = 0
        """Counts the falls back to a drain: a publication or drain under way when the queue
        was reset must not take its entries off the new queue, whose head it never saw."""
        self._published: list[int] = []
        self._drained: set[int] = set()
        """The rows the last drain took: a direct publication of them has nothing left to do."""
        self._next_sweep = 0.0
        self.token = uuid.uuid4().hex
        """Names this process's relay as the publisher of what it publishes directly."""

    def wake(self) -> None:
        """Drain every row committed so far, after what is already queued."""
        if not self._queue or self._queue[-1] is not _DRAIN:
            self._queue.append(_DRAIN)
        super().wake()

    def publish(self, items: list[tuple[str, bytes]], ids: list[int]) -> None:
        """Publish messages just committed in outbox rows ``ids``, after what is queued."""
        if len(self._queue) >= self._max_queued:  # Redis is slow or down: hold no more here
            self._fall_back_to_drain()
        else:
            self._queue.append(_Direct(items, ids))
        super().wake()

    def take_published(self) -> list[int]:
        """The rows published directly and not deleted yet, for the caller to delete."""
        ids, self._published = self._published, []
        return ids

    def give_back(self, ids: list[int]) -> None:
        """Rows ``take_published`` handed out that the caller could not delete after all."""
        self._published.extend(ids)

    async def run_pass(self) -> None:
        while self._queue:
            if self._queue[0] is _DRAIN:
                resets = self._resets
                await self.drain()
                if resets == self._resets:
                    self._queue.popleft()
            else:
                await self._publish_direct()
        if time.monotonic() >= self._next_sweep:
            await self._forget_published()
            await self.drain(older_than_s=self._orphan_after_s)
            self._next_sweep = time.monotonic() + self._poll_interval_s

    async def drain(self, *, older_than_s: float | None = None) -> int:
        """Publish every row committed so far (only those older than ``older_than_s``, if
        given); return how many were published."""
        await self._forget_published()  # published already: not again
        self._drained.clear()
        total = 0
        while True:
            published = await self._publish_batch(older_than_s)
            total += published
            if published < self._batch:
                return total

    async def _publish_batch(self, older_than_s: float | None) -> int:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (RELAY_LOCK,))
            if older_than_s is None:
                cursor = await conn.execute(_TAKE, (self._batch,))
            else:
                cursor = await conn.execute(_TAKE_ORPHANS, (older_than_s, self._batch))
            rows = sorted(await cursor.fetchall())
            if rows:
                # The deletion commits only after Redis accepted every message.
                await self._bus.publish_many([(topic, payload) for _, topic, payload in rows])
        self._drained.update(row_id for row_id, _, _ in rows)
        return len(rows)

    async def _publish_direct(self) -> None:
        """Publish the direct publications at the head of the queue in one round trip."""
        batch: list[_Direct] = []
        for entry in self._queue:
            if entry is _DRAIN:
                break
            batch.append(entry)
        # A group's rows commit together, so a drain took all of them or none.
        fresh = [entry for entry in batch if not entry.ids or entry.ids[0] not in self._drained]
        resets = self._resets
        try:
            await self._bus.publish_many([item for entry in fresh for item in entry.items])
        except BaseException:
            self._fall_back_to_drain()  # their rows are all still in the outbox
            raise
        if resets == self._resets:  # else the queue is a drain and what came after it
            for _ in batch:
                self._queue.popleft()
        for entry in fresh:
            self._published.extend(entry.ids)

    def _fall_back_to_drain(self) -> None:
        self._queue.clear()
        self._queue.append(_DRAIN)
        self._resets += 1

    async def _forget_published(self) -> None:
        ids = self.take_published()
        if not ids:
            return
        try:
            async with self._pool.connection() as conn:
                await conn.execute(FORGET, (ids,))
        except BaseException:
            self.give_back(ids)
            raise
