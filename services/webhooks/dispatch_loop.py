"""``dispatch``: the dispatcher at work in a ``playtable webhooks`` process, two loops beside
its metrics. Leading: wait for the leader lock (a Postgres session advisory lock), then read
both published streams with the consumer group, each read handed to the ``Dispatcher`` as one
batch, until the lock's connection ends or the process stops; a term begins with whatever the
group still had pending. Sweeping: every second, re-drive the deliveries whose task is lost
(``queue_watch`` says when), and now and then probe failing receivers and prune old deliveries.

Apart from ``dispatcher``, which says what a batch of events and each sweep write, because this
is when and by whom: the leader's session, the consumers' batches and lingering, the timers,
and outages of Postgres or Redis, logged once each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg
from psycopg_pool import AsyncConnectionPool

from services.webhooks.dispatcher import LEADER_LOCK, Dispatcher, NotLeading
from services.webhooks.queue_watch import QueueAge, QueueWatch
from shared.infra.bus import BACKING_SERVICE_OUTAGES, Bus, Consumer, OutageLog, redis_client
from shared.infra.metrics import Metrics, pool_probe, serve_metrics, streams_probe
from shared.infra.readiness import ReadyChecks, ready_checks
from shared.infra.settings import Settings
from shared.infra.streams import LOBBY_EVENTS_STREAM, MATCH_EVENTS_STREAM

log = logging.getLogger(__name__)


GROUP = "webhooks"
LEADER_CHECK_S = 1.0
"""How often a dispatcher waiting to lead tries the lock, and the leader checks it holds it."""
BATCH_LINGER_S = 0.02
"""How long the dispatcher lets events gather after a read that did not fill a batch: at a
trickle of moves it handles a few per statement instead of one (webhooks wait that long more)."""
IDLE_LINGER_S = 0.5
"""How long the dispatcher lets events gather after a read none of whose events a subscription
wanted: a steady flow of such events costs two reads a second per stream, each skipped with one
look at Postgres and one acknowledgement (an event some subscription wants may wait that long
more). Fed 232 such events a second, a ``playtable webhooks`` process spent 10.5 ms of CPU a
second at 0.25 s, 6 at 0.5 and 5 at 1 (1 idle)."""
QUEUE_WATCH_S = 1.0
"""How often a dispatcher looks whether Redis lost delivery tasks (one SET NX) and for overdue
deliveries whose task is lost (two LINDEX and one statement)."""
READ_BATCH = 1000
"""Entries per read: half a second's worth of a busy deployment's events."""
SOURCE_STREAMS = (LOBBY_EVENTS_STREAM, MATCH_EVENTS_STREAM)
PRUNE_EVERY_S = 60.0
"""How often each dispatcher deletes a batch of each status that has outlived its retention;
every second (``QUEUE_WATCH_S``) while batches come full, so a long-lived deployment's first
prune catches up (3,000 rows a second at most) without holding up the look at Redis."""


async def _lead(
    settings: Settings,
    bus: Bus,
    dispatcher: Dispatcher,
    consumers: list[Consumer],
    stop: asyncio.Event,
) -> None:
    """Wait for the leader lock, then read the streams until the lock is lost or ``stop``;
    again and again. A term begins with everything the group still had pending. An outage
    that ends terms is logged once, and its end once."""
    outage = OutageLog(log, "webhook dispatch", "postgres or redis")
    while not stop.is_set():
        try:
            conn = await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True)
        except psycopg.OperationalError as error:
            outage.failed(error)
            await _pause(stop, LEADER_CHECK_S)
            continue
        try:
            async with conn:
                if not await _take_lead(conn, stop):
                    continue
                ended = asyncio.Event()
                watch = asyncio.create_task(_watch_lead(conn, stop, ended))
                dispatcher.leader_pid = conn.info.backend_pid
                log.info("this dispatcher leads: reading the published streams")
                try:
                    for consumer in consumers:
                        await bus.ensure_group(consumer.stream, GROUP)
                        await consumer.claim_all(ended)
                    outage.succeeded()
                    await asyncio.gather(*(consumer.run(ended) for consumer in consumers))
                finally:
                    ended.set()
                    dispatcher.leader_pid = None
                    watch.cancel()
                    await asyncio.gather(watch, return_exceptions=True)
        except NotLeading:
            log.warning("leading the webhook dispatch ended: the lock was lost; trying again")
            await _pause(stop, LEADER_CHECK_S)
        except BACKING_SERVICE_OUTAGES as error:
            outage.failed(error)
            await _pause(stop, LEADER_CHECK_S)


async def _take_lead(conn: psycopg.AsyncConnection, stop: asyncio.Event) -> bool:
    """Try the leader lock until it is ours (True) or ``stop`` (False)."""
    while not stop.is_set():
        cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK,))
        taken = await cursor.fetchone()
        if taken and taken[0]:
            return True
        await _pause(stop, LEADER_CHECK_S)
    return False


async def _watch_lead(
    conn: psycopg.AsyncConnection, stop: asyncio.Event, ended: asyncio.Event
) -> None:
    """End the term when ``stop`` is set or the lock's connection fails."""
    try:
        while not stop.is_set():
            await conn.execute("SELECT 1")
            await _pause(stop, LEADER_CHECK_S)
    except (*BACKING_SERVICE_OUTAGES,):
        log.warning("lost the webhook dispatch leader lock's connection")
    finally:
        ended.set()


async def _sweep(
    settings: Settings,
    dispatcher: Dispatcher,
    watch: QueueWatch,
    queue_age: QueueAge,
    stop: asyncio.Event,
) -> None:
    """Every second, re-drive every due delivery if Redis may have lost tasks, else those
    overdue beyond the queue's age; now and then, probe failing receivers and prune old
    deliveries."""
    loop = asyncio.get_running_loop()
    probed, prune_at = float("-inf"), loop.time()
    while not stop.is_set():
        try:
            if await watch.lost():
                await dispatcher.redrive(0.0)
            elif (waited := await queue_age.seconds()) is not None:
                await dispatcher.redrive(settings.webhook_redrive_after_s + waited)
            if loop.time() - probed >= settings.webhook_probe_every_s:
                probed = loop.time()
                await dispatcher.probe(settings.webhook_probe_every_s)
            if loop.time() >= prune_at:
                more = await dispatcher.prune(settings)
                prune_at = loop.time() + (QUEUE_WATCH_S if more else PRUNE_EVERY_S)
        except Exception:
            log.exception("webhook redrive look failed; trying again later")
        await _pause(stop, QUEUE_WATCH_S)


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def dispatch(
    settings: Settings,
    pool: AsyncConnectionPool,
    enqueue: Callable[..., None],
    stop: asyncio.Event,
) -> None:
    """Consume both published streams, sweep for lost deliveries and probe failing receivers
    until ``stop`` is set."""
    dispatcher = Dispatcher(pool, enqueue)

    async def handle_read(entries: list[tuple[str, bytes]]) -> None:
        if not await dispatcher.handle_batch(entries):
            await _pause(stop, IDLE_LINGER_S)

    redis = redis_client(settings)
    bus = Bus(redis)
    exporter = None
    if settings.metrics_port:  # the Celery worker's deliveries are counted in this process too
        groups = [(name, GROUP) for name in SOURCE_STREAMS]
        metrics = Metrics(
            {
                "pool": pool_probe(lambda: pool),
                "streams": streams_probe(lambda: redis, settings.stream_prefix, groups),
            }
        )
        ready = ReadyChecks(ready_checks(lambda: pool, lambda: redis))
        exporter = await serve_metrics(metrics, settings.host, settings.metrics_port, ready.failed)
    try:
        consumers = [
            Consumer(
                redis,
                settings.stream(name),
                GROUP,
                settings.instance_id,
                dispatcher.handle,
                batch=READ_BATCH,
                batch_handler=handle_read,
                linger_s=BATCH_LINGER_S,
                dead_after_ms=settings.dead_consumer_after_ms,
                outages=(*BACKING_SERVICE_OUTAGES, NotLeading),
            )
            for name in SOURCE_STREAMS
        ]
        jobs = [
            asyncio.create_task(_lead(settings, bus, dispatcher, consumers, stop)),
            asyncio.create_task(
                _sweep(
                    settings,
                    dispatcher,
                    QueueWatch(redis, settings),
                    QueueAge(redis, settings),
                    stop,
                )
            ),
        ]
        await asyncio.gather(*jobs, return_exceptions=True)
    finally:
        if exporter is not None:
            await exporter.cleanup()
        await redis.aclose()
