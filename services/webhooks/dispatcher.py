"""The dispatcher: turns each published lobby and match event into one delivery per matching
subscription, and hands the deliveries to the Celery workers.

Handling an event records it in ``webhook_handled`` and creates its delivery rows (unique per
subscription and event) in one transaction, so an event redelivered by the consumer group after
a restart creates nothing twice, and one left unacknowledged is handled by the next dispatcher.
The consumer hands over each read of the stream as a batch, handled in one statement (one round
trip, one commit), as if its events had been handled one after the other. Only the events of
apps that have a subscription go to that statement (and every ``TableStarted``, whose match a
table's filter must know): the others are acknowledged with their read and cost no write
(``SubscribedApps``); a read none of whose events any subscription wants lets events gather
longer before the next.
Deliveries whose tasks Redis lost (a ``FLUSHALL``, a restart without persistence, a task that
could not be enqueued while it was down) are enqueued again as soon as Redis answers
(``queue_watch.QueueWatch``); any other whose task is lost (a worker killed mid-task, an enqueue
that failed in the webhooks API, a crash between commit and enqueue) once it is overdue by
``webhook_redrive_after_s`` more than the oldest task queued has waited (``queue_watch.QueueAge``):
its task, if it had one, has left the queue, and no task holds its row. Delivered, failed and
missed deliveries are deleted once older than their retention (``prune``).

Deliveries are sent in the order they were created, so they must be created in each stream's
order: of several dispatchers (one per ``playtable webhooks`` process) only the leader reads the
streams, the holder of a Postgres session lock. The others sweep and wait; when the leader's
connection ends (its process killed, say), one of them takes the lock, first handles whatever
the group still had pending, then reads on. Every batch checks in its transaction that its
dispatcher still leads, so a leader that lost its lock without noticing writes nothing.

This module says what a batch of events and each sweep write (``Dispatcher``); when and by whom,
the leader's term and the sweep's timers, is ``dispatch_loop``, and what a receiver gets of an
event is ``bodies``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec
from psycopg_pool import AsyncConnectionPool

from services.webhooks.bodies import event_key, webhook_body
from services.webhooks.delivery import FRESH, hand_over, in_stream_order
from shared.domain.messages import EventEnvelope
from shared.infra import tracing
from shared.infra.settings import Settings

log = logging.getLogger(__name__)

DISPATCH_LOCK = 0x776562686F6F6B  # "webhook": advisory lock key serialising dispatched batches
LEADER_LOCK = DISPATCH_LOCK + 1
"""Session advisory lock of the one dispatcher that reads the streams."""

_COLUMNS = "keys streams types bodies occurred apps matches tables started traces".split()
"""The parameters of ``_HANDLE_EVENTS``: one array each, an item per event of the batch."""

_envelope_decoder = msgspec.json.Decoder(EventEnvelope)


class _RoutingMetadata(msgspec.Struct):
    app_id: str | None = None


class _Routing(msgspec.Struct):
    """What decides whether an event may concern a subscription (the rest is not decoded)."""

    type: str
    metadata: _RoutingMetadata


_routing_decoder = msgspec.json.Decoder(_Routing)


_HANDLE_EVENTS = """
WITH batch AS (
    SELECT *
    FROM unnest(%(keys)s::text[], %(streams)s::text[], %(types)s::text[], %(bodies)s::bytea[],
                %(occurred)s::bigint[], %(apps)s::text[], %(matches)s::text[], %(tables)s::text[],
                %(started)s::text[], %(traces)s::text[])
        WITH ORDINALITY AS e(key, stream, type, body, occurred, app, match_id, table_id,
                             started_match, trace, ord)
), handled AS (
    INSERT INTO webhook_handled (event_key)
    SELECT key FROM batch
    ON CONFLICT DO NOTHING
    RETURNING event_key
), fresh AS (
    SELECT e.* FROM batch e JOIN handled h ON h.event_key = e.key
), started AS (
    SELECT DISTINCT ON (started_match) started_match, table_id, ord
    FROM fresh
    WHERE started_match IS NOT NULL AND table_id IS NOT NULL
    ORDER BY started_match, ord
), remembered AS (
    INSERT INTO webhook_match_tables (match_id, table_id)
    SELECT started_match, table_id FROM started
    ON CONFLICT DO NOTHING
)
INSERT INTO webhook_deliveries
    (subscription_id, event_key, stream_id, event_type, body, occurred_at_ms, status, traceparent)
SELECT s.id, e.key, e.stream, e.type, e.body, e.occurred,
       CASE WHEN s.enabled THEN 'pending' ELSE 'missed' END, e.trace
FROM fresh e
JOIN webhook_subscriptions s ON s.app_id = e.app
WHERE (cardinality(s.event_types) = 0 OR e.type = ANY (s.event_types))
  AND (s.match_id IS NULL OR s.match_id = e.match_id)
  AND (s.table_id IS NULL OR s.table_id = e.table_id
       OR EXISTS (
           SELECT FROM webhook_match_tables m
           WHERE m.match_id = e.match_id AND m.table_id = s.table_id)
       OR EXISTS (
           SELECT FROM started b
           WHERE b.started_match = e.match_id AND b.table_id = s.table_id AND b.ord < e.ord
             AND NOT EXISTS (
                 SELECT FROM webhook_match_tables m WHERE m.match_id = b.started_match)))
ORDER BY e.ord, s.id
FOR KEY SHARE OF s
ON CONFLICT (subscription_id, event_key) DO NOTHING
RETURNING id, subscription_id, stream_id, status = 'pending'
"""
"""One statement for a batch of events (in stream order), so one round trip and one commit:
it records each event as handled and, only for those not handled before, remembers the match a
table started (a table's filter also admits that match's events) and creates one delivery per
matching subscription of the event's app (its metadata names it: no other app's subscription
ever gets it; a disabled subscription's is ``missed``, kept to be redelivered when it is
enabled again); an event of an app without subscriptions costs an index probe and no more.

The statement's parts all see the database as it was before it, not each other's rows, so the
table a match started at is looked up both in ``webhook_match_tables`` and among the batch's
own ``TableStarted`` events that come before the event (the first of them, unless the match was
already remembered, as ``ON CONFLICT DO NOTHING`` keeps): the same deliveries as handling the
events one by one. Deliveries are created in event order (their ids keep each stream's order
per subscription). Locking the subscriptions skips one deleted meanwhile, where its delivery
would break the foreign key."""

_REDRIVE = f"""
WITH RECURSIVE firsts AS (
    (SELECT subscription_id, stream_id, id, due_at FROM webhook_deliveries
     WHERE status = 'pending' AND EXISTS (
         SELECT FROM webhook_deliveries o
         WHERE o.status = 'pending' AND o.due_at < now() - make_interval(secs => %(overdue_s)s))
     ORDER BY subscription_id, stream_id, id LIMIT 1)
    UNION ALL
    SELECT n.* FROM firsts f CROSS JOIN LATERAL (
        SELECT x.subscription_id, x.stream_id, x.id, x.due_at FROM webhook_deliveries x
        WHERE x.status = 'pending'
          AND (x.subscription_id, x.stream_id) > (f.subscription_id, f.stream_id)
        ORDER BY x.subscription_id, x.stream_id, x.id LIMIT 1) n
)
UPDATE webhook_deliveries SET due_at = now()
WHERE id IN (
    SELECT d.id FROM firsts f JOIN webhook_deliveries d ON d.id = f.id
    WHERE f.due_at < now() - make_interval(secs => %(overdue_s)s)
      AND d.status = 'pending' AND d.due_at < now() - make_interval(secs => %(overdue_s)s)
    ORDER BY d.id
    FOR UPDATE OF d SKIP LOCKED)
RETURNING id, subscription_id, stream_id, {FRESH}
"""
"""Overdue deliveries that are first in their stream: those waiting behind an earlier pending
one have no task on purpose (the earlier one wakes them when it ends). One being attempted
right now is skipped (it has its task); those enqueued are due from now, so enqueued again
only once overdue again.

Run every second, so it reads the pending rows alone, through their partial indexes: whether
any is overdue (``webhook_deliveries_due``), and if so each stream's first, one index descent
per stream (``webhook_deliveries_order``, skipped from stream to stream), not every overdue
row: a stream parked behind a failing receiver's retry holds thousands whose due_at is their
creation. With 2,000,000 delivered rows, 0.07 ms when none is overdue, 1.7 ms with 20,000
parked behind 100 retries; looking at each overdue row for an earlier one took 157-1,340 ms
there."""


_PROBE = f"""
WITH first_due AS (
    SELECT DISTINCT ON (w.subscription_id) w.id, w.due_at
    FROM webhook_subscriptions s JOIN webhook_deliveries w ON w.subscription_id = s.id
    WHERE s.enabled AND s.failing_since IS NOT NULL AND w.status = 'pending' AND w.attempts > 0
    ORDER BY w.subscription_id, w.due_at
)
UPDATE webhook_deliveries SET due_at = now(), attempts = attempts - 1
WHERE id IN (
    SELECT d.id FROM webhook_deliveries d JOIN first_due f ON f.id = d.id
    WHERE f.due_at > now() + make_interval(secs => %s) AND d.status = 'pending'
    ORDER BY d.id
    FOR UPDATE OF d SKIP LOCKED)
RETURNING id, subscription_id, stream_id, {FRESH}
"""
"""For each failing subscription none of whose retries is due within the probe interval, the
retry due first, now, without using up one of its attempts: a receiver that is back gets its
backlog within that interval (its success wakes the other waiting retries), not at the next
step of a backoff that may have grown to ten minutes."""


_PRUNE = """
DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE status = %(status)s AND created_at < now() - make_interval(secs => %(keep_s)s)
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED)
"""
"""A batch of one status's deliveries (their attempts with them) created longer ago than they
are kept, through ``webhook_deliveries_ended`` (status, created_at); rows another dispatcher is
deleting are skipped."""

PRUNE_BATCH = 1000


_SUBSCRIBED_APPS = """
SELECT version, CASE WHEN version <> %s THEN ARRAY(
    SELECT DISTINCT app_id FROM webhook_subscriptions WHERE app_id IS NOT NULL) END
FROM webhook_subscription_changes
"""
"""The count of subscriptions created (a trigger moves it), and the apps that have one if it
moved since the count given: both as of one snapshot."""


class SubscribedApps:
    """The apps that have a subscription (enabled or not: a disabled one keeps its ``missed``
    deliveries), as Postgres says after the events in hand were read.

    An event is published after its commit, so a subscription created before it committed is
    seen by a look taken after the event was read: its creation moved the count, and a moved
    count reloads the apps. The apps kept are only trusted to say who is subscribed (a
    subscription deleted since only costs a statement); who is not is asked again."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool
        self._version = -1
        self.apps: frozenset[str] = frozenset()

    async def look(self) -> frozenset[str] | None:
        """The apps now (None: no count to trust, every event may be wanted)."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute(_SUBSCRIBED_APPS, (self._version,))
            row = await cursor.fetchone()
        if row is None:
            return None
        version, apps = row
        if apps is not None:
            self._version, self.apps = version, frozenset(apps)
        return self.apps


class NotLeading(Exception):
    """The batch's dispatcher does not hold the leader lock (any more): it must not write."""


_STILL_LEADING = """
SELECT pg_advisory_xact_lock(%(batch_lock)s), EXISTS (
    SELECT FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND pid = %(pid)s
      AND classid = (%(leader_lock)s::bigint >> 32)::oid
      AND objid = (%(leader_lock)s::bigint & 4294967295)::oid AND objsubid = 1)
"""
"""Take the batch lock and say whether the leader lock is still held by the leader's session
(a bigint advisory key shows in ``pg_locks`` as its high and low halves)."""


class Dispatcher:
    def __init__(self, pool: AsyncConnectionPool, enqueue: Callable[..., None]) -> None:
        self._pool = pool
        self._enqueue = enqueue
        self._subscribed = SubscribedApps(pool)
        self.leader_pid: int | None = None
        """The backend pid holding the leader lock for this dispatcher; None: not checked (a
        dispatcher driven directly, as in tests)."""

    async def handle(self, entry_id: str, payload: bytes) -> None:
        """Handle one entry (the consumer falls back to this when a batch failed)."""
        await self.handle_batch([(entry_id, payload)])

    async def handle_batch(self, entries: list[tuple[str, bytes]]) -> bool:
        """Handle the ``(entry_id, payload)`` pairs of one read, in stream order: those a
        subscription may want in one statement (``_dispatch``), the others not at all. Whether
        any was wanted."""
        wanted = await self._wanted(entries)
        if wanted:
            await self._dispatch(wanted)
        return bool(wanted)

    async def _wanted(self, entries: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
        """The entries a subscription may want: its app's events and every ``TableStarted``.
        Postgres is asked only when the apps known so far would leave some out."""
        routes = [_routing_decoder.decode(payload) for _, payload in entries]
        apps: frozenset[str] | None = self._subscribed.apps
        if not all(_may_concern(route, apps) for route in routes):
            apps = await self._subscribed.look()
        return [
            entry for entry, route in zip(entries, routes, strict=True) if _may_concern(route, apps)
        ]

    async def _dispatch(self, entries: list[tuple[str, bytes]]) -> None:
        """Handle the pairs in one statement (in a span linked to each event's trace); then
        enqueue the deliveries it created."""
        columns: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
        seen: set[str] = set()
        for _entry_id, payload in entries:
            envelope = _envelope_decoder.decode(payload)
            key = event_key(envelope)
            if key in seen:  # published twice: the later copy was handled by the first one
                continue
            seen.add(key)
            stream = envelope.stream_id
            columns["keys"].append(key)
            columns["streams"].append(stream)
            columns["types"].append(envelope.type)
            columns["bodies"].append(webhook_body(envelope))
            columns["occurred"].append(envelope.metadata.occurred_at_ms)
            columns["apps"].append(envelope.metadata.app_id)
            columns["matches"].append(stream[6:] if stream.startswith("match-") else None)
            columns["tables"].append(stream[6:] if stream.startswith("table-") else None)
            columns["started"].append(_started_match(envelope))
            columns["traces"].append(envelope.metadata.traceparent)
        if not seen:
            return
        with tracing.span("webhooks dispatch", tracing.CONSUMER, links=columns["traces"]) as span:
            span.set_attribute("playtable.events", len(seen))
            created = await self._create_deliveries(columns)
            span.set_attribute("playtable.deliveries", len(created))
        if created:
            self._enqueue(in_stream_order(created))

    async def _create_deliveries(self, columns: dict[str, list[Any]]) -> list[Any]:
        """The batch's deliveries to send: ``(id, subscription, stream)`` rows."""
        async with self._pool.connection() as conn, conn.transaction():
            # One batch at a time: the statement's snapshot, taken once the lock is held, sees
            # the matches an earlier batch remembered (a match's events may be read by one
            # dispatcher while another still handles its table's TableStarted).
            if self.leader_pid is None:
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (DISPATCH_LOCK,))
            else:
                checked = await conn.execute(
                    _STILL_LEADING,
                    {
                        "batch_lock": DISPATCH_LOCK,
                        "pid": self.leader_pid,
                        "leader_lock": LEADER_LOCK,
                    },
                )
                leading = await checked.fetchone()
                if not leading or not leading[1]:
                    raise NotLeading("the leader lock is gone: another dispatcher may lead")
            cursor = await conn.execute(_HANDLE_EVENTS, columns)
            return [row[:3] for row in await cursor.fetchall() if row[3]]

    async def probe(self, interval_s: float) -> int:
        """Try a failing subscription's receiver again if nothing would for ``interval_s``."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute(_PROBE, (interval_s,))
            probes = await cursor.fetchall()
        hand_over(probes, self._enqueue)
        return len(probes)

    async def redrive(self, overdue_s: float) -> int:
        """Enqueue again the pending deliveries first in their stream, due ``overdue_s`` ago
        and held by no task: their task is lost (or queued still: a second one sends nothing
        twice, see ``QueueWatch``)."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute(_REDRIVE, {"overdue_s": overdue_s})
            overdue = await cursor.fetchall()
        if overdue:
            log.warning("re-enqueueing %d webhook deliveries whose task is lost", len(overdue))
            hand_over(overdue, self._enqueue)
        return len(overdue)

    async def prune(self, settings: Settings) -> bool:
        """Delete a batch of each status's deliveries kept long enough: delivered and failed
        ones after ``webhook_keep_delivered_s``, missed ones after ``webhook_keep_missed_s``
        (0: kept). Whether more may be left (a batch was full)."""
        deleted, full = 0, False
        for status, keep_s in (
            ("delivered", settings.webhook_keep_delivered_s),
            ("failed", settings.webhook_keep_delivered_s),
            ("missed", settings.webhook_keep_missed_s),
        ):
            if keep_s > 0:
                async with self._pool.connection() as conn:
                    cursor = await conn.execute(
                        _PRUNE, {"status": status, "keep_s": keep_s, "batch": PRUNE_BATCH}
                    )
                deleted += cursor.rowcount
                full = full or cursor.rowcount >= PRUNE_BATCH
        if deleted:
            log.info("deleted %d webhook deliveries past their retention", deleted)
        return full


def _may_concern(route: _Routing, apps: frozenset[str] | None) -> bool:
    """Whether an event may concern a subscription of ``apps`` (None: of anyone's)."""
    return (
        apps is None
        or route.metadata.app_id in apps
        or route.type == "TableStarted"  # its match is remembered for a table's filter
    )


def _started_match(envelope: EventEnvelope) -> str | None:
    """The match a ``TableStarted`` event started (``None`` for any other event)."""
    if envelope.type != "TableStarted":
        return None
    return msgspec.json.decode(envelope.data).get("match_id")
