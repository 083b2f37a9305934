"""The feed hub against a real Redis: wake-ups from the published topic, and reads without them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import redis.asyncio as redis_async

from shared.edge import feed
from shared.edge.feed import FeedBatch, FeedHub, FeedMessage
from shared.infra.bus import Bus
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class FakeRuntime:
    """What the hub uses of a runtime: the bus, the stop event and a place to run its tail."""

    def __init__(self, redis: redis_async.Redis) -> None:
        self.bus = Bus(redis)
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    def spawn(self, _name: str, job: Any) -> None:
        self.tasks.append(asyncio.create_task(job))

    async def close(self) -> None:
        self.stop.set()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


class Stream:
    """A stream's events in memory, read the way a service reads Postgres."""

    def __init__(self) -> None:
        self.types: list[str] = []
        self.reads = 0

    async def read(self, after: int) -> FeedBatch:
        self.reads += 1
        return FeedBatch(
            [FeedMessage(n, kind, b"{}") for n, kind in enumerate(self.types, 1) if n > after]
        )


class Chunks:
    """A feed run in its own task, its chunks as its client receives them."""

    def __init__(self, hub: FeedHub, stream_id: str, read: Any) -> None:
        self.received: asyncio.Queue[bytes] = asyncio.Queue()
        self.task = asyncio.create_task(hub.follow(stream_id, 0, read, self._send))

    async def _send(self, chunk: bytes) -> None:
        self.received.put_nowait(chunk)

    def __aiter__(self) -> Chunks:
        return self

    async def __anext__(self) -> bytes:
        return await self.received.get()

    async def aclose(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def fields(chunk: bytes) -> dict[str, str]:
    """The fields of one encoded message (a comment's under "")."""
    return dict(line.decode().split(": ", 1) for line in chunk.strip().split(b"\r\n"))


async def next_event(messages: Chunks) -> dict[str, str]:
    """The next message that is an event (skipping the retry hint and keep-alives)."""
    async for chunk in messages:
        if b"id: " in chunk:
            return fields(chunk)
    raise AssertionError("the feed ended")


def announce(stream_id: str) -> bytes:
    return json.dumps({"stream_id": stream_id, "version": 1}).encode()


async def test_a_follower_reads_again_by_itself_with_a_keep_alive(
    monkeypatch: pytest.MonkeyPatch, redis: redis_async.Redis, key_prefix: str
) -> None:
    monkeypatch.setattr(feed, "RECHECK_S", 0.05)
    hub = FeedHub(FakeRuntime(redis), f"{key_prefix}topic")  # its tail never runs: no wake-up
    stream = Stream()
    stream.types.append("A")
    messages = Chunks(hub, "s-1", stream.read)
    assert fields(await anext(messages)) == {"retry": str(feed.RETRY_MS)}
    assert (await next_event(messages))["id"] == "1"
    keep_alive = await asyncio.wait_for(anext(messages), 2)
    assert fields(keep_alive) == {"": "keep-alive"}
    stream.types.append("B")
    assert (await asyncio.wait_for(next_event(messages), 2))["event"] == "B"
    assert list(hub._channels) == ["s-1"]
    await messages.aclose()
    assert hub._channels == {}


async def tail_blocked(redis: redis_async.Redis, client_name: str) -> bool:
    """Whether the connection named ``client_name`` waits in a blocking XREAD, as Redis sees it."""
    return any(
        client["name"] == client_name and client["cmd"] == "xread" and "b" in client["flags"]
        for client in await redis.client_list()
    )


async def test_the_tail_wakes_the_followers_of_the_announced_stream_even_after_a_wipe(
    redis: redis_async.Redis, redis_url: str, key_prefix: str
) -> None:
    tail_name = f"{key_prefix}tail".replace(":", "-")
    tail_redis = redis_async.Redis.from_url(redis_url, client_name=tail_name)
    runtime = FakeRuntime(tail_redis)
    topic = f"{key_prefix}topic"
    bus = Bus(redis)
    await bus.publish(topic, announce("s-1"))  # before the tail: not read again
    hub = FeedHub(runtime, topic)
    hub.start()
    watched, other = Stream(), Stream()
    watched.types.append("A")
    messages = Chunks(hub, "s-1", watched.read)
    other_messages = Chunks(hub, "s-2", other.read)
    idle = asyncio.create_task(next_event(other_messages))
    try:
        assert (await next_event(messages))["id"] == "1"
        # the tail has started (and woken everyone once)
        await await_until(lambda: tail_blocked(redis, tail_name), what="the tail reads")
        reads = other.reads
        for version, wipe in ((2, False), (3, True)):
            watched.types.append(f"event{version}")
            if wipe:
                await redis.delete(topic)
            await await_until(lambda: tail_blocked(redis, tail_name), what="the tail reads")
            await bus.publish(topic, announce("s-1"))
            woken = await asyncio.wait_for(next_event(messages), 2)  # far below RECHECK_S
            assert woken["id"] == str(version)
        assert other.reads == reads and not idle.done()  # nothing announced for s-2
    finally:
        idle.cancel()
        await messages.aclose()
        await other_messages.aclose()
        await runtime.close()
        await tail_redis.aclose()
