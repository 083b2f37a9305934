"""The event store: append-only streams of events in Postgres with optimistic concurrency.

Every write to the log goes through ``append_all``: one statement, on the caller's connection,
that appends the events of one or more streams under a version guard and writes with them their
envelopes into the outbox, their snapshots and their Idempotency-Key records (``Append``).
Appends to different streams never wait for each other; two appends to the same stream at the
same version collide on the ``(stream_id, version)`` key and one of them fails with
``ConcurrencyError``.

Because appends run concurrently, events do not commit in ``global_position`` order, so a reader
of the whole log cannot resume from a position alone. Each event also records the id of the
transaction that wrote it, and ``read_all`` pages through the log by ``Checkpoint`` (transaction
id, then position), returning only events of transactions that can no longer change (see there).
A consumer records the checkpoint of the last event it handled (table ``tracking``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

import msgspec
from psycopg import AsyncConnection, errors
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool

from shared.domain.messages import EventMetadata

_COLUMNS = (
    "global_position, transaction_id::text::bigint, stream_id, version, type, data, metadata,"
    " recorded_at"
)

_READ_STREAM = f"""
SELECT {_COLUMNS} FROM events
WHERE stream_id = %s AND version > %s::int
ORDER BY version
LIMIT %s::bigint
"""

_READ_ALL = f"""
SELECT {_COLUMNS} FROM events
WHERE (transaction_id, global_position) > (%s::text::xid8, %s::bigint)
  AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY events.transaction_id, events.global_position  -- the indexed columns, not the casts
LIMIT %s::bigint
"""

_STREAM_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = %s"

_STREAM_HEAD = """
SELECT version, transaction_id > pg_current_xact_id() FROM events
WHERE stream_id = %s ORDER BY version DESC LIMIT 1
"""


class NewEvent(msgspec.Struct, frozen=True):
    """An event to append: its type name, its msgspec JSON and where it came from."""

    type: str
    data: bytes
    metadata: EventMetadata


class Checkpoint(msgspec.Struct, frozen=True, order=True):
    """A place in the whole log, as ``read_all`` orders it: writer's transaction id, position."""

    transaction_id: int = 0
    global_position: int = 0


LOG_START = Checkpoint()


class StoredEvent(msgspec.Struct, frozen=True):
    """An event as recorded, with its place in its stream and in the whole log."""

    global_position: int
    transaction_id: int
    stream_id: str
    version: int
    type: str
    data: bytes
    metadata: EventMetadata
    recorded_at: datetime

    @property
    def checkpoint(self) -> Checkpoint:
        """Where a reader of the whole log resumes after handling this event."""
        return Checkpoint(self.transaction_id, self.global_position)


class ConcurrencyError(Exception):
    """The stream moved on since the caller read it: reload and decide again."""

    def __init__(
        self, stream_id: str, expected_version: int, actual_version: int, reason: str = ""
    ) -> None:
        versions = f"is at version {actual_version}, expected {expected_version}"
        message = f"stream {stream_id!r} {versions}"
        super().__init__(f"{message}: {reason}" if reason else message)
        self.stream_id = stream_id
        self.expected_version = expected_version
        self.actual_version = actual_version


class Snapshot(NamedTuple):
    """A folded state of a match at a version (table ``match_snapshots``)."""

    match_id: str
    version: int
    state: bytes


class Record(NamedTuple):
    """The answer to a request under an Idempotency-Key (table ``idempotency``), sealed."""

    scope: str
    key: str
    fingerprint: str
    status: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Append:
    """What one stream's append writes, all or nothing: its events after version ``expected``,
    and with them the envelopes to publish, snapshots, and the record of its Idempotency-Key."""

    stream: str
    expected: int
    events: Sequence[tuple[str, bytes, bytes]]
    """``(type, data, metadata)``, each encoded."""
    envelopes: Sequence[tuple[str, bytes]] = ()
    """``(topic, payload)`` for the outbox, in the order to publish."""
    snapshots: Sequence[Snapshot] = ()
    record: Record | None = None


STREAM_GUARD = """
select append.n, append.stream, append.expected
from append
left join lateral (
    select version, transaction_id from events
    where events.stream_id = append.stream
    order by version desc limit 1
) head on true
where coalesce(head.version, 0) = append.expected
  and (head.transaction_id is null or head.transaction_id <= pg_current_xact_id())
  and not append.key_used
"""
"""The guard of an append by itself: its stream is at the expected version, the stream's last
writer is not newer than this transaction (``read_all`` orders events by transaction id, so a
stream's versions must rise with their writers' ids), and its Idempotency-Key is unused."""


async def append_all(
    conn: AsyncConnection,
    appends: Sequence[Append],
    *,
    guard: str = STREAM_GUARD,
    guard_params: dict[str, object] | None = None,
) -> set[int]:
    """Write ``appends`` in one statement on ``conn``; return the numbers (from 1) of those
    written. Each is written whole or not at all, as ``guard`` allows: a query over the CTE
    ``append`` (columns ``n, stream, expected, event_count, scope, key, key_used``) returning
    the rows ``(n, stream, expected)`` that may append. A caller's guard may write (the match
    service moves the ``matches`` row of each move) and take ``guard_params``, named unlike the
    statement's own parameters (below); an append it leaves out writes nothing and aborts
    nothing. The outbox receives the envelopes in their order, append after append."""
    events = [
        (number, offset, event)
        for number, append in enumerate(appends, 1)
        for offset, event in enumerate(append.events, 1)
    ]
    envelopes = [
        (number, envelope)
        for number, append in enumerate(appends, 1)
        for envelope in append.envelopes
    ]
    snapshots = [
        (number, snapshot)
        for number, append in enumerate(appends, 1)
        for snapshot in append.snapshots
    ]
    records = [
        (number, append.record)
        for number, append in enumerate(appends, 1)
        if append.record is not None
    ]
    params = {
        **(guard_params or {}),
        "streams": [append.stream for append in appends],
        "expected": [append.expected for append in appends],
        "event_counts": [len(append.events) for append in appends],
        "scopes": [None if append.record is None else append.record.scope for append in appends],
        "keys": [None if append.record is None else append.record.key for append in appends],
        "event_appends": [number for number, _, _ in events],
        "event_offsets": [offset for _, offset, _ in events],
        "types": [event[0] for _, _, event in events],
        "data": [event[1] for _, _, event in events],
        "metadata": [event[2] for _, _, event in events],
        "envelope_appends": [number for number, _ in envelopes],
        "topics": [envelope[0] for _, envelope in envelopes],
        "payloads": [envelope[1] for _, envelope in envelopes],
        "snapshot_appends": [number for number, _ in snapshots],
        "snapshot_matches": [snapshot.match_id for _, snapshot in snapshots],
        "snapshot_versions": [snapshot.version for _, snapshot in snapshots],
        "snapshot_states": [snapshot.state for _, snapshot in snapshots],
        "record_appends": [number for number, _ in records],
        "fingerprints": [record.fingerprint for _, record in records],
        "record_statuses": [record.status for _, record in records],
        "bodies": [record.body for _, record in records],
    }
    cursor = await conn.execute(_append_statement(guard), params)
    row = await cursor.fetchone()
    assert row is not None
    return set(row[0])


@cache
def _append_statement(guard: str) -> str:
    return _APPEND_ALL.replace("{guard}", guard)


# Parameters travel in binary (``%b``): arrays of state and event bytes dumped as text were
# escaped element by element in Python, 1.6 ms of CPU for a group of 30 moves (0.2 binary).
_APPEND_ALL = """
with append as (
    select a.*, i.key is not null as key_used
    from unnest(
        %(streams)b::text[], %(expected)b::int[], %(event_counts)b::int[], %(scopes)b::text[],
        %(keys)b::text[]
    ) with ordinality as a(stream, expected, event_count, scope, key, n)
    left join idempotency i on i.scope = a.scope and i.key = a.key
), guarded as (
{guard}
), appended as (
    insert into events (stream_id, version, type, data, metadata)
    select guarded.stream, guarded.expected + e.number, e.type, e.data, e.metadata
    from unnest(
        %(event_appends)b::int[], %(event_offsets)b::int[], %(types)b::text[], %(data)b::bytea[],
        %(metadata)b::bytea[]
    ) with ordinality as e(append, number, type, data, metadata, n)
    join guarded on guarded.n = e.append
    order by e.n
), queued as (
    insert into outbox (topic, payload)
    select p.topic, p.payload
    from unnest(%(envelope_appends)b::int[], %(topics)b::text[], %(payloads)b::bytea[])
        with ordinality as p(append, topic, payload, n)
    where p.append in (select guarded.n from guarded)
    order by p.n
), snapshotted as (
    insert into match_snapshots (match_id, version, state)
    select s.match_id, s.version, s.state
    from unnest(
        %(snapshot_appends)b::int[], %(snapshot_matches)b::text[], %(snapshot_versions)b::int[],
        %(snapshot_states)b::bytea[]
    ) with ordinality as s(append, match_id, version, state, n)
    where s.append in (select guarded.n from guarded)
    order by s.n
    on conflict do nothing
), remembered as (
    insert into idempotency (scope, key, request_hash, status, body)
    select append.scope, append.key, r.fingerprint, r.status, r.body
    from unnest(
        %(record_appends)b::int[], %(fingerprints)b::text[], %(record_statuses)b::int[],
        %(bodies)b::bytea[]
    ) as r(append, fingerprint, status, body)
    join append on append.n = r.append
    where r.append in (select guarded.n from guarded)
    on conflict do nothing
)
select coalesce((select array_agg(guarded.n::int) from guarded), '{}')
"""
"""One statement, so one round trip, for any number of appends. Events, envelopes, snapshots
and records are written only for the appends the guard returns. An Idempotency-Key already
recorded is ``key_used`` for the guard to stop its append there, so a used key never fails the
statement (``on conflict do nothing`` on the record, like the snapshot's, is there only so that
a race the guard did not see cannot abort the appends written with it).
``unique(stream_id, version)`` on events backs every guard up."""


_encode = msgspec.json.Encoder().encode
_decode_metadata = msgspec.json.Decoder(EventMetadata).decode


def _stored(row: tuple[Any, ...]) -> StoredEvent:
    position, transaction_id, stream_id, version, type_, data, metadata, recorded_at = row
    return StoredEvent(
        global_position=position,
        transaction_id=transaction_id,
        stream_id=stream_id,
        version=version,
        type=type_,
        data=data,
        metadata=_decode_metadata(metadata),
        recorded_at=recorded_at,
    )


class EventStore:
    """Appends to and reads from the ``events`` table through a connection pool."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    @asynccontextmanager
    async def _connection(self, conn: AsyncConnection | None) -> AsyncIterator[AsyncConnection]:
        """The caller's connection, or a pooled one in autocommit for a single statement.

        Autocommit makes a lone statement its own transaction: one round trip instead of
        BEGIN, statement and COMMIT.
        """
        if conn is not None:
            yield conn
            return
        async with self._pool.connection() as pooled:
            previous = pooled.autocommit
            await pooled.set_autocommit(True)
            try:
                yield pooled
            finally:
                # A connection left mid-query is discarded by the pool; only an idle one is reused.
                if pooled.info.transaction_status == TransactionStatus.IDLE:
                    await pooled.set_autocommit(previous)

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        *,
        envelopes: Sequence[tuple[str, bytes]] = (),
        snapshots: Sequence[Snapshot] = (),
        conn: AsyncConnection | None = None,
    ) -> int:
        """Append ``events`` after ``expected_version`` (0: a new stream), with their
        ``envelopes`` and ``snapshots`` (``append_all``); return the new version.

        With ``conn`` the events join the caller's transaction, which the caller commits; on
        ``ConcurrencyError`` that transaction must be rolled back (and the decision retried in a
        new one). Besides a stale ``expected_version``, a conflict is raised when a concurrent
        append of the same version commits first, and when the transaction got its id before the
        stream's last writer did (it wrote elsewhere first), since ``read_all`` orders events by
        transaction id and a stream's versions must keep their order there.
        """
        if not events:
            raise ValueError("append needs at least one event")
        append = Append(
            stream_id,
            expected_version,
            [(event.type, event.data, _encode(event.metadata)) for event in events],
            envelopes,
            snapshots,
        )
        try:
            async with self._connection(conn) as active:
                if await append_all(active, [append]):
                    return expected_version + len(events)
                cursor = await active.execute(_STREAM_HEAD, (stream_id,))
                head = await cursor.fetchone()
        except errors.UniqueViolation as error:
            # A concurrent append to the same version committed first; the caller's transaction
            # is now aborted, so ask the pool.
            actual = await self.stream_version(stream_id)
            reason = error.diag.message_primary or ""
            raise ConcurrencyError(stream_id, expected_version, actual, reason) from None
        actual, newer = head or (0, False)
        reason = "stream was last appended to by a newer transaction" if newer else ""
        raise ConcurrencyError(stream_id, expected_version, actual, reason)

    async def read_stream(
        self,
        stream_id: str,
        *,
        after_version: int = 0,
        limit: int | None = None,
        conn: AsyncConnection | None = None,
    ) -> list[StoredEvent]:
        """The events of one stream with a version above ``after_version``, oldest first."""
        async with self._connection(conn) as active:
            cursor = active.cursor(binary=True)
            await cursor.execute(_READ_STREAM, (stream_id, after_version, limit))
            return [_stored(row) for row in await cursor.fetchall()]

    async def read_all(
        self, *, after: Checkpoint = LOG_START, limit: int = 1000
    ) -> list[StoredEvent]:
        """Events of every stream after checkpoint ``after``, ordered by ``Checkpoint``.

        Resume from the last event's ``checkpoint``: every event is then read exactly once, even
        though appends commit out of ``global_position`` order. Only events whose transaction id
        is below the snapshot's xmin are returned. A transaction gets its id when it first
        writes, ids rise over time, and xmin is the oldest id still running, so every
        transaction below it has ended and any transaction still to commit an event has an id
        at or above it: the events below xmin are a set that never changes again, and an event
        that becomes readable later sorts after every one returned so far. (A reader by
        position alone could skip one: a running transaction may hold a lower position than a
        committed one.)

        The order is not commit order but it keeps each stream's versions in order (see
        ``append``), and puts a transaction that started writing after another committed after
        it. The cost: events wait for every older transaction on the server that holds an id
        (appending or not), so one long-running transaction holds back all later events here
        until it ends.
        """
        async with self._connection(None) as conn:
            cursor = conn.cursor(binary=True)
            await cursor.execute(_READ_ALL, (after.transaction_id, after.global_position, limit))
            return [_stored(row) for row in await cursor.fetchall()]

    async def stream_version(self, stream_id: str, *, conn: AsyncConnection | None = None) -> int:
        """The version of the stream's last event, 0 when it has none."""
        async with self._connection(conn) as active:
            cursor = await active.execute(_STREAM_VERSION, (stream_id,))
            row = await cursor.fetchone()
        assert row is not None
        return row[0]
