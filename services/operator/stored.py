"""Stored matches read straight from Postgres, for the operator commands (verify, replay, export).

These commands fold events with the rules engines in-process, so they need neither the services
nor Redis running: only the database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from psycopg import AsyncConnection, IsolationLevel

from services.match.snapshot import match_stream
from shared.domain import commitments
from shared.domain.commitments import Commitment
from shared.infra.db import open_pool
from shared.infra.eventstore import EventStore, StoredEvent
from shared.infra.settings import Settings

_MATCHES = (
    "select match_id, game, version, state, to_move, status, result, players, options,"
    " commitments"
    " from matches where ({ids}) and (%(game)s::text is null or game = %(game)s)"
    " order by match_id"
)


class StoredMatch(msgspec.Struct, frozen=True):
    match_id: str
    game: str
    version: int
    state: bytes
    to_move: list[int]
    status: str
    result: dict[str, Any] | None
    players: list[str]
    options: dict[str, Any]
    commitments: dict[str, Commitment]


class UnreadableMatch(msgspec.Struct, frozen=True):
    """A ``matches`` row with a column that does not decode."""

    match_id: str
    reason: str


class Archive:
    """One database connection's worth of reads of matches and their events."""

    def __init__(self, conn: AsyncConnection, store: EventStore) -> None:
        self.conn = conn
        self.store = store

    async def matches(
        self, match_ids: list[str] | None = None, game: str | None = None
    ) -> list[StoredMatch]:
        """The matches named (``None``: all of them), of ``game`` if given, by id."""
        return [_stored_match(row) for row in await self._match_rows(match_ids, game)]

    async def every_match(self) -> list[StoredMatch | UnreadableMatch]:
        """Every match by id, a row that does not decode as what is wrong with it: one
        corrupt row must not hide the others from ``playtable verify``."""
        return [_readable_match(row) for row in await self._match_rows(None, None)]

    async def _match_rows(self, match_ids: list[str] | None, game: str | None) -> list[Any]:
        ids = "true" if match_ids is None else "match_id = any(%(ids)s)"
        found = await self.conn.execute(_MATCHES.format(ids=ids), {"ids": match_ids, "game": game})
        return await found.fetchall()

    async def events(self, match_id: str) -> list[StoredEvent]:
        return await self.store.read_stream(match_stream(match_id), conn=self.conn)

    async def snapshots(self, match_id: str) -> dict[int, bytes]:
        found = await self.conn.execute(
            "select version, state from match_snapshots where match_id = %s order by version",
            (match_id,),
        )
        return {version: bytes(state) for version, state in await found.fetchall()}


@asynccontextmanager
async def open_archive(settings: Settings) -> AsyncIterator[Archive]:
    """Every read in one snapshot (a read-only repeatable-read transaction): a match that
    moves while it is read shows its rows and its events as of one moment, so checking a live
    database reports no difference that is only the move in between."""
    pool = await open_pool(settings.database_url, min_size=1, max_size=1)
    try:
        async with pool.connection() as conn:
            await conn.set_autocommit(False)
            await conn.set_isolation_level(IsolationLevel.REPEATABLE_READ)
            await conn.set_read_only(True)
            async with conn.transaction():
                yield Archive(conn, EventStore(pool))
    finally:
        await pool.close()


def _stored_match(row: tuple[Any, ...]) -> StoredMatch:
    return StoredMatch(
        match_id=row[0],
        game=row[1],
        version=row[2],
        state=bytes(row[3]),
        to_move=list(row[4]),
        status=row[5],
        result=None if row[6] is None else msgspec.json.decode(row[6]),
        players=msgspec.json.decode(row[7]),
        options=msgspec.json.decode(row[8]),
        commitments=commitments.stored(row[9]),
    )


def _readable_match(row: tuple[Any, ...]) -> StoredMatch | UnreadableMatch:
    try:
        return _stored_match(row)
    except msgspec.DecodeError as error:
        return UnreadableMatch(row[0], str(error))
