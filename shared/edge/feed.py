"""Live feeds: one event stream as Server-Sent Events, resumable, as each caller may see it.

Postgres is the source of every event a feed sends; Redis only says when to look. One task per
process tails the published topic (every process reads all of it: no consumer group) and wakes
the local channels of the stream each envelope names. A channel is one viewer's view of a stream
in this process (a seat's, or the spectator's): woken, it reads the stream after the version it
last read, once for all that viewer's followers (one database read, one redaction), and keeps
the newest events, encoded once, in a short tail that each follower sends from. So events go
out in version order, none twice and none missed, whatever Redis did: a lost message, or a wiped
Redis, only delays them until the channel looks again by itself, every ``RECHECK_S`` (its
followers then send a comment, which also keeps proxies from closing an idle connection). A
follower that has caught up is sent to by its channel itself, in one pass over all of them, with
no task woken per follower; one whose client stops reading is left to its own task, which
finishes that send, then catches up again. A follower further back than the tail (resuming from
long ago, or left behind) reads its own backlog the same way first, then sends from the tail.

The SSE ``id`` of each event is its version in the stream, so a client that dropped resumes with
``Last-Event-ID`` (which browsers' EventSource sends by itself when it reconnects).

A caller is known by its token's hash: the bearer token's, or the one a feed ticket stands for
(``shared.edge.feed_tickets``: a browser's EventSource sends no header, and no token goes in a URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Iterable, Iterator
from typing import Annotated, Any, NamedTuple, cast

import msgspec
import psycopg
from litestar import Request
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import HeaderParameter, QueryParameter
from litestar.response import Stream
from litestar.response.base import ASGIResponse
from litestar.response.sse import ServerSentEventMessage

from shared.edge.app import STREAM_AFTER_LITESTAR
from shared.edge.contract import OPTIONAL_SEAT_TOKEN, problem_responses
from shared.edge.errors import Problem, invalid_request
from shared.edge.feed_slots import FeedSlot, take_feed_slot
from shared.edge.feed_tickets import TICKET_TTL_S, FeedTicket, FeedTickets
from shared.edge.guard import PG_INT_MAX
from shared.edge.runtime import Runtime
from shared.edge.tokens import bearer_token, hash_token, required_bearer_token
from shared.infra.bus import PAYLOAD_FIELD, TRANSIENT_ERRORS, OutageLog
from shared.infra.collector import MemoryReturn
from shared.infra.metrics import OPEN_FEEDS

log = logging.getLogger(__name__)

RETRY_MS = 2000
"""How long a client waits before reconnecting (sent once, as ``retry``)."""
RECHECK_S = 15.0
"""A follower reads its stream at least this often, woken or not, and sends a keep-alive."""
TAIL_BLOCK_MS = 2000
"""Below the Redis client's socket timeout (5 s), which a longer blocking read would hit."""
TAIL_EVENTS = 256
"""Events a channel keeps encoded for its followers (up to twice as many, trimmed at once)."""

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


class FeedMessage(msgspec.Struct, frozen=True):
    """One event to send: its SSE ``id`` (its version), ``event`` (its type) and JSON data."""

    id: int
    type: str
    data: bytes

    def encoded(self) -> bytes:
        return ServerSentEventMessage(id=self.id, event=self.type, data=self.data.decode()).encode()


class FeedBatch(msgspec.Struct, frozen=True):
    """What a reader read: the next events (versions following each other), and the message
    that ends the feed after them, if the stream has ended."""

    messages: list[FeedMessage]
    end: FeedMessage | None = None


Reader = Callable[[int], Awaitable[FeedBatch]]
"""Reads the next events after a version, as one viewer may see them."""

Viewer = Hashable
"""Whom a stream's events are redacted for (a seat, None for the spectator): followers of the
same viewer are sent the same bytes."""

RETRY = ServerSentEventMessage(data=None, retry=RETRY_MS).encode()
KEEP_ALIVE = ServerSentEventMessage(data=None, comment="keep-alive").encode()


def _encoded(messages: list[FeedMessage]) -> bytes:
    return b"".join(message.encoded() for message in messages)


class _Announcement(msgspec.Struct):
    stream_id: str


_announcement = msgspec.json.Decoder(_Announcement)


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

SendChunk = Callable[[bytes], Coroutine[Any, Any, None]]
"""Sends the next chunk of a feed's body to its client."""

Feed = Callable[[SendChunk], Awaitable[None]]
"""Sends a feed's events through ``SendChunk`` until the stream ends (or the feed is cancelled:
its client left)."""

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


def check_resume_point(after: int, version: int) -> None:
    """A resume point beyond the stream's end would silently skip the events up to it: a
    conflict with the stream's state (a number is a fine resume point of a longer stream)."""
    if after > version:
        raise Problem(
            409,
            "bad-resume-point",
            "Resume point beyond the stream",
            f"the stream is at version {version}, not {after}",
        )


class Follower:
    """One feed of a channel: the version sent up to, and how to send it more."""

    __slots__ = ("after", "broken", "released", "send", "stalled")

    def __init__(self, send: SendChunk, after: int) -> None:
        self.send = send
        self.after = after
        self.released: asyncio.Future[None] | None = None
        """While the channel sends to it: done when its own task must act again."""
        self.stalled: Stalled | None = None
        """A send the channel started that had to wait for the client: its task finishes it."""
        self.broken: Exception | None = None
        """What a send the channel started raised: the feed ends with it."""


class Stalled(NamedTuple):
    """A send stopped at what it awaits (the client reading what was written before)."""

    send: Coroutine[Any, Any, None]
    awaiting: Any


def send_at_once(send: Coroutine[Any, Any, None]) -> Stalled | None:
    """Run a send as far as it goes without waiting: all the way while the client keeps up
    (the server's send writes and returns); else where it stopped, for ``finish``."""
    try:
        awaiting = send.send(None)
    except StopIteration:
        return None
    return Stalled(send, _taken(awaiting))


def _taken(awaiting: Any) -> Any:
    """What a send yielded, taken as a task takes it: a future is then awaited anew (it says
    it is already being awaited until taken)."""
    if getattr(awaiting, "_asyncio_future_blocking", False):
        awaiting._asyncio_future_blocking = False
    return awaiting


async def finish(stalled: Stalled) -> None:
    """Run a stalled send to its end, as the task awaiting it would have."""
    send, awaiting = stalled
    while True:
        try:
            if awaiting is None:  # a bare yield: one turn of the loop
                await asyncio.sleep(0)
            else:
                await awaiting
        except BaseException as error:  # cancelled included: the send hears of it
            try:
                awaiting = _taken(send.throw(error))
            except StopIteration:
                return
            continue
        try:
            awaiting = _taken(send.send(None))
        except StopIteration:
            return


class Channel:
    """One viewer's events of one stream in this process: read once for all its followers,
    and sent by the channel itself to those that have caught up (``live``).

    The tail holds the encoded events after version ``floor``, one per version (a stream's
    versions follow each other); ``end`` is the message ending the stream, once read.
    """

    def __init__(self, stream_id: str, viewer: Viewer, read: Reader, after: int) -> None:
        self.stream_id = stream_id
        self.viewer = viewer
        self.read = read
        self.floor = after
        self.tail: list[bytes] = []
        self.end: bytes | None = None
        self.failed = False
        self.followers = 0
        self.live: dict[Follower, None] = {}  # in the order they joined
        self.woken = asyncio.Event()
        self._joined: dict[int, bytes] = {}
        self.task: asyncio.Task[None] | None = None

    @property
    def version(self) -> int:
        """The last version read."""
        return self.floor + len(self.tail)

    def since(self, after: int) -> bytes:
        """The events after ``after`` (not below ``floor``) as one chunk, joined once for all
        the followers at that version."""
        chunk = self._joined.get(after)
        if chunk is None:
            chunk = self._joined[after] = b"".join(self.tail[after - self.floor :])
        return chunk

    async def carry(self, follower: Follower) -> None:
        """Send to a follower that has caught up as events come, from the channel's task,
        until the follower must act itself: its client stopped reading, it fell behind the
        tail, or the stream ended or failed."""
        if self.end is not None or self.failed:
            return
        follower.released = asyncio.get_running_loop().create_future()
        self.live[follower] = None
        try:
            await follower.released
        finally:
            self.live.pop(follower, None)
            follower.released = None

    async def run(self) -> None:
        """Read the stream when woken, and every ``RECHECK_S`` by itself, until it ends or a
        read fails (the followers then end too: their clients reconnect and resume)."""
        told_at = time.monotonic()
        while self.end is None:
            self.woken.clear()  # before reading: a wake-up during the read is kept
            try:
                batch = await self.read(self.version)
            except Exception as error:  # any: its followers must hear of it
                log.warning("feed of %s stopped: %r", self.stream_id, error)
                self.failed = True
                self._release_all()
                return
            self._keep(batch)
            if batch.end is not None:
                self._release_all()
                return
            if batch.messages:
                self._send_events()
                self._trim()
                told_at = time.monotonic()
                continue  # there may be more: read on before waiting
            if time.monotonic() - told_at >= RECHECK_S:
                self._send_keep_alive()
                told_at = time.monotonic()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RECHECK_S):
                    await self.woken.wait()

    def _keep(self, batch: FeedBatch) -> None:
        for message in batch.messages:
            if message.id != self.version + 1:  # never expected: restart the tail there
                self.floor, self.tail = message.id - 1, []
            self.tail.append(message.encoded())
        if batch.end is not None:
            self.end = batch.end.encoded()
        self._joined.clear()

    def _trim(self) -> None:
        """Keep the newest ``TAIL_EVENTS`` once the tail holds twice as many (after sending
        to the live followers, which never need what is dropped)."""
        if len(self.tail) > 2 * TAIL_EVENTS:
            dropped = len(self.tail) - TAIL_EVENTS
            del self.tail[:dropped]
            self.floor += dropped
            self._joined.clear()

    def _send_events(self) -> None:
        """Send each live follower what it has not had: one pass, no task woken for it."""
        version = self.version
        for follower in list(self.live):
            if follower.after >= version:  # it resumed from further on: not there yet
                continue
            if follower.after < self.floor:  # the tail moved past it: it reads its own
                self._release(follower)
                continue
            chunk = self.since(follower.after)
            follower.after = version
            self._send(follower, chunk)

    def _send_keep_alive(self) -> None:
        for follower in list(self.live):
            self._send(follower, KEEP_ALIVE)

    def _send(self, follower: Follower, chunk: bytes) -> None:
        try:
            stalled = send_at_once(follower.send(chunk))
        except Exception as error:  # that feed's connection failed: it ends, the others go on
            follower.broken = error
            self._release(follower)
            return
        if stalled is not None:  # its client is not reading: not to hold up the others
            follower.stalled = stalled
            self._release(follower)

    def _release(self, follower: Follower) -> None:
        del self.live[follower]
        if follower.released is not None and not follower.released.done():
            follower.released.set_result(None)

    def _release_all(self) -> None:
        for follower in list(self.live):
            self._release(follower)


class FeedHub:
    """Tails one published topic and wakes this process's channels of each stream in it."""

    def __init__(self, runtime: Runtime, topic: str) -> None:
        self.runtime = runtime
        self.topic = topic
        self._channels: dict[str, dict[Viewer, Channel]] = {}

    def start(self) -> None:
        """Run the tail for as long as the runtime (after ``runtime.start``)."""
        self.runtime.spawn(f"feed:{self.topic}", self._tail())

    async def follow(
        self, stream_id: str, after: int, read: Reader, send: SendChunk, viewer: Viewer = None
    ) -> None:
        """Send the stream's events after version ``after`` as ``read`` shows them to
        ``viewer``, as they come, until it ends: from the viewer's channel (which sends to the
        follower itself once it has caught up), or from ``read`` while behind its tail.

        A failed read (a database or rules outage) ends the feed: the client reconnects after
        ``RETRY_MS`` and resumes from its last event.
        """
        follower = Follower(send, after)
        OPEN_FEEDS.inc()
        try:
            await send(RETRY)
            with self._joining(stream_id, viewer, read, after) as channel:
                try:
                    await self._send_until_end(channel, follower, read)
                finally:
                    if follower.stalled is not None:  # cancelled before finishing it
                        follower.stalled.send.close()
        finally:
            OPEN_FEEDS.dec()

    async def _send_until_end(self, channel: Channel, follower: Follower, read: Reader) -> None:
        while True:
            if follower.broken is not None:
                raise follower.broken
            if follower.stalled is not None:
                stalled, follower.stalled = follower.stalled, None
                await finish(stalled)
            elif follower.after < channel.floor:
                try:
                    batch = await read(follower.after)
                except (Problem, psycopg.Error) as error:
                    log.warning("feed of %s stopped: %r", channel.stream_id, error)
                    return
                if batch.messages:
                    follower.after = batch.messages[-1].id
                    await follower.send(_encoded(batch.messages))
                if batch.end is not None:
                    await follower.send(batch.end.encoded())
                    return
                if not batch.messages:  # the channel is not further yet: wait with it
                    await channel.carry(follower)
            elif follower.after < channel.version:
                chunk, follower.after = channel.since(follower.after), channel.version
                await follower.send(chunk)
            elif channel.end is not None:
                await follower.send(channel.end)
                return
            elif channel.failed:
                return
            else:
                await channel.carry(follower)

    @contextlib.contextmanager
    def _joining(
        self, stream_id: str, viewer: Viewer, read: Reader, after: int
    ) -> Iterator[Channel]:
        """The viewer's channel of the stream (opened for the first follower, from its
        ``after``), for as long as the follower lasts; the last to leave closes it."""
        channels = self._channels.setdefault(stream_id, {})
        channel = channels.get(viewer)
        if channel is None:
            channel = channels[viewer] = Channel(stream_id, viewer, read, after)
            channel.task = asyncio.create_task(self._run(channel))
        channel.followers += 1
        try:
            yield channel
        finally:
            channel.followers -= 1
            if not channel.followers:
                self._close(channel)

    async def _run(self, channel: Channel) -> None:
        await channel.run()
        if channel.failed:  # the next follower opens a new one
            self._forget(channel)

    def _close(self, channel: Channel) -> None:
        self._forget(channel)
        if channel.task is not None:
            channel.task.cancel()

    def _forget(self, channel: Channel) -> None:
        channels = self._channels.get(channel.stream_id, {})
        if channels.get(channel.viewer) is channel:
            del channels[channel.viewer]
            if not channels:
                del self._channels[channel.stream_id]

    def _wake(self, stream_ids: Iterable[str]) -> None:
        for stream_id in stream_ids:
            for channel in self._channels.get(stream_id, {}).values():
                channel.woken.set()

    async def _tail(self) -> None:
        """Read the topic from its newest entry on; after an outage, wake every follower,
        since the announcements published meanwhile may be gone."""
        bus = self.runtime.bus
        stop = self.runtime.stop
        position: str | None = None
        outage = OutageLog(log, f"feed tail of {self.topic}")
        backoff = 0.1
        while not stop.is_set():
            try:
                if position is None:
                    position = await bus.newest_id(self.topic)
                    self._wake(list(self._channels))
                entries = await bus.read(self.topic, position, block_ms=TAIL_BLOCK_MS)
                outage.succeeded()
                backoff = 0.1
            except TRANSIENT_ERRORS as error:
                outage.failed(error)
                position = None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            if entries:
                position = entries[-1][0]
                if self._channels:
                    self._wake({_stream_of(fields) for _, fields in entries})


def _stream_of(fields: dict[bytes, bytes] | None) -> str:
    """The stream an envelope announces ("" for an entry that is not one)."""
    try:
        return _announcement.decode((fields or {}).get(PAYLOAD_FIELD, b"")).stream_id
    except msgspec.DecodeError:
        return ""
