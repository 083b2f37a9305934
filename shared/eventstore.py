"""The event store: append-only streams of events in Postgres with optimistic concurrency.

Appends go through the ``append_events`` SQL function (migration 001), which serialises them with
a transaction-scoped advisory lock, so events commit in the order of their ``global_position``.
That makes ``read_all`` a stable prefix at any moment: a consumer that records the last position
it handled (table ``tracking``) never skips an event that commits later with a lower position.
The lock is held until the appending transaction ends, so callers that append inside their own
transaction should commit promptly.
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

_COLUMNS = "global_position, stream_id, version, type, data, metadata, recorded_at"

_APPEND = "SELECT append_events(%s, %s::int, %s::text[], %s::bytea[], %s::bytea[])"

_READ_STREAM = f"""
SELECT {_COLUMNS} FROM events
WHERE stream_id = %s AND version > %s::int
ORDER BY version
LIMIT %s::bigint
"""

_READ_ALL = f"""
SELECT {_COLUMNS} FROM events
WHERE global_position > %s::bigint
ORDER BY global_position
LIMIT %s::bigint
"""

_STREAM_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = %s"


class NewEvent(msgspec.Struct, frozen=True):
    """An event to append: its type name, its msgspec JSON and where it came from."""

    type: str
    data: bytes
    metadata: EventMetadata


class StoredEvent(msgspec.Struct, frozen=True):
    """An event as recorded, with its place in its stream and in the whole log."""

    global_position: int
    stream_id: str
    version: int
    type: str
    data: bytes
    metadata: EventMetadata
    recorded_at: datetime


class ConcurrencyError(Exception):
    """The stream moved on since the caller read it: reload and decide again."""

    def __init__(self, stream_id: str, expected_version: int, actual_version: int) -> None:
        super().__init__(
            f"stream {stream_id!r} is at version {actual_version}, expected {expected_version}"
        )
        self.stream_id = stream_id
        self.expected_version = expected_version
        self.actual_version = actual_version


_encode = msgspec.json.Encoder().encode
_decode_metadata = msgspec.json.Decoder(EventMetadata).decode


def _stored(row: tuple[Any, ...]) -> StoredEvent:
    position, stream_id, version, type_, data, metadata, recorded_at = row
    return StoredEvent(
        global_position=position,
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
        ``ConcurrencyError`` that transaction must be rolled back.
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
        except errors.UniqueViolation:
            # Reached only when the transaction's snapshot predates a concurrent append (a
            # REPEATABLE READ caller); that transaction is now aborted, so ask the pool.
            actual = await self.stream_version(stream_id)
            raise ConcurrencyError(stream_id, expected_version, actual) from None
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

    async def read_all(self, *, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """Events of every stream after ``after_position``, in global (commit) order."""
        async with self._connection(None) as conn:
            cursor = conn.cursor(binary=True)
            await cursor.execute(_READ_ALL, (after_position, limit))
            return [_stored(row) for row in await cursor.fetchall()]

    async def stream_version(self, stream_id: str, *, conn: AsyncConnection | None = None) -> int:
        """The version of the stream's last event, 0 when it has none."""
        async with self._connection(conn) as active:
            cursor = await active.execute(_STREAM_VERSION, (stream_id,))
            row = await cursor.fetchone()
        assert row is not None
        return row[0]
