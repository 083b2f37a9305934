"""Feeds whose clients went away leave nothing behind in the hub: no follower, no task.

Litestar ends a feed whose client disconnected by cancelling the task that iterates it, while
the follower waits for a wake-up or reads its stream; that is what these feeds go through.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from litestar.response.sse import ServerSentEventMessage

from shared.feed import FeedBatch, FeedHub, FeedMessage
from shared.runtime import Runtime

FEEDS = 100


class Stream:
    """One event, then nothing new (``stuck``: the second read never returns)."""

    def __init__(self, *, stuck: bool) -> None:
        self.stuck = stuck
        self.reads = 0

    async def read(self, after: int) -> FeedBatch:
        self.reads += 1
        if after == 0:
            return FeedBatch([FeedMessage(1, "Dealt", b"{}")])
        if self.stuck:
            await asyncio.Event().wait()
        return FeedBatch([])


async def send(messages: AsyncIterator[ServerSentEventMessage]) -> None:
    """What the server does with a feed: send every message, for as long as it lasts."""
    async for _ in messages:
        pass


@pytest.mark.asyncio
async def test_feeds_cancelled_while_waiting_or_reading_leave_no_follower_nor_task() -> None:
    hub = FeedHub(cast(Runtime, None), "events")  # its tail never runs: followers only
    streams = [Stream(stuck=number % 2 == 1) for number in range(FEEDS)]
    feeds: list[asyncio.Task[Any]] = [
        asyncio.create_task(send(hub.follow("match-1", 0, stream.read))) for stream in streams
    ]
    async with asyncio.timeout(5):
        while any(stream.reads < 2 for stream in streams):
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.01)  # the followers that read nothing new are now waiting
    assert len(hub._followers["match-1"]) == FEEDS

    for feed in feeds:
        feed.cancel()
    await asyncio.gather(*feeds, return_exceptions=True)

    assert hub._followers == {}
    assert asyncio.all_tasks() == {asyncio.current_task()}
