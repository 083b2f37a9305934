"""The event store's schema against a real Postgres: migrations apply once, under concurrent
starters too, an old schema keeps its events, partitioning the log is done once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import msgspec
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from shared.infra import db
from shared.infra.db import ensure_database, migrate, migration_files, open_pool
from shared.infra.eventstore import LOG_START, Checkpoint, ConcurrencyError, EventStore
from tests.conftest import drop_database, with_database
from tests.integration.eventstore.events import BEFORE_PARTITIONING, new_events, read_until, types

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


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


async def test_a_database_with_the_old_schema_migrates_and_keeps_its_events(
    scratch_database_url: str,
) -> None:
    first_migration = [path for path in migration_files() if path.name == "001_events.sql"]
    await ensure_database(scratch_database_url)
    pool = AsyncConnectionPool(scratch_database_url, min_size=1, max_size=2, open=False)
    await pool.open()
    try:
        store = EventStore(pool)
        async with pool.connection() as conn:
            with pytest.MonkeyPatch.context() as patched:
                patched.setattr(db, "migration_files", lambda: first_migration)
                assert await migrate(conn) == ["001_events.sql"]
            # Written as that schema's code wrote it, through its append_events function.
            (created,) = new_events("TableCreated")
            await conn.execute(
                "SELECT append_events('table-1', 0, %s, %s, %s)",
                ([created.type], [created.data], [msgspec.json.encode(created.metadata)]),
            )
            await conn.execute("INSERT INTO tracking (consumer, position) VALUES ('feed', 1)")
            await conn.commit()
            assert "002_concurrent_appends.sql" in await migrate(conn)

        assert await store.append("table-1", 1, new_events("SeatTaken")) == 2
        await store.append("table-2", 0, new_events("TableCreated"))
        everything = await read_until(store, LOG_START, 3)
        assert [(event.stream_id, event.type) for event in everything] == [
            ("table-1", "TableCreated"),
            ("table-1", "SeatTaken"),
            ("table-2", "TableCreated"),
        ]
        assert everything[0].checkpoint == Checkpoint(0, 1)
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT transaction_id::text::bigint, position FROM tracking"
            )
            recorded = await cursor.fetchall()
        assert [Checkpoint(*row) for row in recorded] == [everything[0].checkpoint]
    finally:
        await pool.close()


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


async def test_partitioning_keeps_every_event_and_is_done_once(
    partitioned_database_url: str,
) -> None:
    """The streams written before are all there, in order, each in one partition; a second
    run changes nothing; appends go on (the conflict checks of test_append_and_read.py included)."""
    pool = await open_pool(partitioned_database_url, min_size=1, max_size=2)
    try:
        store = EventStore(pool)
        for number in range(BEFORE_PARTITIONING):
            stream = f"match-before-{number}"
            assert types(await store.read_stream(stream)) == ["A", "B", "C"]
        async with pool.connection() as conn:
            assert await db.partition_events(conn, 8) == 4
            cursor = await conn.execute(
                "SELECT count(DISTINCT tableoid) FROM events WHERE stream_id = 'match-before-0'"
            )
            assert await cursor.fetchone() == (1,)
            cursor = await conn.execute(
                "SELECT count(*) FROM pg_partitioned_table WHERE partrelid = 'events'::regclass"
            )
            assert await cursor.fetchone() == (1,)
        with pytest.raises(ConcurrencyError):
            await store.append("match-before-0", 2, new_events("D"))
    finally:
        await pool.close()
