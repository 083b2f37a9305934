"""A match's live feed: its events as the caller's seat may see them, then its result."""

from __future__ import annotations

from functools import partial

import msgspec

from services.match import schemas as s
from services.match.matches import Matches
from services.match.snapshot import match_stream
from shared.domain.messages import MATCH_FINISHED
from shared.edge.feed import Feed, FeedBatch, FeedHub, FeedMessage, Reader, check_resume_point
from shared.edge.feed_tickets import FeedTickets

FEED_PAGE = 100
"""Events read (and redacted in one rules request) at a time."""

_json = msgspec.json.Encoder()


class MatchFeeds:
    """Follows matches for callers: the events come from ``Matches.events``, redacted there,
    once per seat (and once for the spectators) for all their feeds in this process."""

    def __init__(self, matches: Matches, hub: FeedHub) -> None:
        self.matches = matches
        self.hub = hub
        self.tickets = FeedTickets(matches.runtime)

    async def check(self, match_id: str, token: str) -> None:
        """That the token may follow the match now (a problem otherwise): before a ticket."""
        (await self.matches.load(match_id, fresh=True)).seat_of(token)

    async def follow(self, match_id: str, bearer_hash: str | None, after: int) -> Feed:
        """Check the match, the caller (by its token's hash) and the resume point now, while
        they can still be answered with a problem; then the feed.

        The cached match answers for the caller (seats and invitation never change) and for a
        resume point it has reached (versions only grow): thousands of feeds opening at once
        then cost no database read each.
        """
        snapshot = await self.matches.load(match_id)
        seat = snapshot.seat_of_hash(bearer_hash)
        if after > snapshot.version:
            snapshot = await self.matches.load(match_id, fresh=True)
            check_resume_point(after, snapshot.version)
        reader = self._reader(match_id, bearer_hash)
        return partial(self.hub.follow, match_stream(match_id), after, reader, viewer=seat)

    def _reader(self, match_id: str, bearer_hash: str | None) -> Reader:
        async def read(after: int) -> FeedBatch:
            """The next page of events; once there are none and the match is over, its end.

            The row's version and status commit with the events, so a finished match at
            ``after`` has nothing more to send.
            """
            snapshot = await self.matches.load(match_id, fresh=True)
            if snapshot.version > after:
                page = await self.matches.events_seen(match_id, bearer_hash, after, FEED_PAGE)
                return FeedBatch([_message(item) for item in page.items])
            if snapshot.status == "finished" and snapshot.result is not None:
                finished = s.MatchFinished(
                    match_id=match_id, version=snapshot.version, result=snapshot.result
                )
                return FeedBatch(
                    [], end=FeedMessage(snapshot.version, MATCH_FINISHED, _json.encode(finished))
                )
            return FeedBatch([])

        return read


def _message(item: s.MatchEvent) -> FeedMessage:
    return FeedMessage(item.version, item.type, _json.encode(item))
