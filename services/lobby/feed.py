"""A table's live feed: seats taken and left, the match started, without the table's secrets."""

from __future__ import annotations

from functools import partial

import msgspec

from services.lobby import schemas as s
from services.lobby.rows import public_event, table_stream
from services.lobby.tables import Tables
from shared.edge.feed import Feed, FeedBatch, FeedHub, FeedMessage, Reader, check_resume_point
from shared.edge.feed_tickets import FeedTickets
from shared.infra.eventstore import StoredEvent

FEED_PAGE = 100

_json = msgspec.json.Encoder()


class TableFeeds:
    """Follows tables for callers, who may see a table's feed where they may see the table.

    Everyone sees the same events (``public_event``): a table's feeds in this process share one
    channel, which reads each event once."""

    def __init__(self, tables: Tables, hub: FeedHub) -> None:
        self.tables = tables
        self.hub = hub
        self.tickets = FeedTickets(tables.runtime)

    async def check(self, table_id: str, token: str) -> None:
        """That the token may follow the table now (a problem otherwise): before a ticket."""
        async with self.tables.runtime.pool.connection() as conn:
            await self.tables.known_token(conn, table_id, token)

    async def follow(self, table_id: str, bearer_hash: str | None, after: int) -> Feed:
        """Check the table, the caller (by its token's hash) and the resume point now (they
        may still get a problem), then the feed."""
        async with self.tables.runtime.pool.connection() as conn:
            table = await self.tables.seen_by_hash(conn, table_id, bearer_hash, secret_options={})
        check_resume_point(after, table.version)
        stream = table_stream(table_id)
        return partial(self.hub.follow, stream, after, self._reader(stream))

    def _reader(self, stream: str) -> Reader:
        async def read(after: int) -> FeedBatch:
            stored = await self.tables.runtime.store.read_stream(
                stream, after_version=after, limit=FEED_PAGE
            )
            return FeedBatch([_message(event) for event in stored])

        return read


def _message(event: StoredEvent) -> FeedMessage:
    item = s.TableFeedEvent(
        version=event.version,
        type=event.type,
        data=msgspec.Raw(public_event(event)),
        seat=event.metadata.actor.seat,
        recorded_at=event.recorded_at.isoformat(),
    )
    return FeedMessage(event.version, event.type, _json.encode(item))
