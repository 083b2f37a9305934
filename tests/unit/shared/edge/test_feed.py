"""The feed hub's channels: each viewer's events read once for all its followers, each follower
sent exactly its viewer's events, once and in order, and nothing left behind when they go.

A feed whose client disconnected ends by the cancelling of the task that iterates it, while
the follower waits for news or reads its own backlog; that is what these feeds go through. The
hub's tail never runs here: the tests wake the channels themselves.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any, cast

import pytest

from shared.edge import feed
from shared.edge.feed import FeedBatch, FeedHub, FeedMessage, Reader, Viewer
from shared.edge.runtime import Runtime
from tests.waiting import await_until

pytestmark = pytest.mark.asyncio

STREAM = "match-1"
PAGE = 3
"""Events a read returns at most, so that backlogs take several reads."""


class Stream:
    """A stream in memory, each event as each viewer may see it (its data names the viewer),
    counting every read; ``hangs(viewer, after)``: that read never returns."""

    def __init__(self, events: int, hangs: Callable[[Viewer, int], bool] = lambda *_: False):
        self.events = events
        self.ended = False
        self.failing = False
        self.hangs = hangs
        self.reads: Counter[Viewer] = Counter()

    def reader(self, viewer: Viewer) -> Reader:
        async def read(after: int) -> FeedBatch:
            self.reads[viewer] += 1
            if self.hangs(viewer, after):
                await asyncio.Event().wait()
            if self.failing:
                raise feed.Problem(503, "unavailable", "Unavailable", "the database is away")
            versions = range(after + 1, min(self.events, after + PAGE) + 1)
            messages = [FeedMessage(v, "Moved", seen_by(viewer, v)) for v in versions]
            if not messages and self.ended:
                return FeedBatch([], end=FeedMessage(self.events, "Ended", b'{"over":true}'))
            return FeedBatch(messages)

        return read


def seen_by(viewer: Viewer, version: int) -> bytes:
    return json.dumps({"version": version, "for": viewer}).encode()


def as_sent(viewer: Viewer, versions: range) -> list[tuple[int, str, Any]]:
    return [(v, "Moved", json.loads(seen_by(viewer, v))) for v in versions]


class Received:
    """What a client of a feed received: its events and keep-alive comments."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str, Any]] = []
        self.keep_alives = 0

    def note(self, chunk: bytes) -> None:
        for block in filter(None, chunk.split(b"\r\n\r\n")):
            fields = dict(line.decode().split(": ", 1) for line in block.split(b"\r\n"))
            if "id" in fields:
                self.events.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
            self.keep_alives += fields.get("", "") == "keep-alive"

    @property
    def ids(self) -> list[int]:
        return [version for version, _, _ in self.events]


class Follower(Received):
    """One feed, sent to its end (or until cancelled) in its own task, as the server does.
    Its client takes everything at once, unless it ``stalls``: then it stops reading after a
    chunk (its send waits) until ``reading`` is set."""

    def __init__(self, hub: FeedHub, stream: Stream, viewer: Viewer, after: int = 0) -> None:
        super().__init__()
        self.ended = False
        self.stalls = False
        self.reading = asyncio.Event()
        feed = hub.follow(STREAM, after, stream.reader(viewer), self._send, viewer)
        self.task = asyncio.create_task(self._follow(feed))

    async def _send(self, chunk: bytes) -> None:
        self.note(chunk)
        if self.stalls:
            await self.reading.wait()

    async def _follow(self, feed: Coroutine[Any, Any, None]) -> None:
        await feed
        self.ended = True


async def until(condition: Callable[[], bool]) -> None:
    await await_until(condition, poll=0.01)


async def no_task_left() -> None:
    """Every task but the test's own has finished (cancelled ones need a turn of the loop)."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        _, pending = await asyncio.wait(others, timeout=1)
        assert not pending


def live_followers(hub: FeedHub) -> list[feed.Follower]:
    """The spectator channel's followers that it sends to itself."""
    channel = hub._channels.get(STREAM, {}).get(None)
    return [] if channel is None else list(channel.live)


def hub() -> FeedHub:
    return FeedHub(cast(Runtime, None), "events")  # its tail never runs


async def test_each_viewer_is_read_once_for_all_its_followers_and_sees_only_its_own_view() -> None:
    feeds, stream = hub(), Stream(events=3)
    viewers: list[Viewer] = [0, None, 1]  # seat 0, the spectator, seat 1
    followers = [(v, Follower(feeds, stream, v)) for _ in range(30) for v in viewers]
    await until(lambda: all(len(f.events) == 3 for _, f in followers))

    stream.events = 5
    feeds._wake([STREAM])
    await until(lambda: all(len(f.events) == 5 for _, f in followers))

    for viewer, follower in followers:  # a seat's event sent to another viewer fails here
        assert follower.events == as_sent(viewer, range(1, 6))
    # per viewer: 1-3, nothing, (woken) 4-5, nothing; however many follow it
    assert stream.reads == {viewer: 4 for viewer in viewers}
    assert set(feeds._channels[STREAM]) == set(viewers)
    for _, follower in followers:
        follower.task.cancel()
    await no_task_left()
    assert feeds._channels == {}


async def test_followers_behind_the_tail_read_their_own_backlog_then_share_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed, "TAIL_EVENTS", 2)
    feeds, stream = hub(), Stream(events=10)
    first = Follower(feeds, stream, None, after=7)  # the channel starts there
    await until(lambda: first.ids == [8, 9, 10])
    resumed = Follower(feeds, stream, None, after=0)  # from further back
    await until(lambda: len(resumed.events) == 10)
    assert stream.reads[None] == 2 + 3  # the channel's 8-10 and nothing; its own 1-3, 4-6, 7-9

    stream.events = 13
    feeds._wake([STREAM])
    await until(lambda: first.ids[-1:] == [13] and resumed.ids[-1:] == [13])
    assert first.events == as_sent(None, range(8, 14))
    assert resumed.events == as_sent(None, range(1, 14))
    assert stream.reads[None] == 5 + 2  # 11-13 and nothing: the channel's, sent to both


async def test_a_client_that_stops_reading_holds_up_no_one_and_gets_every_event_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed, "TAIL_EVENTS", 2)
    feeds, stream = hub(), Stream(events=10)
    keeping_up = [Follower(feeds, stream, None) for _ in range(3)]
    stalled = Follower(feeds, stream, None, after=10)
    await until(lambda: len(live_followers(feeds)) == 4)
    stalled.stalls = True  # from now on

    stream.events = 30
    feeds._wake([STREAM])
    await until(lambda: all(f.ids[-1:] == [30] for f in keeping_up))
    assert stalled.ids == [11, 12, 13]  # its first chunk, still being written
    channel = feeds._channels[STREAM][None]
    assert channel.floor > 13  # the tail moved past it
    stalled.stalls = False
    stalled.reading.set()
    await until(lambda: stalled.ids[-1:] == [30])

    for follower in keeping_up:
        assert follower.events == as_sent(None, range(1, 31))
    assert stalled.events == as_sent(None, range(11, 31))
    for follower in [*keeping_up, stalled]:
        follower.task.cancel()
    await no_task_left()
    assert feeds._channels == {}


async def test_a_send_that_fails_ends_that_feed_only() -> None:
    feeds, stream = hub(), Stream(events=2)
    followers = [Follower(feeds, stream, None, after=2) for _ in range(3)]
    await until(lambda: len(live_followers(feeds)) == 3)
    broken = followers[1]

    async def failing(chunk: bytes) -> None:
        raise ConnectionResetError("the connection failed")

    live_followers(feeds)[1].send = failing
    stream.events = 4
    feeds._wake([STREAM])
    await until(lambda: broken.task.done())
    assert isinstance(broken.task.exception(), ConnectionResetError)
    stream.events = 5
    feeds._wake([STREAM])
    for follower in (followers[0], followers[2]):
        await until(lambda follower=follower: follower.ids == [3, 4, 5])  # type: ignore[misc]
        follower.task.cancel()
    await no_task_left()
    assert feeds._channels == {}


async def test_a_follower_cancelled_while_its_client_stalls_leaves_nothing() -> None:
    feeds, stream = hub(), Stream(events=2)
    stalled = Follower(feeds, stream, None, after=2)
    other = Follower(feeds, stream, None, after=2)
    await until(lambda: len(live_followers(feeds)) == 2)
    stalled.stalls = True
    stream.events = 3
    feeds._wake([STREAM])
    await until(lambda: other.ids == [3] and stalled.ids == [3])
    channel = feeds._channels[STREAM][None]
    assert list(channel.live) != []  # the other follower only
    stalled.task.cancel()
    other.task.cancel()
    await no_task_left()
    assert feeds._channels == {}
    assert not channel.live


async def test_the_end_comes_once_after_the_last_event_even_to_later_followers() -> None:
    feeds, stream = hub(), Stream(events=4)
    stream.ended = True
    from_start = Follower(feeds, stream, 1)
    waiting = Follower(feeds, stream, 1, after=4)
    late = Follower(feeds, stream, None, after=2)
    await until(lambda: from_start.ended and waiting.ended and late.ended)

    assert from_start.ids == [1, 2, 3, 4, 4] and from_start.events[-1][1] == "Ended"
    assert waiting.events == [(4, "Ended", {"over": True})]
    assert late.events == [*as_sent(None, range(3, 5)), (4, "Ended", {"over": True})]
    await no_task_left()
    assert feeds._channels == {}


async def test_a_failed_read_ends_the_viewers_feeds_and_the_next_feed_reads_anew() -> None:
    feeds, stream = hub(), Stream(events=2)
    followers = [Follower(feeds, stream, 0) for _ in range(5)]
    await until(lambda: all(len(f.events) == 2 for f in followers))
    stream.failing = True
    stream.events = 3
    feeds._wake([STREAM])
    await until(lambda: all(f.ended for f in followers))
    assert feeds._channels == {}  # the failed channel is not joined again

    stream.failing = False
    again = Follower(feeds, stream, 0, after=2)  # the client reconnects
    await until(lambda: again.ids == [3])
    again.task.cancel()
    await no_task_left()
    assert feeds._channels == {}


async def test_the_followers_send_a_keep_alive_when_their_channel_found_nothing_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed, "RECHECK_S", 0.05)
    feeds, stream = hub(), Stream(events=1)
    followers = [Follower(feeds, stream, None) for _ in range(3)]
    await until(lambda: all(f.keep_alives >= 2 for f in followers))
    stream.events = 2  # no wake-up: the channel's own recheck finds it
    await until(lambda: all(f.ids == [1, 2] for f in followers))
    for follower in followers:
        follower.task.cancel()
    await no_task_left()
    assert feeds._channels == {}


async def test_feeds_cancelled_while_waiting_or_reading_leave_no_channel_nor_task() -> None:
    """Seat 0's channel is stuck reading; seat 1's waits for news, and some of its followers
    are stuck reading their own backlog."""
    stream = Stream(events=2, hangs=lambda viewer, after: (viewer, after) in {(0, 2), (1, 0)})
    feeds = hub()
    stuck_channel = [Follower(feeds, stream, 0) for _ in range(40)]
    waiting = [Follower(feeds, stream, 1, after=1) for _ in range(40)]
    own_backlog = [Follower(feeds, stream, 1, after=0) for _ in range(20)]
    await until(lambda: all(f.ids == [1, 2] for f in stuck_channel))
    await until(lambda: all(f.ids == [2] for f in waiting))
    await until(lambda: stream.reads[1] == 2 + len(own_backlog))
    channels = feeds._channels[STREAM]
    assert {v: c.followers for v, c in channels.items()} == {0: 40, 1: 60}

    for follower in stuck_channel + waiting + own_backlog:
        follower.task.cancel()
    await no_task_left()
    assert feeds._channels == {}
    assert all(not channel.live for channel in channels.values())
