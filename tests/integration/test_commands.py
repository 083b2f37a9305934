"""Durable commands against real Postgres and Redis: kept until done, re-driven, never lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError

from shared import commands
from shared.bus import Bus
from shared.commands import CommandRedriver
from shared.messages import new_id

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class RedisDown(Bus):
    async def publish_many(self, items: Sequence[tuple[str, bytes]]) -> list[str]:
        raise RedisConnectionError("redis is down")


@pytest_asyncio.fixture
async def commands_pool(pool: AsyncConnectionPool) -> AsyncIterator[AsyncConnectionPool]:
    """The pool, with no pending command other tests may have left."""
    async with pool.connection() as conn:
        await conn.execute("delete from commands")
    yield pool


async def send(pool: AsyncConnectionPool, topic: str, subject: str, payload: bytes) -> str:
    command_id = new_id()
    async with pool.connection() as conn, conn.transaction():
        await commands.send(conn, command_id, topic, subject, payload)
    return command_id


async def published(redis: redis_async.Redis, topic: str) -> list[bytes]:
    return [fields[b"m"] for _, fields in await redis.xrange(topic)]


async def attempts(pool: AsyncConnectionPool, command_id: str) -> int:
    async with pool.connection() as conn:
        found = await conn.execute(
            "select attempts from commands where command_id = %s", (command_id,)
        )
        row = await found.fetchone()
    assert row is not None
    return row[0]


async def test_a_pending_command_is_published_again_until_done(
    commands_pool: AsyncConnectionPool, redis: redis_async.Redis, key_prefix: str
) -> None:
    topic = f"{key_prefix}commands"
    command_id = await send(commands_pool, topic, "m1", b"create m1")
    redriver = CommandRedriver(commands_pool, Bus(redis), first_retry_s=0.2, max_retry_s=0.3)

    assert await redriver.redrive() == 1
    assert await redriver.redrive() == 0  # not due again yet
    assert await published(redis, topic) == [b"create m1"]
    await redis.delete(topic)  # Redis forgets it: only Postgres still has it
    await asyncio.sleep(0.25)
    assert await redriver.redrive() == 1
    assert await published(redis, topic) == [b"create m1"]

    async with commands_pool.connection() as conn:
        await commands.complete(conn, command_id)
        state = await commands.latest_about(conn, "m1")
    assert state is not None and state.done and state.outcome == "done"
    await asyncio.sleep(0.35)
    assert await redriver.redrive() == 0
    assert await published(redis, topic) == [b"create m1"]


async def test_a_failed_publish_does_not_count_as_an_attempt(
    commands_pool: AsyncConnectionPool, redis: redis_async.Redis, key_prefix: str
) -> None:
    topic = f"{key_prefix}commands"
    command_id = await send(commands_pool, topic, "m2", b"create m2")
    with pytest.raises(RedisConnectionError):
        await CommandRedriver(commands_pool, RedisDown(redis)).redrive()
    assert await attempts(commands_pool, command_id) == 0
    assert await CommandRedriver(commands_pool, Bus(redis)).redrive() == 1
    assert await published(redis, topic) == [b"create m2"]
    assert await attempts(commands_pool, command_id) == 1


async def test_the_redriver_publishes_when_woken_and_survives_an_outage(
    commands_pool: AsyncConnectionPool, redis: redis_async.Redis, key_prefix: str
) -> None:
    topic = f"{key_prefix}commands"
    redriver = CommandRedriver(commands_pool, Bus(redis), poll_interval_s=5)
    stop = asyncio.Event()
    running = asyncio.create_task(redriver.run(stop))
    try:
        await asyncio.sleep(0.05)
        await send(commands_pool, topic, "m3", b"create m3")
        redriver.wake()
        for _ in range(100):
            if await published(redis, topic):
                break
            await asyncio.sleep(0.01)
        assert await published(redis, topic) == [b"create m3"]
    finally:
        stop.set()
        redriver.wake()
        await asyncio.wait_for(running, 5)


async def test_waiting_for_a_command_ends_when_it_is_done_or_the_time_is_up(
    commands_pool: AsyncConnectionPool, key_prefix: str
) -> None:
    command_id = await send(commands_pool, f"{key_prefix}commands", "m4", b"create m4")
    loop = asyncio.get_running_loop()
    began = loop.time()
    pending = await commands.wait_until_done(commands_pool, "m4", 0.2)
    assert pending is not None and not pending.done and loop.time() - began >= 0.2

    async def finish_soon() -> None:
        await asyncio.sleep(0.1)
        async with commands_pool.connection() as conn:
            await commands.complete(conn, command_id, f"{commands.REFUSED}: no")

    finishing = asyncio.create_task(finish_soon())
    done = await commands.wait_until_done(commands_pool, "m4", 5)
    await finishing
    assert done is not None and done.done and done.outcome == "refused: no"
    assert await commands.wait_until_done(commands_pool, "unknown", 5) is None
