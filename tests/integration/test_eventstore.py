"""The event store against a real Postgres: versions, global order, concurrency, migrations."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import msgspec
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from shared.db import ensure_database, migrate, migration_files, open_pool
from shared.eventstore import ConcurrencyError, EventStore, NewEvent
from shared.messages import Actor, metadata, new_id
from tests.conftest import drop_database, with_database

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def new_events(*types: str) -> list[NewEvent]:
    return [
        NewEvent(
            type=type_,
            data=msgspec.json.encode({"name": type_}),
            metadata=metadata(correlation_id="corr", actor=Actor(kind="seat", seat=1)),
        )
        for type_ in types
    ]


def new_stream() -> str:
    return f"match-{new_id()}"


async def last_position(pool: AsyncConnectionPool) -> int:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT coalesce(max(global_position), 0) FROM events")
        row = await cursor.fetchone()
    assert row is not None
    return row[0]


async def test_appended_events_read_back_with_versions_and_metadata(store: EventStore) -> None:
    stream = new_stream()
    assert await store.stream_version(stream) == 0
    first = new_events("MatchCreated", "CardsDealt")

    assert await store.append(stream, 0, first) == 2
    assert await store.append(stream, 2, new_events("CardPlayed")) == 3

    stored = await store.read_stream(stream)
    assert [(event.version, event.type) for event in stored] == [
        (1, "MatchCreated"),
        (2, "CardsDealt"),
        (3, "CardPlayed"),
    ]
    assert all(event.stream_id == stream for event in stored)
    assert stored[0].data == first[0].data
    assert stored[1].metadata == first[1].metadata
    assert stored[0].recorded_at.tzinfo is not None
    positions = [event.global_position for event in stored]
    assert positions == sorted(positions) and len(set(positions)) == 3
    assert await store.stream_version(stream) == 3


async def test_read_stream_pages_by_version(store: EventStore) -> None:
    stream = new_stream()
    await store.append(stream, 0, new_events("A", "B", "C", "D"))

    page = await store.read_stream(stream, after_version=1, limit=2)

    assert [event.type for event in page] == ["B", "C"]
    assert await store.read_stream(stream, after_version=4) == []
    assert await store.read_stream(new_stream()) == []


async def test_read_all_follows_global_order_across_streams(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    start = await last_position(pool)
    one, two = new_stream(), new_stream()
    await store.append(one, 0, new_events("one-1"))
    await store.append(two, 0, new_events("two-1", "two-2"))
    await store.append(one, 1, new_events("one-2"))

    everything = await store.read_all(after_position=start)
    first_page = await store.read_all(after_position=start, limit=2)
    second_page = await store.read_all(after_position=first_page[-1].global_position, limit=2)

    assert [event.type for event in everything] == ["one-1", "two-1", "two-2", "one-2"]
    assert [event.type for event in first_page + second_page] == [
        event.type for event in everything
    ]
    positions = [event.global_position for event in everything]
    assert positions == sorted(positions)


async def test_stale_or_future_expected_version_is_a_conflict(store: EventStore) -> None:
    stream = new_stream()
    await store.append(stream, 0, new_events("A", "B"))

    with pytest.raises(ConcurrencyError) as stale:
        await store.append(stream, 1, new_events("C"))
    with pytest.raises(ConcurrencyError) as ahead:
        await store.append(stream, 5, new_events("C"))
    with pytest.raises(ConcurrencyError):
        await store.append(stream, 0, new_events("C"))

    assert (stale.value.stream_id, stale.value.expected_version) == (stream, 1)
    assert stale.value.actual_version == 2
    assert ahead.value.actual_version == 2
    assert [event.version for event in await store.read_stream(stream)] == [1, 2]


async def test_concurrent_appenders_at_one_version_exactly_one_wins(store: EventStore) -> None:
    stream = new_stream()
    await store.append(stream, 0, new_events("Created"))

    outcomes = await asyncio.gather(
        *(store.append(stream, 1, new_events(f"Move{n}")) for n in range(8)),
        return_exceptions=True,
    )

    winners = [outcome for outcome in outcomes if outcome == 2]
    losers = [outcome for outcome in outcomes if isinstance(outcome, ConcurrencyError)]
    assert len(winners) == 1 and len(losers) == 7
    assert {loser.actual_version for loser in losers} == {2}
    assert [event.version for event in await store.read_stream(stream)] == [1, 2]


async def test_concurrent_creators_of_a_stream_exactly_one_wins(store: EventStore) -> None:
    stream = new_stream()

    outcomes = await asyncio.gather(
        *(store.append(stream, 0, new_events(f"Created{n}", "Dealt")) for n in range(6)),
        return_exceptions=True,
    )

    assert [outcome for outcome in outcomes if outcome == 2] == [2]
    assert sum(isinstance(outcome, ConcurrencyError) for outcome in outcomes) == 5
    assert await store.stream_version(stream) == 2


async def test_append_joins_the_callers_transaction(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    kept, discarded = new_stream(), new_stream()
    async with pool.connection() as conn:
        async with conn.transaction():
            await store.append(kept, 0, new_events("A"), conn=conn)
            assert await store.stream_version(kept, conn=conn) == 1
            assert await store.stream_version(kept) == 0  # not committed yet
        with pytest.raises(RuntimeError):
            async with conn.transaction():
                await store.append(discarded, 0, new_events("A", "B"), conn=conn)
                assert len(await store.read_stream(discarded, conn=conn)) == 2
                raise RuntimeError("the caller's work failed")

    assert await store.stream_version(kept) == 1
    assert await store.stream_version(discarded) == 0
    assert await store.read_stream(discarded) == []


async def test_conflict_inside_a_repeatable_read_transaction(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    stream = new_stream()
    async with pool.connection() as conn:
        await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
        try:
            with pytest.raises(ConcurrencyError) as conflict:
                async with conn.transaction():
                    assert await store.stream_version(stream, conn=conn) == 0  # snapshot taken
                    await store.append(stream, 0, new_events("Theirs"))
                    await store.append(stream, 0, new_events("Mine"), conn=conn)
        finally:
            await conn.set_isolation_level(None)

    assert conflict.value.actual_version == 1
    assert [event.type for event in await store.read_stream(stream)] == ["Theirs"]


async def test_appends_commit_in_global_position_order(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    """A reader by position must never see a later position while an earlier one may commit."""
    start = await last_position(pool)
    early, late = new_stream(), new_stream()
    async with pool.connection() as conn, conn.transaction():
        await store.append(early, 0, new_events("Early"), conn=conn)
        blocked = asyncio.create_task(store.append(late, 0, new_events("Late")))
        await asyncio.sleep(0.2)
        assert not blocked.done()
        assert await store.read_all(after_position=start) == []
    assert await blocked == 1

    assert [event.type for event in await store.read_all(after_position=start)] == [
        "Early",
        "Late",
    ]


async def test_append_rejects_an_empty_batch(store: EventStore) -> None:
    with pytest.raises(ValueError):
        await store.append(new_stream(), 0, [])


async def test_migrate_again_applies_nothing(pool: AsyncConnectionPool) -> None:
    async with pool.connection() as conn:
        assert await migrate(conn) == []
        cursor = await conn.execute("SELECT name FROM schema_migrations ORDER BY name")
        recorded = [name for (name,) in await cursor.fetchall()]
    assert recorded == [path.name for path in migration_files()]
    assert "001_events.sql" in recorded


@pytest.fixture
def scratch_database_url(postgres_server_url: str) -> Iterator[str]:
    """A database name that does not exist yet, dropped after the test."""
    name = f"playtable_scratch_{uuid.uuid4().hex[:12]}"
    try:
        yield with_database(postgres_server_url, name)
    finally:
        drop_database(postgres_server_url, name)


async def test_concurrent_migrations_apply_each_file_once(scratch_database_url: str) -> None:
    await ensure_database(scratch_database_url)
    connections = [await psycopg.AsyncConnection.connect(scratch_database_url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(conn) for conn in connections))
    finally:
        for conn in connections:
            await conn.close()

    applied = [name for result in results for name in result]
    assert sorted(applied) == [path.name for path in migration_files()]


async def test_concurrent_starters_create_the_database_and_schema(
    scratch_database_url: str,
) -> None:
    pools = await asyncio.gather(
        *(open_pool(scratch_database_url, min_size=1, max_size=2) for _ in range(3))
    )
    try:
        store = EventStore(pools[0])
        assert await store.append("table-1", 0, new_events("TableCreated")) == 1
        assert [event.type for event in await EventStore(pools[2]).read_stream("table-1")] == [
            "TableCreated"
        ]
    finally:
        for pool in pools:
            await pool.close()
