"""Live-feed slots: the Redis scripts that lease them, the handle a feed holds, and the batching
of the calls that take and free them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
from litestar.connection import ASGIConnection

if TYPE_CHECKING:
    from shared.edge.ratelimit import RateLimiter

Item = TypeVar("Item")
Answer = TypeVar("Answer")

TAKE_FEED_SLOT = """
local limit, lease_ms, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
for _, key in ipairs(KEYS) do
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms)
    if redis.call('ZCARD', key) >= limit then
        return 0
    end
end
for _, key in ipairs(KEYS) do
    redis.call('ZADD', key, now_ms + lease_ms, lease)
    redis.call('PEXPIRE', key, lease_ms)
end
return 1
"""
"""Lease a slot (``ARGV[3]``) in every set of live feeds (``KEYS``) or in none: 1 if taken. A
slot's score is when it lapses; lapsed ones are dropped first."""

RENEW_FEED_SLOTS = """
local lease_ms = tonumber(ARGV[1])
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
for i, key in ipairs(KEYS) do
    redis.call('ZADD', key, 'XX', now_ms + lease_ms, ARGV[i + 1])
    redis.call('PEXPIRE', key, lease_ms)
end
"""
"""Extend the leases ``ARGV[i + 1]`` in the sets ``KEYS[i]``; one released meanwhile stays
released (``XX``)."""


class Together(Generic[Item, Answer]):
    """Calls made while others are on their way go together, next, in one batch: the first
    caller sends batch after batch until none is left, the others wait for theirs."""

    def __init__(self, send: Callable[[list[Item]], Awaitable[list[Answer]]]) -> None:
        self._send = send
        self._queued: list[tuple[Item, asyncio.Future[Answer]]] = []
        self._sending = False

    async def __call__(self, item: Item) -> Answer:
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._queued.append((item, answer))
        with anyio.CancelScope(shield=True):  # the calls waiting on this one are answered
            if not self._sending:
                self._sending = True
                try:
                    while self._queued:
                        batch, self._queued = self._queued, []
                        try:
                            answers = await self._send([each for each, _ in batch])
                        except Exception as error:  # each call hears of it: none waits forever
                            for _, waiting in batch:
                                waiting.set_exception(error)
                            continue
                        for (_, waiting), each_answer in zip(batch, answers, strict=True):
                            waiting.set_result(each_answer)
                finally:
                    self._sending = False
            return await answer


class FeedSlot:
    """One of a client's live-feed slots, held until ``release`` (which frees it once). Small
    on purpose: every open feed holds one."""

    __slots__ = ("_lease", "_limiter")

    def __init__(self, limiter: RateLimiter | None = None, lease: str = "") -> None:
        self._limiter = limiter
        self._lease = lease

    async def release(self) -> None:
        limiter, self._limiter = self._limiter, None
        if limiter is not None:
            await limiter.free_feed_slot(self._lease)


async def take_feed_slot(connection: ASGIConnection[Any, Any, Any, Any]) -> FeedSlot:
    """One of the caller's live-feed slots (429 when all are taken), to release when the feed
    ends, fails to open, or its client leaves; nothing is counted when the service has no
    limiter."""
    limiter: RateLimiter | None = getattr(connection.app, "rate_limiter", None)
    if limiter is None:
        return FeedSlot()
    return await limiter.take_feed_slot(connection.scope)


@contextlib.asynccontextmanager
async def feed_lease(connection: ASGIConnection[Any, Any, Any, Any]) -> AsyncIterator[None]:
    """Hold one of the caller's live-feed slots while open (429 when all are taken)."""
    slot = await take_feed_slot(connection)
    try:
        yield
    finally:
        await slot.release()
