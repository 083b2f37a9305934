"""Webhook delivery tasks on a real Redis and Postgres: the task message every release sends and
reads, deliveries whose tasks Redis lost re-driven at once, those whose task was lost otherwise
once overdue beyond the queue's age (and never one a task holds), and deliveries deleted once
past their retention."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator

import pytest
import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool

from services.webhooks import delivery
from services.webhooks import dispatcher as dispatcher_module
from services.webhooks.celery_app import configure
from services.webhooks.dispatcher import Dispatcher
from services.webhooks.queue_watch import QueueAge, QueueWatch
from shared.infra.settings import Settings
from shared.infra.streams import WEBHOOK_QUEUE_MARKER

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

DAY_S = 86_400


@pytest.fixture
def settings(redis_url: str, key_prefix: str) -> Iterator[Settings]:
    """This test's deployment: its own key prefix on the tests' Redis (the ``redis`` fixture
    deletes its keys after)."""
    yield Settings(redis_url=redis_url, stream_prefix=key_prefix.rstrip(":"))


async def queued_messages(redis: redis_async.Redis, key_prefix: str) -> dict[str, list[dict]]:
    """The Celery messages waiting in each of the prefix's queues (Redis lists)."""
    found: dict[str, list[dict]] = {}
    async for key in redis.scan_iter(match=f"{key_prefix}*", count=1000):
        if await redis.type(key) == b"list":
            found[key.decode()] = [json.loads(raw) for raw in await redis.lrange(key, 0, -1)]
    return found


async def test_the_task_message_is_the_one_every_release_sends_and_reads(
    settings: Settings,
    redis: redis_async.Redis,
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The previous release's worker reads ``webhooks.deliver`` with a list of ids on the
    ``{webhooks}`` queue: fresh deliveries go so (the backlog's queue only new workers read).
    A worker handles the messages of the releases before batches (one id) and of a later one
    (keyword fields added). The app sends where it was last configured, though it sent
    elsewhere before (another test's configuration, in the same process)."""
    configure(Settings(redis_url=redis_url, stream_prefix=f"{key_prefix}earlier"))
    delivery.enqueue([99])
    configure(settings)
    delivery.enqueue([3, 1, 2])
    delivery.enqueue([4], backlog=True)
    queued = await queued_messages(redis, f"{key_prefix}celery:")
    fresh = f"{key_prefix}celery:{settings.stream('webhooks')}"
    backlog = f"{key_prefix}celery:{settings.stream('webhooks:backlog')}"
    assert fresh.endswith(":{webhooks}") and set(queued) == {fresh, backlog}
    for queue, ids in ((fresh, [3, 1, 2]), (backlog, [4])):
        (message,) = queued[queue]
        assert message["headers"]["task"] == "webhooks.deliver"
        assert message["headers"][delivery.ENQUEUED_AT] > 0  # a header older workers ignore
        args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
        assert (args, kwargs) == ([ids], {})

    handled: list[list[int]] = []
    monkeypatch.setattr(delivery, "shared_context", lambda: None)
    monkeypatch.setattr(delivery, "deliver_batch", lambda _ctx, ids: handled.append(ids))
    delivery.deliver.run(7)  # a release before batches
    delivery.deliver.run([8, 9])  # this release and the previous one
    delivery.deliver.run([10], lane="backlog")  # a later release's added field
    assert handled == [[7], [8, 9], [10]]


async def add_deliveries(
    pool: AsyncConnectionPool, rows: list[tuple[str, int, str, str]], subscription: str
) -> list[int]:
    """Deliveries ``(stream, version, status, age)`` of a new subscription; their ids."""
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO webhook_subscriptions (id, url, event_types, secret)"
            " VALUES (%s, 'http://127.0.0.1/', '{}', 'whsec_AAAA')",
            (subscription,),
        )
        ids = []
        for stream, version, status, age in rows:
            cursor = await conn.execute(
                "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id,"
                " event_type, body, occurred_at_ms, status, created_at, due_at)"
                " VALUES (%s, %s, %s, 'Moved', '{}', 0, %s, now() - %s::interval,"
                " now() - %s::interval) RETURNING id",
                (subscription, f"{stream}:{version}:Moved", stream, status, age, age),
            )
            row = await cursor.fetchone()
            assert row is not None
            ids.append(row[0])
            await conn.execute(
                "INSERT INTO webhook_attempts (delivery_id, duration_ms) VALUES (%s, 1)",
                (row[0],),
            )
    return ids


async def test_deliveries_whose_tasks_redis_lost_are_re_driven_at_once_but_none_held(
    pool: AsyncConnectionPool, settings: Settings, redis: redis_async.Redis
) -> None:
    """Redis lost its data (the marker is gone), did not answer, or a task could not be
    enqueued: every delivery due and first in its stream is enqueued again, on the next look.
    One a task holds (being attempted) is not, nor one parked behind another."""
    run = uuid.uuid4().hex[:8]
    head, parked, held = await add_deliveries(
        pool,
        [(f"match-{run}", 1, "pending", "1 s"), (f"match-{run}", 2, "pending", "1 s")]
        + [(f"match-{run}-held", 1, "pending", "1 s")],
        f"lost-{run}",
    )
    redriven: list[int] = []
    dispatcher = Dispatcher(pool, lambda ids, backlog=False: redriven.extend(ids))
    watch = QueueWatch(redis, settings)

    async def looked() -> list[int]:
        redriven.clear()
        if await watch.lost():
            await dispatcher.redrive(0.0)
        return [i for i in redriven if i in (head, parked, held)]

    try:
        async with pool.connection() as task, task.transaction():
            await task.execute(
                "SELECT FROM webhook_deliveries WHERE id = %s FOR UPDATE", (held,)
            )  # a task holds it: it is being attempted
            assert await looked() == [head]  # no marker yet: this dispatcher cannot know
            assert await looked() == []
            await redis.delete(settings.stream(WEBHOOK_QUEUE_MARKER))  # FLUSHALL, for us
            assert await looked() == [head]
            assert await looked() == []
            delivery.ENQUEUE_FAILED.set()
            assert await looked() == [head]
        assert await looked() == []
    finally:
        async with pool.connection() as conn:
            await conn.execute("DELETE FROM webhook_subscriptions WHERE id = %s", (f"lost-{run}",))


async def test_a_delivery_whose_task_is_lost_goes_once_overdue_beyond_the_queues_age(
    pool: AsyncConnectionPool, settings: Settings, redis: redis_async.Redis, key_prefix: str
) -> None:
    """Committed, then its task lost (a crash before the enqueue, an enqueue that failed in the
    webhooks API, a worker killed mid-task): once due ``webhook_redrive_after_s`` (5 s here)
    longer than the oldest task queued has waited, the next look enqueues it again, once. While
    a task older than it waits (a long queue), or one without the time it was enqueued (the
    previous release's), its own may be queued still: none is added."""
    run = uuid.uuid4().hex[:8]
    head, parked, held = await add_deliveries(
        pool,
        [(f"match-{run}", 1, "pending", "10 s"), (f"match-{run}", 2, "pending", "10 s")]
        + [(f"match-{run}-held", 1, "pending", "10 s")],
        f"overdue-{run}",
    )
    redriven: list[int] = []
    dispatcher = Dispatcher(pool, lambda ids, backlog=False: redriven.extend(ids))
    queue_age = QueueAge(redis, settings)
    backlog = f"{key_prefix}celery:{settings.stream('webhooks:backlog')}"

    async def looked() -> list[int] | None:
        redriven.clear()
        waited = await queue_age.seconds()
        if waited is None:
            return None
        await dispatcher.redrive(5.0 + waited)
        return [i for i in redriven if i in (head, parked, held)]

    async def oldest_queued(enqueued_at: float | None) -> None:
        """Another delivery's task, enqueued then (None: when, its message does not say), is
        the oldest in the queue."""
        headers = {} if enqueued_at is None else {delivery.ENQUEUED_AT: enqueued_at}
        await redis.delete(backlog)
        await redis.lpush(backlog, json.dumps({"headers": {"task": "webhooks.deliver", **headers}}))

    try:
        async with pool.connection() as task, task.transaction():
            await task.execute(
                "SELECT FROM webhook_deliveries WHERE id = %s FOR UPDATE", (held,)
            )  # a task holds it: it is being attempted
            await oldest_queued(time.time() - 20)  # waiting for 20 s: the head's may be behind
            assert await looked() == []
            await oldest_queued(None)  # enqueued by the previous release: when, unknown
            assert await looked() is None
            await oldest_queued(time.time() - 2)  # 2 s: the head's, due 10 s ago, has left
            assert await looked() == [head]
            assert await looked() == []  # enqueued again: due from now
        await redis.delete(backlog)
        async with pool.connection() as conn:
            await conn.execute(
                "UPDATE webhook_deliveries SET due_at = now() - interval '10 s' WHERE id = ANY(%s)",
                ([head, held],),
            )
        assert await looked() == [head, held]  # no task holds it now, none is queued
    finally:
        async with pool.connection() as conn:
            await conn.execute(
                "DELETE FROM webhook_subscriptions WHERE id = %s", (f"overdue-{run}",)
            )


async def test_deliveries_past_their_retention_are_deleted_with_their_attempts(
    pool: AsyncConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delivered and failed ones after ``webhook_keep_delivered_s``, missed ones after
    ``webhook_keep_missed_s``; pending ones and younger ones are kept, and 0 keeps for ever.
    A batch at a time (two here): a full one says more may be left. Ages in hundreds of days:
    prune deletes every app's rows, and other tests' (a day old at most) must not fill its
    batches."""
    monkeypatch.setattr(dispatcher_module, "PRUNE_BATCH", 2)
    run = uuid.uuid4().hex[:8]
    stream = f"match-{run}"
    ids = await add_deliveries(
        pool,
        [
            (stream, 1, "delivered", "300 days"),
            (stream, 2, "failed", "300 days"),
            (stream, 3, "missed", "300 days"),
            (stream, 4, "pending", "300 days"),
            (stream, 5, "delivered", "100 days"),
            (stream, 6, "missed", "100 days"),
            (stream, 7, "delivered", "400 days"),
        ],
        f"kept-{run}",
    )
    dispatcher = Dispatcher(pool, lambda ids, backlog=False: None)

    async def kept() -> list[int]:
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT d.id FROM webhook_deliveries d WHERE d.id = ANY(%s)"
                " AND EXISTS (SELECT FROM webhook_attempts a WHERE a.delivery_id = d.id)"
                " ORDER BY d.id",
                (ids,),
            )
            return [row[0] for row in await cursor.fetchall()]

    never = Settings(webhook_keep_delivered_s=0, webhook_keep_missed_s=0)
    two_hundred_days = Settings(
        webhook_keep_delivered_s=200 * DAY_S, webhook_keep_missed_s=200 * DAY_S
    )
    fifty_days_missed = Settings(webhook_keep_delivered_s=0, webhook_keep_missed_s=50 * DAY_S)
    try:
        assert await dispatcher.prune(never) is False
        assert await kept() == ids
        assert await dispatcher.prune(two_hundred_days) is True  # the two old delivered ones
        assert await dispatcher.prune(two_hundred_days) is False
        assert await kept() == [ids[3], ids[4], ids[5]]
        await dispatcher.prune(fifty_days_missed)
        assert await kept() == [ids[3], ids[4]]
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT count(*) FROM webhook_attempts WHERE delivery_id = ANY(%s)", (ids,)
            )
            assert await cursor.fetchone() == (2,)
    finally:
        async with pool.connection() as conn:
            await conn.execute("DELETE FROM webhook_subscriptions WHERE id = %s", (f"kept-{run}",))
