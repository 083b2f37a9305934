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
The HTTP side (the routes, opening a feed, streaming it) is ``shared.edge.feed_http``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Iterable, Iterator
from typing import Any

import msgspec
import psycopg
from litestar.response.sse import ServerSentEventMessage

from shared.edge.errors import Problem
from shared.edge.feed_sends import Stalled, finish, send_at_once
from shared.edge.runtime import Runtime
from shared.infra.bus import PAYLOAD_FIELD, TRANSIENT_ERRORS, OutageLog
from shared.infra.metrics import OPEN_FEEDS
from shared.infra.settings import REDIS_LONGEST_BLOCK_S

log = logging.getLogger(__name__)

RETRY_MS = 2000
"""How long a client waits before reconnecting (sent once, as ``retry``)."""
RECHECK_S = 15.0
"""A follower reads its stream at least this often, woken or not, and sends a keep-alive."""
TAIL_BLOCK_MS = int(REDIS_LONGEST_BLOCK_S * 1000)
"""Below the Redis client's timeout (``redis_timeout_s``), which a longer blocking read would
hit."""
TAIL_EVENTS = 256
"""Events a channel keeps encoded for its followers (up to twice as many, trimmed at once)."""


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


SendChunk = Callable[[bytes], Coroutine[Any, Any, None]]
"""Sends the next chunk of a feed's body to its client."""

Feed = Callable[[SendChunk], Awaitable[None]]
"""Sends a feed's events through ``SendChunk`` until the stream ends (or the feed is cancelled:
its client left)."""


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
