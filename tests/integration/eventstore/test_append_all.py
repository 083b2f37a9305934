"""``append_all``, the event store's one write path, against a real Postgres: events, outbox
envelopes, snapshot and record in one transaction, or nothing when a guard fails."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from psycopg_pool import AsyncConnectionPool

from shared.domain.messages import Actor, metadata, new_id
from shared.infra.eventstore import Append, EventStore, Record, Snapshot, append_all
from tests.integration.eventstore.events import new_events, new_stream, types

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


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
