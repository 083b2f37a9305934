"""The event store's appends and reads against a real Postgres: versions, the whole log read
page by page, conflicts and concurrent writers."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from shared.infra.eventstore import Checkpoint, ConcurrencyError, EventStore, StoredEvent
from tests.integration.eventstore.events import new_events, new_stream, read_until, types
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


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


async def read_page_by_page(store: EventStore, after: Checkpoint) -> list[StoredEvent]:
    """What a consumer that handles one event at a time, resuming from its checkpoint, reads."""
    read: list[StoredEvent] = []
    for _ in range(100):
        page = await store.read_all(after=read[-1].checkpoint if read else after, limit=1)
        if not page:
            return read
        read += page
    raise AssertionError("the log never ended")


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
