"""The event store against a real Postgres: versions, the whole log, concurrency, migrations."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import psycopg
import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from shared.domain.messages import Actor, metadata, new_id
from shared.infra import db
from shared.infra.db import ensure_database, migrate, migration_files, open_pool
from shared.infra.eventstore import (
    LOG_START,
    Append,
    Checkpoint,
    ConcurrencyError,
    EventStore,
    NewEvent,
    Record,
    Snapshot,
    StoredEvent,
    append_all,
)
from tests.conftest import drop_database, with_database
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

BEFORE_PARTITIONING = 5
"""Streams written before the log is partitioned (each of three events)."""


@pytest.fixture(scope="module")
def partitioned_database_url(postgres_server_url: str) -> Iterator[str]:
    """A database whose event log was partitioned (``playtable partition-events``) after
    some streams were written: every test of this module also runs on it."""
    name = f"playtable_partitioned_{uuid.uuid4().hex[:12]}"
    url = with_database(postgres_server_url, name)

    async def prepare() -> None:
        pool = await open_pool(url, min_size=1, max_size=2)
        try:
            store = EventStore(pool)
            for number in range(BEFORE_PARTITIONING):
                await store.append(f"match-before-{number}", 0, new_events("A", "B", "C"))
            async with pool.connection() as conn:
                assert await db.partition_events(conn, 4) == 4
        finally:
            await pool.close()

    asyncio.run(prepare())
    try:
        yield url
    finally:
        drop_database(postgres_server_url, name)


@pytest_asyncio.fixture(params=["plain log", "partitioned log"])
async def pool(
    request: pytest.FixtureRequest, database_url: str, partitioned_database_url: str
) -> AsyncIterator[AsyncConnectionPool]:
    url = database_url if request.param == "plain log" else partitioned_database_url
    opened = await open_pool(url, min_size=1, max_size=8)
    try:
        yield opened
    finally:
        await opened.close()


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


async def fresh_checkpoint(pool: AsyncConnectionPool) -> Checkpoint:
    """A checkpoint after every event written so far: new transaction ids exceed all before."""
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT pg_current_xact_id()::text::bigint")
        row = await cursor.fetchone()
    assert row is not None
    return Checkpoint(transaction_id=row[0])


async def waits_on_a_lock(pool: AsyncConnectionPool, backend_pid: int) -> bool:
    """Whether the server's backend ``backend_pid`` is waiting for a lock."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (backend_pid,)
        )
        return await cursor.fetchone() == ("Lock",)


async def read_until(store: EventStore, after: Checkpoint, count: int) -> list[StoredEvent]:
    """Read the whole log after ``after`` until ``count`` events are readable.

    Any transaction on the server that is older than the writers (another session's, too)
    holds their events back from ``read_all`` until it ends, so wait for that.
    """

    async def readable() -> list[StoredEvent] | None:
        events = await store.read_all(after=after)
        return events if len(events) >= count else None

    return await await_until(readable, what=f"{count} events readable")


async def read_page_by_page(store: EventStore, after: Checkpoint) -> list[StoredEvent]:
    """What a consumer that handles one event at a time, resuming from its checkpoint, reads."""
    read: list[StoredEvent] = []
    for _ in range(100):
        page = await store.read_all(after=read[-1].checkpoint if read else after, limit=1)
        if not page:
            return read
        read += page
    raise AssertionError("the log never ended")


def types(events: list[StoredEvent]) -> list[str]:
    return [event.type for event in events]


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


async def test_read_all_pages_through_every_stream_by_checkpoint(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    start = await fresh_checkpoint(pool)
    one, two = new_stream(), new_stream()
    await store.append(one, 0, new_events("one-1"))
    await store.append(two, 0, new_events("two-1", "two-2"))
    await store.append(one, 1, new_events("one-2"))

    everything = await read_until(store, start, 4)
    first_page = await store.read_all(after=start, limit=2)
    second_page = await store.read_all(after=first_page[-1].checkpoint, limit=2)

    assert types(everything) == ["one-1", "two-1", "two-2", "one-2"]
    assert first_page + second_page == everything
    assert await store.read_all(after=everything[-1].checkpoint) == []
    checkpoints = [event.checkpoint for event in everything]
    assert checkpoints == sorted(checkpoints) and start < checkpoints[0]
    assert everything[1].transaction_id == everything[2].transaction_id  # one batch
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


async def test_appends_to_different_streams_do_not_wait_for_each_other(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    streams = [new_stream() for _ in range(3)]
    async with pool.connection() as a, pool.connection() as b, pool.connection() as c:
        async with a.transaction(), b.transaction(), c.transaction():
            for conn, stream in zip((a, b, c), streams, strict=True):
                append = store.append(stream, 0, new_events("Opened"), conn=conn)
                assert await asyncio.wait_for(append, timeout=5) == 1
            assert [await store.stream_version(stream) for stream in streams] == [0, 0, 0]

    assert [await store.stream_version(stream) for stream in streams] == [1, 1, 1]


@pytest.mark.parametrize("first_commits", [True, False], ids=["commit", "rollback"])
async def test_same_version_in_open_transactions_waits_for_the_first(
    pool: AsyncConnectionPool, store: EventStore, first_commits: bool
) -> None:
    """Both see version 0; the second's insert waits on the key for the first to end."""
    stream = new_stream()
    async with pool.connection() as first, pool.connection() as second:
        async with second.transaction(force_rollback=first_commits):
            async with first.transaction(force_rollback=not first_commits):
                assert await store.append(stream, 0, new_events("First"), conn=first) == 1
                waiting = asyncio.create_task(
                    store.append(stream, 0, new_events("Second", "Dealt"), conn=second)
                )
                await await_until(
                    lambda: waits_on_a_lock(pool, second.info.backend_pid),
                    what="the second insert waiting on the key",
                )
                assert not waiting.done()
            if first_commits:
                with pytest.raises(ConcurrencyError) as conflict:
                    await waiting
                assert conflict.value.actual_version == 1
            else:
                assert await waiting == 2

    expected = ["First"] if first_commits else ["Second", "Dealt"]
    assert types(await store.read_stream(stream)) == expected


@pytest.mark.parametrize("older_commits", [True, False], ids=["commit", "rollback"])
async def test_read_all_holds_back_events_until_older_transactions_end(
    pool: AsyncConnectionPool, store: EventStore, older_commits: bool
) -> None:
    start = await fresh_checkpoint(pool)
    early, late = new_stream(), new_stream()
    async with pool.connection() as conn, conn.transaction(force_rollback=not older_commits):
        await store.append(early, 0, new_events("Early"), conn=conn)
        (uncommitted,) = await store.read_stream(early, conn=conn)
        await store.append(late, 0, new_events("Late"))
        (committed,) = await store.read_stream(late)
        assert committed.global_position > uncommitted.global_position

        assert await store.read_all(after=start) == []

    expected = ["Early", "Late"] if older_commits else ["Late"]
    everything = await read_until(store, start, len(expected))
    assert types(everything) == expected
    assert await read_page_by_page(store, start) == everything


async def test_a_lower_position_committed_later_is_read_after_a_higher_one(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    """The case a reader by position alone would skip: it has moved past the lower position."""
    start = await fresh_checkpoint(pool)
    async with pool.connection() as older, pool.connection() as newer:
        async with newer.transaction():
            async with older.transaction():
                await older.execute("SELECT pg_current_xact_id()")  # it writes elsewhere first
                await store.append(new_stream(), 0, new_events("Lower"), conn=newer)
                await store.append(new_stream(), 0, new_events("Higher"), conn=older)

            (higher,) = await read_until(store, start, 1)
            assert higher.type == "Higher"

    (lower,) = await read_until(store, higher.checkpoint, 1)
    assert lower.type == "Lower"
    assert lower.global_position < higher.global_position
    assert types(await read_page_by_page(store, start)) == ["Higher", "Lower"]


async def test_append_from_a_transaction_older_than_the_streams_last_writer_is_a_conflict(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    """Otherwise read_all, ordered by transaction id, would list version 2 before version 1."""
    start = await fresh_checkpoint(pool)
    stream = new_stream()
    async with pool.connection() as conn:
        with pytest.raises(ConcurrencyError) as conflict:
            async with conn.transaction():
                await conn.execute("SELECT pg_current_xact_id()")  # it writes elsewhere first
                await store.append(stream, 0, new_events("Theirs"))
                await store.append(stream, 1, new_events("Mine"), conn=conn)
        assert conflict.value.actual_version == 1
        assert "newer transaction" in str(conflict.value)

        async with conn.transaction():
            assert await store.append(stream, 1, new_events("Mine"), conn=conn) == 2

    everything = await read_until(store, start, 2)
    assert [(event.type, event.version) for event in everything] == [("Theirs", 1), ("Mine", 2)]


async def test_append_rejects_an_empty_batch(store: EventStore) -> None:
    with pytest.raises(ValueError):
        await store.append(new_stream(), 0, [])


# --- append_all: the one write path ----------------------------------------------------------


async def new_match_row(pool: AsyncConnectionPool) -> str:
    """A ``matches`` row, which a snapshot refers to; its stream is ``match-<id>``."""
    match_id = new_id()
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO matches (match_id, game, seats, options, players, version, state,"
            " to_move, status) VALUES (%s, 'test', 2, '{}', '[]', 0, 's0', '{0}', 'running')",
            (match_id,),
        )
    return match_id


def an_append(
    stream: str,
    expected: int,
    *types: str,
    topic: str,
    snapshots: tuple[Snapshot, ...] = (),
    record: Record | None = None,
) -> Append:
    """Events of ``types`` with an envelope each on ``topic``, naming the stream and version."""
    meta = msgspec.json.encode(metadata(correlation_id="corr", actor=Actor(kind="seat", seat=0)))
    return Append(
        stream,
        expected,
        [(type_, msgspec.json.encode({"name": type_}), meta) for type_ in types],
        [(topic, f"{stream}:{expected + n}".encode()) for n in range(1, len(types) + 1)],
        snapshots,
        record,
    )


async def rows(pool: AsyncConnectionPool, query: str, *params: object) -> list[tuple[Any, ...]]:
    async with pool.connection() as conn:
        cursor = await conn.execute(query, params)
        return await cursor.fetchall()


async def outbox_of(pool: AsyncConnectionPool, topic: str) -> list[bytes]:
    found = await rows(pool, "SELECT payload FROM outbox WHERE topic = %s ORDER BY id", topic)
    return [payload for (payload,) in found]


async def append_in_one_transaction(
    pool: AsyncConnectionPool, appends: list[Append], **guard: Any
) -> set[int]:
    async with pool.connection() as conn, conn.transaction():
        return await append_all(conn, appends, **guard)


async def test_append_all_writes_events_envelopes_snapshot_and_record(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    match_id = await new_match_row(pool)
    stream, topic = f"match-{match_id}", f"topic-{new_id()}"
    record = Record(f"match:{match_id}:caller", "key-1", "fingerprint", 201, b"sealed")
    append = an_append(
        stream, 0, "A", "B", topic=topic, snapshots=(Snapshot(match_id, 2, b"s2"),), record=record
    )

    assert await append_in_one_transaction(pool, [append]) == {1}

    stored = await store.read_stream(stream)
    assert [(e.version, e.type, e.data) for e in stored] == [
        (1, "A", b'{"name":"A"}'),
        (2, "B", b'{"name":"B"}'),
    ]
    assert [msgspec.json.encode(e.metadata) for e in stored] == [append.events[0][2]] * 2
    assert await outbox_of(pool, topic) == [f"{stream}:1".encode(), f"{stream}:2".encode()]
    snapshots = await rows(
        pool, "SELECT version, state FROM match_snapshots WHERE match_id = %s", match_id
    )
    assert snapshots == [(2, b"s2")]
    records = await rows(
        pool,
        "SELECT request_hash, status, body FROM idempotency WHERE scope = %s AND key = %s",
        record.scope,
        record.key,
    )
    assert records == [("fingerprint", 201, b"sealed")]


async def test_append_all_a_failed_guard_writes_nothing(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    match_id = await new_match_row(pool)
    stream, topic = f"match-{match_id}", f"topic-{new_id()}"
    await store.append(stream, 0, new_events("Created"))
    stale = an_append(
        stream,
        0,
        "Late",
        topic=topic,
        snapshots=(Snapshot(match_id, 1, b"s1"),),
        record=Record(f"match:{match_id}:caller", "key-1", "fingerprint", 201, b"sealed"),
    )

    assert await append_in_one_transaction(pool, [stale]) == set()

    assert types(await store.read_stream(stream)) == ["Created"]
    assert await outbox_of(pool, topic) == []
    assert await rows(pool, "SELECT 1 FROM match_snapshots WHERE match_id = %s", match_id) == []
    assert (
        await rows(
            pool,
            "SELECT 1 FROM idempotency WHERE key = %s AND scope = %s",
            "key-1",
            f"match:{match_id}:caller",
        )
        == []
    )


async def test_append_all_two_streams_one_guarded_out_envelopes_in_order(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    moved_on, fresh, later = new_stream(), new_stream(), new_stream()
    topic = f"topic-{new_id()}"
    await store.append(moved_on, 0, new_events("Created"))

    appended = await append_in_one_transaction(
        pool,
        [
            an_append(fresh, 0, "A", "B", topic=topic),
            an_append(moved_on, 0, "Stale", topic=topic),  # guarded out: it is at version 1
            an_append(later, 0, "C", topic=topic),
        ],
    )

    assert appended == {1, 3}
    assert types(await store.read_stream(fresh)) == ["A", "B"]
    assert types(await store.read_stream(moved_on)) == ["Created"]
    assert types(await store.read_stream(later)) == ["C"]
    assert await outbox_of(pool, topic) == [
        f"{fresh}:1".encode(),
        f"{fresh}:2".encode(),
        f"{later}:1".encode(),
    ]


async def test_append_all_a_used_idempotency_key_stops_its_append_only(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    first, second, other = new_stream(), new_stream(), new_stream()
    topic = f"topic-{new_id()}"
    record = Record(f"scope-{new_id()}", "key-1", "fingerprint", 200, b"first answer")
    assert await append_in_one_transaction(
        pool, [an_append(first, 0, "A", topic=topic, record=record)]
    ) == {1}

    again = Record(record.scope, record.key, "fingerprint", 200, b"second answer")
    appended = await append_in_one_transaction(
        pool,
        [
            an_append(second, 0, "B", topic=topic, record=again),
            an_append(other, 0, "C", topic=topic),
        ],
    )

    assert appended == {2}
    assert types(await store.read_stream(second)) == []
    assert types(await store.read_stream(other)) == ["C"]
    bodies = await rows(
        pool, "SELECT body FROM idempotency WHERE scope = %s AND key = %s", record.scope, record.key
    )
    assert bodies == [(b"first answer",)]
    assert await outbox_of(pool, topic) == [f"{first}:1".encode(), f"{other}:1".encode()]


async def test_append_all_a_callers_guard_decides_which_appends_write(
    pool: AsyncConnectionPool, store: EventStore
) -> None:
    """A caller's guard takes the place of the stream guard (the match service's moves the
    ``matches`` row): here it lets through only the stream it names."""
    kept, left_out = new_stream(), new_stream()
    topic = f"topic-{new_id()}"
    guard = "select append.n, append.stream, append.expected from append where stream = %(only)b"

    appended = await append_in_one_transaction(
        pool,
        [an_append(left_out, 0, "A", topic=topic), an_append(kept, 0, "B", topic=topic)],
        guard=guard,
        guard_params={"only": kept},
    )

    assert appended == {2}
    assert types(await store.read_stream(left_out)) == []
    assert types(await store.read_stream(kept)) == ["B"]
    assert await outbox_of(pool, topic) == [f"{kept}:1".encode()]


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
    run changes nothing; appends go on (the conflict checks included, above)."""
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
