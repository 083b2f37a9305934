"""Feed tickets: what a browser opens a live feed with instead of its seat token or invitation.

A browser's EventSource sends no headers, so whatever admits it to a feed travels in the URL,
and URLs end up in logs (nginx's error log keeps the request line of a feed reopened while its
service restarts). A ticket is exchanged for the token (sent as a header) just before each
connection: random, good for ``TICKET_TTL_S`` and for one connection to the feed it names. Redis
holds it, by its hash only, with the feed's path and the hash of the token it stands for (so
the feed sees what that token may see, and stops admitting it once the token is replaced), never
the token; every copy of a service redeems the tickets any copy gave. A ticket lost with Redis
is refused like a used one: the client asks for a new one.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

import msgspec

from shared.edge.contract import Timestamp
from shared.edge.errors import Problem
from shared.edge.runtime import Runtime
from shared.infra.streams import feed_ticket_key

TICKET_TTL_S = 60
"""How long a ticket waits for its connection: a browser opens the feed at once."""
TICKET_PREFIX = "ft_"
"""Marks a feed ticket wherever it shows up (a log, a secret scanner)."""


class FeedTicket(msgspec.Struct, frozen=True):
    """A single-use ticket to open one feed (`?ticket=`), for a browser's EventSource."""

    ticket: str
    expires_at: Timestamp
    """When it is refused if not used by then (RFC 3339): ask for one per connection."""


class _Held(msgspec.Struct, frozen=True):
    feed: str
    bearer_hash: str


_held = msgspec.json.Decoder(_Held)
_json = msgspec.json.Encoder()


def ticket_refused() -> Problem:
    return Problem(
        401,
        "feed-ticket-refused",
        "Feed ticket refused",
        "this ticket was used already, has expired or is for another feed: get a new one"
        " (POST the feed's path + '-tickets' with the token) for each connection",
    )


class FeedTickets:
    """Gives and redeems the tickets of one service's feeds, in the deployment's Redis."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def _key(self, ticket: str) -> str:
        digest = hashlib.sha256(ticket.encode()).hexdigest()
        return self.runtime.settings.stream(feed_ticket_key(digest))

    async def give(self, feed: str, bearer_hash: str) -> FeedTicket:
        """A ticket to ``feed`` (its path) for the holder of the token hashed ``bearer_hash``,
        whom the caller has just checked may follow it."""
        ticket = TICKET_PREFIX + secrets.token_urlsafe(24)
        held = _json.encode(_Held(feed=feed, bearer_hash=bearer_hash))
        await self.runtime.redis.set(self._key(ticket), held, ex=TICKET_TTL_S)
        expires_at = datetime.now(UTC) + timedelta(seconds=TICKET_TTL_S)
        return FeedTicket(ticket=ticket, expires_at=expires_at.isoformat(timespec="seconds"))

    async def redeem(self, feed: str, ticket: str) -> str:
        """The hash of the token a ticket to ``feed`` stands for; the ticket is used up at
        once (GETDEL: two connections never share one), whatever the feed then answers."""
        held = await self.runtime.redis.getdel(self._key(ticket))
        if held is None:
            raise ticket_refused()
        found = _held.decode(held)
        if found.feed != feed:
            raise ticket_refused()
        return found.bearer_hash
