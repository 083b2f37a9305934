"""Group commit of moves against real Postgres and Redis: one transaction for moves that arrive
together, each with its own guard and outcome; the relay, woken after the commit, publishes them
in each stream's order."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool

from services.match.commit import Committer, PendingMove
from shared.infra.bus import Bus
from shared.infra.outbox import OutboxRelay
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


@pytest_asyncio.fixture
async def relay(pool: AsyncConnectionPool, bus: Bus) -> AsyncIterator[OutboxRelay]:
    """A running relay over an outbox emptied of rows other tests may have left."""
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM outbox")
    relay = OutboxRelay(pool, bus, poll_interval_s=0.05, linger_s=0)
    stop = asyncio.Event()
    running = asyncio.create_task(relay.run(stop))
    yield relay
    stop.set()
    await asyncio.wait_for(running, timeout=30)


@pytest.fixture
def committer(pool: AsyncConnectionPool, relay: OutboxRelay) -> Committer:
    return Committer(pool, relay, snapshot_every=4)


async def new_match(pool: AsyncConnectionPool) -> str:
    match_id = f"gc-{uuid.uuid4().hex[:12]}"
    async with pool.connection() as conn:
        await conn.execute(
            "insert into matches (match_id, game, seats, options, players, version, state,"
            " to_move, status)"
            " values (%s, 'test', 2, '{}', '[]', 0, 's0', '{0}', 'running')",
            (match_id,),
        )
    return match_id


def move(
    match_id: str, expected: int, topic: str, *, events: int = 1, key: str | None = None
) -> PendingMove:
    versions = range(expected + 1, expected + events + 1)
    return PendingMove(
        match_id=match_id,
        stream=f"match-{match_id}",
        expected=expected,
        state=f"s{expected + events}".encode(),
        to_move=[1, 0],
        status="running",
        result=None,
        clocks=None,
        deadline=None,
        types=["Moved"] * events,
        data=[b"{}"] * events,
        metadata=b"{}",
        publications=[(topic, f"{match_id}:{version}".encode()) for version in versions],
        scope=None if key is None else f"match:{match_id}:caller",
        key=key,
        fingerprint=None if key is None else "fingerprint",
        reply=None if key is None else b"sealed",
    )


async def one(pool: AsyncConnectionPool, query: str, *params: Any) -> Any:
    async with pool.connection() as conn:
        cursor = await conn.execute(query, params)
        row = await cursor.fetchone()
    assert row is not None
    return row[0]


async def published(redis: redis_async.Redis, topic: str, count: int) -> list[bytes]:
    """The payloads on ``topic``, once ``count`` different ones have arrived."""

    async def arrived() -> list[bytes] | None:
        raw: Any = await redis.xrange(topic)
        payloads = [fields[b"m"] for _, fields in raw]
        return payloads if len(set(payloads)) >= count else None

    return await await_until(arrived, poll=0.01, what=f"{count} payloads on {topic}")


async def outbox_emptied(pool: AsyncConnectionPool) -> None:

    async def emptied() -> bool:
        return not await one(pool, "select count(*) from outbox")

    await await_until(emptied, poll=0.02, what="the outbox emptied")


async def test_moves_arriving_together_commit_in_one_transaction(
    pool: AsyncConnectionPool, committer: Committer, redis: redis_async.Redis, key_prefix: str
) -> None:
    topic = f"{key_prefix}match-events"
    matches = [await new_match(pool) for _ in range(20)]

    moved = await asyncio.gather(*(committer.commit(move(m, 0, topic)) for m in matches))

    assert moved == [True] * 20
    writers = await one(
        pool,
        "select count(distinct transaction_id) from events where stream_id = any(%s)",
        [f"match-{m}" for m in matches],
    )
    assert writers == 1
    assert sorted(await published(redis, topic, 20)) == sorted(f"{m}:1".encode() for m in matches)
    await outbox_emptied(pool)


async def test_racing_moves_in_one_group_have_one_winner_and_spare_the_others(
    pool: AsyncConnectionPool, committer: Committer
) -> None:
    contested, other = await new_match(pool), await new_match(pool)
    topic = "unused"

    first, second, third = await asyncio.gather(
        committer.commit(move(contested, 0, topic, events=2)),
        committer.commit(move(contested, 0, topic)),
        committer.commit(move(other, 0, topic)),
    )

    assert (first, second, third) == (True, False, True)
    assert await one(pool, "select version from matches where match_id = %s", contested) == 2
    assert await one(pool, "select version from matches where match_id = %s", other) == 1


async def test_a_key_already_used_stops_its_move_only(
    pool: AsyncConnectionPool, committer: Committer
) -> None:
    keyed, other = await new_match(pool), await new_match(pool)
    assert await committer.commit(move(keyed, 0, "unused", key="k1"))

    reused, fresh = await asyncio.gather(
        committer.commit(move(keyed, 1, "unused", key="k1")),
        committer.commit(move(other, 0, "unused", key="k1")),
    )

    assert (reused, fresh) == (False, True)
    assert await one(pool, "select version from matches where match_id = %s", keyed) == 1
    assert await one(pool, "select count(*) from idempotency where key = 'k1'") == 2


async def test_a_failing_group_commits_its_moves_one_by_one(
    pool: AsyncConnectionPool, committer: Committer
) -> None:
    """An event already at the version a move writes (the row and the log disagree) fails the
    group's statement; the others still commit, and that move loses as a racing one does."""
    broken, fine = await new_match(pool), await new_match(pool)
    async with pool.connection() as conn:
        await conn.execute(
            "insert into events (stream_id, version, type, data, metadata)"
            " values (%s, 1, 'Moved', '{}', '{}')",
            (f"match-{broken}",),
        )

    moved = await asyncio.gather(
        committer.commit(move(broken, 0, "unused")), committer.commit(move(fine, 0, "unused"))
    )

    assert moved == [False, True]
    assert await one(pool, "select version from matches where match_id = %s", broken) == 0


async def test_snapshots_are_kept_as_a_move_crosses_the_interval(
    pool: AsyncConnectionPool, committer: Committer
) -> None:
    match_id = await new_match(pool)

    assert await committer.commit(move(match_id, 0, "unused", events=3))
    assert await committer.commit(move(match_id, 3, "unused", events=2))

    kept = await one(
        pool, "select array_agg(version) from match_snapshots where match_id = %s", match_id
    )
    assert kept == [5]


async def test_a_matchs_moves_reach_redis_in_version_order_and_leave_the_outbox(
    pool: AsyncConnectionPool, committer: Committer, redis: redis_async.Redis, key_prefix: str
) -> None:
    topic = f"{key_prefix}match-events"
    match_id = await new_match(pool)

    for version in range(3):
        assert await committer.commit(move(match_id, version, topic))

    first_copies = list(dict.fromkeys(await published(redis, topic, 3)))  # at least once
    assert first_copies == [f"{match_id}:{v}".encode() for v in (1, 2, 3)]
    await outbox_emptied(pool)


async def test_a_match_another_process_moved_last_goes_out_in_order(
    pool: AsyncConnectionPool, committer: Committer, redis: redis_async.Redis, key_prefix: str
) -> None:
    """The process that committed version 1 died before publishing it: the drain the next
    move wakes publishes the outbox in id order, so version 1 goes out first."""
    topic = f"{key_prefix}match-events"
    match_id = await new_match(pool)
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("update matches set version = 1 where match_id = %s", (match_id,))
        await conn.execute(
            "insert into outbox (topic, payload) values (%s, %s)",
            (topic, f"{match_id}:1".encode()),
        )

    assert await committer.commit(move(match_id, 1, topic))
    assert await committer.commit(move(match_id, 2, topic))

    first_copies = list(dict.fromkeys(await published(redis, topic, 3)))  # at least once
    assert first_copies == [f"{match_id}:{v}".encode() for v in (1, 2, 3)]
    await outbox_emptied(pool)


async def test_moves_alternating_between_processes_reach_redis_in_version_order(
    pool: AsyncConnectionPool, relay: OutboxRelay, redis: redis_async.Redis, key_prefix: str
) -> None:
    """Two processes (a committer and relay each, one relay slow) take turns moving the same
    matches: each wakes its own relay, the drains take turns under the lock, and the first copy
    of every event arrives in order."""
    topic = f"{key_prefix}match-events"

    class Slow(Bus):
        async def publish_many(self, items: Any) -> list[str]:
            await asyncio.sleep(0.02)  # a busy process, late to publish what it committed
            return await super().publish_many(items)

    other = OutboxRelay(pool, Slow(redis), poll_interval_s=0.05, linger_s=0)
    stop = asyncio.Event()
    running = asyncio.create_task(other.run(stop))
    processes = [
        Committer(pool, relay, snapshot_every=32),
        Committer(pool, other, snapshot_every=32),
    ]
    matches = [await new_match(pool) for _ in range(3)]

    async def play(match_id: str) -> None:
        for version in range(12):
            committer = processes[(version // 2) % 2]  # two moves here, two there
            assert await committer.commit(move(match_id, version, topic))

    await asyncio.gather(*(play(m) for m in matches))
    arrived = await published(redis, topic, 36)
    stop.set()
    await asyncio.wait_for(running, timeout=30)

    first_copies = list(dict.fromkeys(arrived))
    for match_id in matches:
        mine = [p for p in first_copies if p.startswith(f"{match_id}:".encode())]
        assert mine == [f"{match_id}:{v}".encode() for v in range(1, 13)]
