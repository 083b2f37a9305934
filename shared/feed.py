"""Live feeds: one event stream as Server-Sent Events, resumable, as each caller may see it.

Postgres is the source of every event a feed sends; Redis only says when to look. One task per
process tails the published topic (every process reads all of it: no consumer group) and wakes
the local followers of the stream each envelope names. A follower then reads its stream after the
version it last sent, so events go out in version order, none twice and none missed, whatever
Redis did: a lost message, or a wiped Redis, only delays them until the follower looks again by
itself, every ``RECHECK_S`` (it then sends a comment, which also keeps proxies from closing an
idle connection).

The SSE ``id`` of each event is its version in the stream, so a client that dropped resumes with
``Last-Event-ID`` (which browsers' EventSource sends by itself when it reconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Annotated, Any

import msgspec
import psycopg
from litestar import Request
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import HeaderParameter, QueryParameter
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from shared.bus import PAYLOAD_FIELD, TRANSIENT_ERRORS, OutageLog
from shared.http import (
    OPTIONAL_SEAT_TOKEN,
    PG_INT_MAX,
    Problem,
    bearer_token,
    problem_responses,
)
from shared.ratelimit import with_feed_lease
from shared.runtime import Runtime

log = logging.getLogger(__name__)

RETRY_MS = 2000
"""How long a client waits before reconnecting (sent once, as ``retry``)."""
RECHECK_S = 15.0
"""A follower reads its stream at least this often, woken or not, and sends a keep-alive."""
TAIL_BLOCK_MS = 2000
"""Below the Redis client's socket timeout (5 s), which a longer blocking read would hit."""

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
FeedToken = Annotated[
    str | None,
    QueryParameter(
        required=False,
        description="The seat token, for clients that cannot send an Authorization header "
        "(browsers' EventSource); the header wins when both are given",
    ),
]


class FeedMessage(msgspec.Struct, frozen=True):
    """One event to send: its SSE ``id`` (its version), ``event`` (its type) and JSON data."""

    id: int
    type: str
    data: bytes


class FeedBatch(msgspec.Struct, frozen=True):
    """What a follower read: the next events, and whether the feed ends after them."""

    messages: list[FeedMessage]
    last: bool = False


Reader = Callable[[int], Awaitable[FeedBatch]]
"""Reads the next events after a version, as the follower may see them."""


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

Follow = Callable[[str | None, int], Awaitable[AsyncIterator[ServerSentEventMessage]]]
"""Opens a feed for a caller's token after a version (checks first, so errors are problems)."""


async def open_feed(
    follow: Follow,
    request: Request[Any, Any, Any],
    last_event_id: str | None,
    after: int | None,
    query_token: str | None,
) -> ServerSentEvent:
    """The feed from the caller's resume point, as the caller's token may see it, holding one
    of the client's live-feed slots while it lasts."""
    resume = resume_point(last_event_id, after)
    token = feed_token(request, query_token)
    return ServerSentEvent(await with_feed_lease(request, lambda: follow(token, resume)))


def feed_token(request: Request[Any, Any, Any], query_token: str | None) -> str | None:
    """The bearer token, else ``?token=``: browsers' EventSource cannot send headers."""
    return bearer_token(request) or query_token


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


class FeedHub:
    """Tails one published topic and wakes this process's followers of each stream in it."""

    def __init__(self, runtime: Runtime, topic: str) -> None:
        self.runtime = runtime
        self.topic = topic
        self._followers: dict[str, set[asyncio.Event]] = {}

    def start(self) -> None:
        """Run the tail for as long as the runtime (after ``runtime.start``)."""
        self.runtime.spawn(f"feed:{self.topic}", self._tail())

    async def follow(
        self, stream_id: str, after: int, read: Reader
    ) -> AsyncIterator[ServerSentEventMessage]:
        """The stream's events after version ``after`` as ``read`` shows them, as they come.

        A failed read (a database or rules outage) ends the feed: the client reconnects after
        ``RETRY_MS`` and resumes from its last event.
        """
        yield ServerSentEventMessage(data=None, retry=RETRY_MS)
        with self._watch(stream_id) as woken:
            while True:
                woken.clear()  # before reading: a wake-up during the read is kept
                try:
                    batch = await read(after)
                except (Problem, psycopg.Error) as error:
                    log.warning("feed of %s stopped: %r", stream_id, error)
                    return
                for message in batch.messages:
                    yield ServerSentEventMessage(
                        id=message.id, event=message.type, data=message.data.decode()
                    )
                    after = message.id
                if batch.last:
                    return
                if batch.messages:
                    continue  # there may be more: read on before waiting
                try:
                    async with asyncio.timeout(RECHECK_S):  # wait_for adds a task per idle feed
                        await woken.wait()
                except TimeoutError:
                    yield ServerSentEventMessage(data=None, comment="keep-alive")

    @contextlib.contextmanager
    def _watch(self, stream_id: str) -> Iterator[asyncio.Event]:
        woken = asyncio.Event()
        followers = self._followers.setdefault(stream_id, set())
        followers.add(woken)
        try:
            yield woken
        finally:
            followers.discard(woken)
            if not followers:
                del self._followers[stream_id]

    def _wake(self, stream_ids: Iterable[str]) -> None:
        for stream_id in stream_ids:
            for woken in self._followers.get(stream_id, ()):
                woken.set()

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
                    self._wake(list(self._followers))
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
                if self._followers:
                    self._wake({_stream_of(fields) for _, fields in entries})


def _stream_of(fields: dict[bytes, bytes] | None) -> str:
    """The stream an envelope announces ("" for an entry that is not one)."""
    try:
        return _announcement.decode((fields or {}).get(PAYLOAD_FIELD, b"")).stream_id
    except msgspec.DecodeError:
        return ""
