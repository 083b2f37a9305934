"""Stream writes batched per event-loop turn, against a real Redis."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis_async

from shared.infra import rpc
from shared.infra.rpc import StreamWriter

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class CountingPipelines(StreamWriter):
    """Counts the pipelines sent, to see that one turn's writes share one."""

    def __init__(self, redis: redis_async.Redis) -> None:
        super().__init__(redis)
        self.pipelines = 0

    async def _send(self) -> None:
        self.pipelines += 1
        await super()._send()


async def test_writes_of_one_turn_go_out_together_in_order(
    redis: redis_async.Redis, key_prefix: str
) -> None:
    writer = CountingPipelines(redis)
    requests, others = f"{key_prefix}requests", f"{key_prefix}others"
    await asyncio.gather(
        *(writer.add(requests, f"request {n}".encode()) for n in range(20)),
        writer.add(others, b"other"),
    )
    await writer.add(requests, b"later")
    assert writer.pipelines == 2
    written = [fields[b"m"] for _, fields in await redis.xrange(requests)]
    assert written == [f"request {n}".encode() for n in range(20)] + [b"later"]
    assert await redis.xlen(others) == 1
    assert await redis.ttl(requests) == -1  # request streams do not expire


async def test_the_request_stream_keeps_only_its_newest_entries(
    redis: redis_async.Redis, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing acknowledges or deletes a request once read: the stream is capped instead."""
    monkeypatch.setattr(rpc, "REQUEST_STREAM_MAXLEN", 10)
    writer = StreamWriter(redis)
    for n in range(300):
        await writer.add(f"{key_prefix}requests", f"request {n}".encode())
    assert 10 <= await redis.xlen(f"{key_prefix}requests") < 300


async def test_a_failed_write_reaches_every_caller_of_its_batch(
    redis: redis_async.Redis, key_prefix: str
) -> None:
    writer = StreamWriter(redis)
    not_a_stream = f"{key_prefix}plain"
    await redis.set(not_a_stream, "x")
    outcomes = await asyncio.gather(
        writer.add(not_a_stream, b"one"), writer.add(not_a_stream, b"two"), return_exceptions=True
    )
    assert all(isinstance(outcome, Exception) for outcome in outcomes)
    await writer.add(f"{key_prefix}fine", b"three")  # the writer goes on after a failure
    assert await redis.xlen(f"{key_prefix}fine") == 1
