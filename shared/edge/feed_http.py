"""Live feeds over HTTP: the routes' parameters and declarations, opening a feed (its slot, its
ticket, its resume point) and streaming it after Litestar has returned."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any, cast

from litestar import Request
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import HeaderParameter, QueryParameter
from litestar.response import Stream
from litestar.response.base import ASGIResponse

from shared.edge.app import STREAM_AFTER_LITESTAR
from shared.edge.contract import OPTIONAL_SEAT_TOKEN, problem_responses
from shared.edge.errors import Problem, invalid_request
from shared.edge.feed import Feed
from shared.edge.feed_slots import FeedSlot, take_feed_slot
from shared.edge.feed_tickets import TICKET_TTL_S, FeedTicket, FeedTickets
from shared.edge.guard import PG_INT_MAX
from shared.edge.tokens import bearer_token, hash_token, required_bearer_token
from shared.infra.collector import MemoryReturn

FEEDS_CLOSED = MemoryReturn(after=1000, quiet_s=1.0)
"""Once 1,000 feeds have closed in this process, and no more for a second (they close in
bursts: a client's restart), the memory they used is given back to the system."""

LastEventId = Annotated[
    str | None,
    HeaderParameter(
        name="Last-Event-ID",
        required=False,
        # documented as the integer it must be, but read as text, so that anything else
        # gets ``bad-last-event-id``
        schema_extra={"one_of": [Schema(type=OpenAPIType.INTEGER, minimum=0, maximum=PG_INT_MAX)]},
        description="Resume after this version (the `id` of the last event received); "
        "browsers send it by themselves when they reconnect. Wins over `after`",
    ),
]
FeedAfter = Annotated[
    int | None,
    QueryParameter(
        ge=0,
        le=PG_INT_MAX,
        required=False,
        description="Resume after this version",
        schema_extra={"minimum": 0},  # Litestar drops a bound of 0 on an optional integer
    ),
]
FeedTicketQuery = Annotated[
    str | None,
    QueryParameter(
        required=False,
        max_length=100,
        description="A feed ticket, for clients that cannot send an Authorization header"
        " (browsers' EventSource): got for the token just before, good for one connection"
        " (a used or expired one gets 401 `feed-ticket-refused`); the header wins when both"
        " are given",
    ),
]


FEED_ROUTE: dict[str, Any] = {
    "security": OPTIONAL_SEAT_TOKEN,
    "media_type": "text/event-stream",
    "response_description": "Server-Sent Events, as they happen",
    "responses": problem_responses(400, 401, 403, 404, 409, 503),
}
"""What every live feed route declares besides its path, operation id and texts."""

FEED_TICKET_ROUTE: dict[str, Any] = {
    "security": [{"seatToken": []}, {"invitationToken": []}],
    "status_code": 201,
    "description": (
        "For a browser, whose EventSource cannot send the token as a header: the feed is then"
        " opened with `?ticket=`, so no long-lived secret is in a URL (which proxies log)."
        f" A ticket is good for one connection within {TICKET_TTL_S} s: get a new one for each"
        " (re)connection, and resume with `after` (the `id` of the last event received)."
        " Clients that can send headers open the feed with the token instead."
    ),
    "responses": problem_responses(401, 403, 404, 503),
}
"""What every feed's ticket route declares besides its path, operation id and summary."""

Follow = Callable[[str | None, int], Awaitable[Feed]]
"""Opens a feed for the hash of a caller's token (None: no token) after a version (checks
first, so errors are problems)."""


class LiveFeed(Stream):
    """Server-Sent Events whose messages come encoded already (once per viewer, not once per
    follower), sent while the caller holds a feed slot.

    Litestar streams a response from a task group with a second task listening for the client
    leaving, deep in its middleware's frames; with thousands of feeds that cost more than the
    events. A live feed sends its status and headers through Litestar, then leaves the rest to
    ``ServiceApp``, which runs it once Litestar has returned (the channel then sends to the feed
    with the server's own ``send``); one small listener cancels it when the client leaves.
    """

    def __init__(self, feed: Feed, slot: FeedSlot) -> None:
        # headers as Litestar's ``ServerSentEvent``, whose iterators hold themselves in cycles
        # (each feed's memory then waited for a full collection once it closed)
        super().__init__(
            (),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        self.feed = feed
        self.slot = slot

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> ASGIResponse:
        head = super().to_asgi_response(*args, **kwargs)
        return cast(ASGIResponse, _LiveFeedBody(head, self.feed, self.slot))


class _LiveFeedBody:
    """The ASGI answer of a ``LiveFeed``: Litestar's status line and headers, then the events
    until they end or the client leaves; the feed slot is freed either way."""

    def __init__(self, head: ASGIResponse, feed: Feed, slot: FeedSlot) -> None:
        self.head: ASGIResponse | None = head
        self.feed = feed
        self.slot = slot

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert self.head is not None, "an answer is sent once"
        try:
            await self.head.start_response(send)
        except BaseException:
            await self.slot.release()
            raise
        self.head = None  # not kept for as long as the feed lasts
        if STREAM_AFTER_LITESTAR in scope:
            scope[STREAM_AFTER_LITESTAR] = self.send_events
        else:  # not under a ServiceApp: from here
            await self.send_events(receive, send)

    async def send_events(self, receive: Any, send: Any) -> None:
        try:
            await _send_until_gone(self.feed, receive, send)
        finally:
            await self.slot.release()
            FEEDS_CLOSED.count()


async def _send_until_gone(feed: Feed, receive: Any, send: Any) -> None:
    """Send the feed, then the end of the body; a client that leaves ends it early (its
    ``http.disconnect`` cancels the sending, which is then no error)."""

    def send_chunk(chunk: bytes) -> Coroutine[Any, Any, None]:
        return send({"type": "http.response.body", "body": chunk, "more_body": True})

    sender = asyncio.current_task()
    assert sender is not None
    sending = True

    def client_left(listener: asyncio.Future[None]) -> None:
        if sending and not listener.cancelled():
            sender.cancel()

    listener = asyncio.ensure_future(_disconnect(receive))
    listener.add_done_callback(client_left)
    try:
        await feed(send_chunk)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except asyncio.CancelledError:
        if not listener.done() or listener.cancelled() or sender.uncancel():
            raise  # cancelled by someone else (a shutdown), not by the client leaving
    finally:
        sending = False
        listener.cancel()


async def _disconnect(receive: Any) -> None:
    """Until the client has left (or the answer is complete: a HEAD's)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def open_feed(
    follow: Follow,
    request: Request[Any, Any, Any],
    last_event_id: str | None,
    after: int | None,
    ticket: str | None,
    tickets: FeedTickets,
) -> LiveFeed:
    """The feed from the caller's resume point, as the caller's token (or the one its ticket
    stands for) may see it, holding one of the client's live-feed slots while it lasts (taken
    first: 429 before any work, a ticket kept for after the wait)."""
    resume = resume_point(last_event_id, after)
    if "token" in request.query_params or "invitation" in request.query_params:
        raise invalid_request(
            "a token does not go in a feed's URL, which logs keep: send it as"
            " 'Authorization: Bearer <token>', or open the feed with a ticket got for it"
            " (POST the feed's path + '-tickets')"
        )
    token = bearer_token(request)
    slot = await take_feed_slot(request)
    try:
        if token is not None:
            bearer_hash: str | None = hash_token(token)
        elif ticket is not None:
            bearer_hash = await tickets.redeem(request.url.path, ticket)
        else:
            bearer_hash = None
        feed = await follow(bearer_hash, resume)
    except BaseException:
        await slot.release()
        raise
    return LiveFeed(feed, slot)


async def give_ticket(
    request: Request[Any, Any, Any],
    tickets: FeedTickets,
    check: Callable[[str], Awaitable[object]],
) -> FeedTicket:
    """A ticket to the feed whose path the request's is, with ``-tickets`` dropped, for the
    bearer's token once ``check`` found it may follow that feed (a problem otherwise)."""
    token = required_bearer_token(request)
    await check(token)
    return await tickets.give(request.url.path.removesuffix("-tickets"), hash_token(token))


def resume_point(last_event_id: str | None, after: int | None) -> int:
    """The version to resume after: ``Last-Event-ID``, else ``?after=``, else the start.

    The header wins because a reconnecting EventSource repeats the first URL (with its
    ``after``) and adds the header with the newer version.
    """
    if last_event_id is None:  # an empty one is no version either: refused below
        return after or 0
    if not re.fullmatch(r"[0-9]{1,18}", last_event_id.strip()):
        raise Problem(
            400,
            "bad-last-event-id",
            "Bad Last-Event-ID",
            "Last-Event-ID must be the id (a version, a whole number) of the last event received",
        )
    return int(last_event_id)
