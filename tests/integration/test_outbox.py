"""The outbox relay against real Postgres and Redis: nothing lost, order kept, at least once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from shared.infra.bus import Bus
from shared.infra.outbox import OutboxRelay
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class SimulatedCrash(Exception):
    pass


class PublishThenCrash(Bus):
    """A bus whose process dies right after Redis accepted the messages."""

    async def publish_many(self, items: Sequence[tuple[str, bytes]]) -> list[str]:
        await super().publish_many(items)
        raise SimulatedCrash("relay process died before committing")


def counting_passes(relay: OutboxRelay) -> list[str]:
    """The relay's passes from now on, as they end: ``"done"``, or the error's name."""
    passes: list[str] = []
    run_pass = relay.run_pass

    async def counted() -> None:
        try:
            await run_pass()
        except Exception as error:
            passes.append(type(error).__name__)
            raise
        passes.append("done")

    relay.run_pass = counted  # type: ignore[method-assign]
    return passes


@pytest_asyncio.fixture
async def outbox_pool(pool: AsyncConnectionPool) -> AsyncIterator[AsyncConnectionPool]:
    """The pool, with an outbox emptied of rows other tests may have left."""
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM outbox")
    yield pool


async def enqueue(conn: AsyncConnection, items: list[tuple[str, bytes]]) -> None:
    """Messages in the outbox, in order, as the event store writes them beside events."""
    for topic, payload in items:
        await conn.execute("INSERT INTO outbox (topic, payload) VALUES (%s, %s)", (topic, payload))


async def commit_messages(pool: AsyncConnectionPool, items: list[tuple[str, bytes]]) -> None:
    async with pool.connection() as conn, conn.transaction():
        await enqueue(conn, items)


async def outbox_size(pool: AsyncConnectionPool) -> int:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT count(*) FROM outbox")
        row = await cursor.fetchone()
    assert row is not None
    return row[0]


async def payloads(redis: redis_async.Redis, stream: str) -> list[bytes]:
    raw: Any = await redis.xrange(stream)
    return [fields[b"m"] for _, fields in raw]


async def test_committed_messages_are_published_in_order_then_deleted(
    outbox_pool: AsyncConnectionPool, bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    events, commands = f"{key_prefix}events", f"{key_prefix}commands"
    await commit_messages(outbox_pool, [(events, b"e1"), (commands, b"c1"), (events, b"e2")])
    await commit_messages(outbox_pool, [(events, b"e3")])
    relay = OutboxRelay(outbox_pool, bus, batch=2)

    assert await relay.drain() == 4

    assert await payloads(redis, events) == [b"e1", b"e2", b"e3"]
    assert await payloads(redis, commands) == [b"c1"]
    assert await outbox_size(outbox_pool) == 0
    assert await relay.drain() == 0


async def test_messages_of_a_rolled_back_transaction_are_never_published(
    outbox_pool: AsyncConnectionPool, bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"
    async with outbox_pool.connection() as conn:
        with pytest.raises(RuntimeError):
            async with conn.transaction():
                await enqueue(conn, [(stream, b"never")])
                raise RuntimeError("the business change failed")
    await commit_messages(outbox_pool, [(stream, b"kept")])

    assert await OutboxRelay(outbox_pool, bus).drain() == 1

    assert await payloads(redis, stream) == [b"kept"]


async def test_relay_dying_after_publishing_republishes_instead_of_losing(
    outbox_pool: AsyncConnectionPool, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"
    await commit_messages(outbox_pool, [(stream, b"m1"), (stream, b"m2")])

    with pytest.raises(SimulatedCrash):
        await OutboxRelay(outbox_pool, PublishThenCrash(redis)).drain()
    assert await outbox_size(outbox_pool) == 2
    assert await OutboxRelay(outbox_pool, Bus(redis)).drain() == 2

    assert await payloads(redis, stream) == [b"m1", b"m2", b"m1", b"m2"]
    assert await outbox_size(outbox_pool) == 0


async def test_two_relays_publish_every_message_once_in_order(
    outbox_pool: AsyncConnectionPool, bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"
    expected = [f"m{n:04}".encode() for n in range(1_000)]
    for start in range(0, len(expected), 100):
        await commit_messages(outbox_pool, [(stream, m) for m in expected[start : start + 100]])
    relays = [OutboxRelay(outbox_pool, bus, batch=50) for _ in range(2)]

    counts = await asyncio.gather(*(relay.drain() for relay in relays))

    assert sum(counts) == len(expected)
    assert await payloads(redis, stream) == expected
    assert await outbox_size(outbox_pool) == 0


async def test_running_relay_publishes_as_soon_as_woken(
    outbox_pool: AsyncConnectionPool, bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"
    relay = OutboxRelay(outbox_pool, bus, poll_interval_s=60)
    passes = counting_passes(relay)
    stop = asyncio.Event()
    running = asyncio.create_task(relay.run(stop))
    await await_until(lambda: passes, what="the first (empty) pass")  # then, asleep for 60 s

    await commit_messages(outbox_pool, [(stream, b"now")])
    relay.wake()
    await await_until(lambda: redis.exists(stream), what="the woken pass")  # well before 60 s
    stop.set()
    await asyncio.wait_for(running, timeout=30)

    assert await payloads(redis, stream) == [b"now"]


async def test_relay_keeps_messages_while_redis_is_down(
    outbox_pool: AsyncConnectionPool, key_prefix: str
) -> None:
    unreachable = redis_async.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    relay = OutboxRelay(outbox_pool, Bus(unreachable), poll_interval_s=0.05)
    passes = counting_passes(relay)
    await commit_messages(outbox_pool, [(f"{key_prefix}events", b"kept")])
    stop = asyncio.Event()
    running = asyncio.create_task(relay.run(stop))

    await await_until(lambda: len(passes) >= 2, what="two failed passes")  # and a retry
    assert "done" not in passes and not running.done()
    stop.set()
    await asyncio.wait_for(running, timeout=30)
    await unreachable.aclose()

    assert await outbox_size(outbox_pool) == 1


async def test_running_relay_publishes_rows_no_one_woke_it_for(
    outbox_pool: AsyncConnectionPool, bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    """Rows of a process that died between its commit and its relay's pass: another process's
    relay publishes them in its periodic pass, in id order, without being woken."""
    stream = f"{key_prefix}events"
    relay = OutboxRelay(outbox_pool, bus, poll_interval_s=0.05)
    passes = counting_passes(relay)
    stop = asyncio.Event()
    running = asyncio.create_task(relay.run(stop))
    await await_until(lambda: passes, what="the first (empty) pass")  # then, asleep

    await commit_messages(outbox_pool, [(stream, b"o1"), (stream, b"o2")])
    await commit_messages(outbox_pool, [(stream, b"o3")])

    async def emptied() -> bool:
        return await outbox_size(outbox_pool) == 0

    await await_until(emptied, what="the periodic pass")
    stop.set()
    await asyncio.wait_for(running, timeout=30)

    assert await payloads(redis, stream) == [b"o1", b"o2", b"o3"]


async def test_a_pass_that_failed_while_redis_was_down_leaves_every_row_for_the_next(
    outbox_pool: AsyncConnectionPool, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"

    class Down(Bus):
        async def publish_many(self, items: Sequence[tuple[str, bytes]]) -> list[str]:
            raise ConnectionError("redis is down")

    await commit_messages(outbox_pool, [(stream, b"m1"), (stream, b"m2")])
    with pytest.raises(ConnectionError):
        await OutboxRelay(outbox_pool, Down(redis)).run_pass()
    assert await outbox_size(outbox_pool) == 2

    await OutboxRelay(outbox_pool, Bus(redis)).run_pass()  # Redis is back

    assert await payloads(redis, stream) == [b"m1", b"m2"]
    assert await outbox_size(outbox_pool) == 0


async def test_a_redis_outage_ends_when_redis_answers_not_when_a_pass_needs_none(
    outbox_pool: AsyncConnectionPool,
    redis: redis_async.Redis,
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Passes with nothing to publish during a Redis outage (another relay took the rows) do
    not end it: the relay pings Redis after each and logs the end, once, when it answers."""
    unreachable = redis_async.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    bus = Bus(unreachable)
    relay = OutboxRelay(outbox_pool, bus, poll_interval_s=0.05)
    passes = counting_passes(relay)
    caplog.set_level(logging.INFO, logger="shared.infra.outbox")

    def logged(what: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if what in r.getMessage()]

    await commit_messages(outbox_pool, [(f"{key_prefix}events", b"m")])
    stop = asyncio.Event()
    running = asyncio.create_task(relay.run(stop))
    await await_until(lambda: passes, what="the failed pass")
    async with outbox_pool.connection() as conn:
        await conn.execute("DELETE FROM outbox")  # published by another relay
    await await_until(lambda: passes.count("done") >= 2, what="passes with nothing to publish")
    assert not logged("reachable again")
    bus._redis = redis  # Redis answers again
    await await_until(lambda: logged("reachable again"), what="the outage's end")
    stop.set()
    await asyncio.wait_for(running, timeout=30)
    await unreachable.aclose()
    assert len(logged("redis unreachable")) == 1 and len(logged("reachable again")) == 1
