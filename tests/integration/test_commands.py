"""Durable commands against real Postgres and Redis: kept until done, re-driven, never lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError

from shared.domain.messages import new_id
from shared.infra import commands
from shared.infra.bus import Bus, read_entries
from shared.infra.commands import CommandRedriver, CommandStatus, CommandWatch
from tests.waiting import await_until

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
    redriver = CommandRedriver(commands_pool, Bus(redis), first_retry_s=1.0, max_retry_s=1.0)

    assert await redriver.redrive() == 1
    assert await redriver.redrive() == 0  # not due again yet
    assert await published(redis, topic) == [b"create m1"]
    await redis.delete(topic)  # Redis forgets it: only Postgres still has it
    assert await await_until(redriver.redrive, what="the command due again") == 1
    assert await published(redis, topic) == [b"create m1"]

    async with commands_pool.connection() as conn:
        await commands.complete(conn, command_id)
        state = await commands.latest_about(conn, "m1")
    assert state is not None and state.done and state.outcome == "done"
    await asyncio.sleep(1.1)  # past when it would be due again (the point: it is not)
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
    redriver = CommandRedriver(commands_pool, Bus(redis), poll_interval_s=60)
    passes = 0
    run_pass = redriver.run_pass

    async def counted() -> None:
        nonlocal passes
        await run_pass()
        passes += 1

    redriver.run_pass = counted  # type: ignore[method-assign]
    stop = asyncio.Event()
    running = asyncio.create_task(redriver.run(stop))
    try:
        await await_until(lambda: passes, what="the first pass")  # then, asleep for 60 s
        await send(commands_pool, topic, "m3", b"create m3")
        redriver.wake()
        published_now = await await_until(lambda: published(redis, topic), what="the woken pass")
        assert published_now == [b"create m3"]
    finally:
        stop.set()
        redriver.wake()
        await asyncio.wait_for(running, 30)


async def make_due(pool: AsyncConnectionPool) -> None:
    async with pool.connection() as conn:
        await conn.execute("update commands set next_attempt_at = now() where done_at is null")


async def test_a_command_is_published_again_only_once_its_entry_cannot_take_effect(
    commands_pool: AsyncConnectionPool, redis: redis_async.Redis, key_prefix: str
) -> None:
    """Not while its entry waits to be read or a live consumer holds it (a slow receiver gets
    no duplicates); once the consumer holding it is silent, or it was acknowledged without the
    command being done, or Redis lost it."""
    topic = f"{key_prefix}commands"
    await redis.xgroup_create(topic, "receiver", id="0", mkstream=True)
    await send(commands_pool, topic, "m11", b"create m11")
    redriver = CommandRedriver(commands_pool, Bus(redis))
    assert await redriver.redrive() == 1

    await make_due(commands_pool)
    assert await redriver.redrive() == 0  # not read yet
    assert len(read_entries(await redis.xreadgroup("receiver", "slow", {topic: ">"}))) == 1
    await make_due(commands_pool)
    assert await redriver.redrive() == 0  # held by a consumer that was just heard from
    await make_due(commands_pool)
    silent_soon = CommandRedriver(commands_pool, Bus(redis), owner_silent_ms=0)
    assert await silent_soon.redrive() == 1  # its holder deemed dead: published again

    [(entry_id, _)] = read_entries(await redis.xreadgroup("receiver", "slow", {topic: ">"}))
    await redis.xack(topic, "receiver", entry_id)
    await make_due(commands_pool)
    assert await redriver.redrive() == 1  # acknowledged, and the command still not done

    await redis.delete(topic)
    await make_due(commands_pool)
    assert await redriver.redrive() == 1  # lost with the stream
    assert await published(redis, topic) == [b"create m11"]


WAIT_S = 30.0
"""How long a wait below lasts unless woken, as long as the watch's own recheck: one that
ends sooner was woken (however busy the machine), one not woken ends no sooner."""


@pytest_asyncio.fixture
async def watch(
    commands_pool: AsyncConnectionPool, database_url: str
) -> AsyncIterator[CommandWatch]:
    """A listening watch whose waiters look only every 30 s of their own accord: a wait that
    ends sooner was woken by a notification (or by the watch listening again)."""
    watching = CommandWatch(commands_pool, database_url, recheck_s=30, max_backoff_s=0.2)
    stop = asyncio.Event()
    running = asyncio.create_task(watching.run(stop))
    await asyncio.wait_for(watching.listening.wait(), 30)
    try:
        yield watching
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)


async def complete_soon(
    pool: AsyncConnectionPool, command_id: str, outcome: str = "done", after_s: float = 0.1
) -> None:
    await asyncio.sleep(after_s)
    async with pool.connection() as conn, conn.transaction():
        await commands.complete(conn, command_id, outcome)


async def test_waiting_for_a_command_ends_when_it_is_done_or_the_time_is_up(
    commands_pool: AsyncConnectionPool, key_prefix: str, database_url: str
) -> None:
    watch = CommandWatch(commands_pool, database_url, recheck_s=0.05)  # not listening: looks
    command_id = await send(commands_pool, f"{key_prefix}commands", "m4", b"create m4")
    loop = asyncio.get_running_loop()
    began = loop.time()
    pending = await watch.wait("m4", 0.2)
    assert pending is not None and not pending.done and loop.time() - began >= 0.2

    finishing = asyncio.create_task(complete_soon(commands_pool, command_id, "refused: no"))
    done = await watch.wait("m4", 30)
    await finishing
    assert done == CommandStatus(True, "refused: no")
    assert await watch.wait("unknown", 5) is None
    assert await watch.wait("m4", 5) == CommandStatus(True, "refused: no")  # done already


async def test_a_notification_wakes_the_waiters_of_its_subject_with_the_outcome(
    watch: CommandWatch, commands_pool: AsyncConnectionPool, key_prefix: str
) -> None:
    command_id = await send(commands_pool, f"{key_prefix}commands", "m5", b"create m5")
    other_id = await send(commands_pool, f"{key_prefix}commands", "m6", b"create m6")
    loop = asyncio.get_running_loop()
    with watch.watch("m5") as first, watch.watch("m5") as second, watch.watch("m6") as third:
        began = loop.time()
        finishing = asyncio.create_task(complete_soon(commands_pool, command_id))
        refusing = asyncio.create_task(complete_soon(commands_pool, other_id, "refused: no", 0.05))
        woken = await asyncio.gather(
            watch.wait("m5", WAIT_S, first),
            watch.wait("m5", WAIT_S, second),
            watch.wait("m6", WAIT_S, third),
        )
        await asyncio.gather(finishing, refusing)
    assert woken == [CommandStatus(True, "done")] * 2 + [CommandStatus(True, "refused: no")]
    assert loop.time() - began < WAIT_S  # woken: a wait not told looks only at its end
    assert not watch._waiters  # every waiter gone with its wait

    # Not told before its time is up (no notification), the wait looks once at the end.
    pending_id = await send(commands_pool, f"{key_prefix}commands", "m7", b"create m7")
    with watch.watch("m7") as waiter:
        assert await watch.wait("m7", 0.2, waiter) == CommandStatus(False, None)
    async with commands_pool.connection() as conn:
        await commands.complete(conn, pending_id)
        await commands.complete(conn, pending_id, "refused: twice")  # a repeat changes nothing
        state = await commands.latest_about(conn, "m7")
    assert state is not None and state.done and state.outcome == "done"


async def test_an_outcome_too_long_to_notify_is_read(
    watch: CommandWatch, commands_pool: AsyncConnectionPool, key_prefix: str
) -> None:
    command_id = await send(commands_pool, f"{key_prefix}commands", "m8", b"create m8")
    outcome = f"{commands.REFUSED}: " + "x" * 9000
    loop = asyncio.get_running_loop()
    with watch.watch("m8") as waiter:
        began = loop.time()
        finishing = asyncio.create_task(complete_soon(commands_pool, command_id, outcome))
        done = await watch.wait("m8", WAIT_S, waiter)
        await finishing
    assert done == CommandStatus(True, outcome) and loop.time() - began < WAIT_S  # woken


async def test_the_watch_listens_again_after_losing_its_connection(
    watch: CommandWatch, commands_pool: AsyncConnectionPool, key_prefix: str
) -> None:
    """A Postgres restart ends the listening connection: the watch connects again, and a
    command done while it was away still wakes its waiters (they look once it listens)."""
    command_id = await send(commands_pool, f"{key_prefix}commands", "m9", b"create m9")
    loop = asyncio.get_running_loop()
    with watch.watch("m9") as waiter:
        waiting = asyncio.create_task(watch.wait("m9", WAIT_S, waiter))
        began = loop.time()
        async with commands_pool.connection() as conn:
            cursor = await conn.execute(
                "select count(pg_terminate_backend(pid)) from pg_stat_activity"
                " where datname = current_database() and query = %s",
                (f"LISTEN {commands.DONE_CHANNEL}",),
            )
            assert await cursor.fetchone() == (1,)
            await commands.complete(conn, command_id)  # told to nobody: the watch is away
        assert await waiting == CommandStatus(True, "done")
    assert loop.time() - began < WAIT_S  # woken once listening again, not at the wait's end
    await asyncio.wait_for(watch.listening.wait(), 30)

    second_id = await send(commands_pool, f"{key_prefix}commands", "m10", b"create m10")
    with watch.watch("m10") as waiter:
        finishing = asyncio.create_task(complete_soon(commands_pool, second_id))
        assert await watch.wait("m10", WAIT_S, waiter) == CommandStatus(True, "done")
        await finishing
