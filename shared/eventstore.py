"""The event store: append-only streams of events in Postgres with optimistic concurrency.

Appends go through the ``append_events`` SQL function (migration 002). Appends to different
streams never wait for each other; two appends to the same stream at the same version collide on
the ``(stream_id, version)`` key and one of them fails with ``ConcurrencyError``.

Because appends run concurrently, events do not commit in ``global_position`` order, so a reader
of the whole log cannot resume from a position alone. Each event also records the id of the
transaction that wrote it, and ``read_all`` pages through the log by ``Checkpoint`` (transaction
id, then position), returning only events of transactions that can no longer change (see there).
A consumer records the checkpoint of the last event it handled (table ``tracking``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import msgspec
from psycopg import AsyncConnection, errors
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool

from shared.messages import EventMetadata

_COLUMNS = (
    "global_position, transaction_id::text::bigint, stream_id, version, type, data, metadata,"
    " recorded_at"
)

_APPEND = "SELECT append_events(%s, %s::int, %s::text[], %s::bytea[], %s::bytea[])"

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
        conn: AsyncConnection | None = None,
    ) -> int:
        """Append ``events`` after ``expected_version`` (0: a new stream); return the new version.

        With ``conn`` the events join the caller's transaction, which the caller commits; on
        ``ConcurrencyError`` that transaction must be rolled back (and the decision retried in a
        new one). Besides a stale ``expected_version``, a conflict is raised when a concurrent
        append of the same version commits first, and when the transaction got its id before the
        stream's last writer did (it wrote elsewhere first), since ``read_all`` orders events by
        transaction id and a stream's versions must keep their order there.
        """
        if not events:
            raise ValueError("append needs at least one event")
        params = (
            stream_id,
            expected_version,
            [event.type for event in events],
            [event.data for event in events],
            [_encode(event.metadata) for event in events],
        )
        try:
            async with self._connection(conn) as active:
                cursor = await active.execute(_APPEND, params)
                row = await cursor.fetchone()
        except (errors.UniqueViolation, errors.SerializationFailure) as error:
            # A concurrent append to the same version committed first (or, for SerializationFailure,
            # the stream's last writer is newer than this transaction); the caller's transaction
            # is now aborted, so ask the pool.
            actual = await self.stream_version(stream_id)
            reason = error.diag.message_primary or ""
            raise ConcurrencyError(stream_id, expected_version, actual, reason) from None
        assert row is not None
        (previous_version,) = row
        if previous_version != expected_version:
            raise ConcurrencyError(stream_id, expected_version, previous_version)
        return expected_version + len(events)

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
