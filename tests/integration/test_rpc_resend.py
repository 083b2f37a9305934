"""Rules calls against a real Redis that forgets: an unanswered request is sent again."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis_async
from prometheus_client import REGISTRY

from shared.domain import rules_api as api
from shared.infra import rpc

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def answer_requests(
    redis: redis_async.Redis, stream: str, lose_first: int, seen: list[str], stop: asyncio.Event
) -> None:
    """A stand-in rules worker: the first ``lose_first`` requests vanish (Redis wiped before it
    read them), every later one is answered with an empty catalogue. It ends after its read
    once ``stop`` is set (cancelled inside a redis-py read, it may never end)."""
    last_id = "0"
    while not stop.is_set():
        for _, entries in await redis.xread({stream: last_id}, block=100) or ():
            for entry_id, fields in entries:
                last_id = entry_id
                call = rpc.decode_call(fields[b"m"])
                seen.append(call.request_id)
                if len(seen) > lose_first:
                    await redis.xadd(call.reply_to, {b"m": rpc.encode_reply(call.request_id, [])})


async def started_client(
    redis: redis_async.Redis, key_prefix: str, timeout_s: float
) -> rpc.RulesClient:
    client = rpc.RulesClient(
        redis,
        request_stream=f"{key_prefix}requests",
        reply_stream=f"{key_prefix}replies",
        timeout_s=timeout_s,
    )
    await client.start()
    return client


async def lost_once_then_answered(redis: redis_async.Redis, key_prefix: str) -> float:
    """A call whose first request Redis loses: how long it took to be answered (the request
    sent twice, its second copy answered)."""
    client = await started_client(redis, key_prefix, timeout_s=5)
    seen: list[str] = []
    stop = asyncio.Event()
    worker = asyncio.create_task(answer_requests(redis, f"{key_prefix}requests", 1, seen, stop))
    try:
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await client.call(api.Catalogue(), list) == []
        took = loop.time() - began
    finally:
        stop.set()
        await asyncio.wait_for(worker, 30)
        await asyncio.wait_for(client.stop(), 30)
    assert len(seen) == 2 and seen[0] == seen[1]  # the same request, sent twice
    return took


async def test_a_request_lost_with_redis_is_sent_again_and_answered(
    redis: redis_async.Redis, key_prefix: str
) -> None:
    assert await lost_once_then_answered(redis, key_prefix) >= rpc.RESEND_AFTER_S


@pytest.mark.speed  # an upper bound on time: left out of the default run
async def test_a_request_lost_with_redis_is_answered_within_two_resend_periods(
    redis: redis_async.Redis, key_prefix: str
) -> None:
    assert await lost_once_then_answered(redis, key_prefix) < 2 * rpc.RESEND_AFTER_S


async def unanswered_call(redis: redis_async.Redis, key_prefix: str) -> float:
    """A call nobody answers, with a 2.5 s timeout: how long until it gave up. It gives up by
    its own timeout (``RulesUnavailable``, the timeouts counted), having sent the request at
    0 s, 1 s and 2 s, never more often."""
    timeouts = REGISTRY.get_sample_value("playtable_rules_timeouts_total", {"request": "Catalogue"})
    client = await started_client(redis, key_prefix, timeout_s=2.5)
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        with pytest.raises(rpc.RulesUnavailable):  # a generous bound: a hang fails, not waits
            await asyncio.wait_for(client.call(api.Catalogue(), list), 30)
        took = loop.time() - began
    finally:
        await asyncio.wait_for(client.stop(), 30)
    after = REGISTRY.get_sample_value("playtable_rules_timeouts_total", {"request": "Catalogue"})
    assert (after or 0) - (timeouts or 0) == 1  # ended by its timeout, not by an error
    # sent again each RESEND_AFTER_S it stayed unanswered: 3 (at 0, 1 and 2 s), fewer only if
    # a busy machine held the loop past the deadline, never more
    assert 2 <= await redis.xlen(f"{key_prefix}requests") <= 3
    return took


async def test_a_call_nobody_answers_still_ends_at_its_timeout(
    redis: redis_async.Redis, key_prefix: str
) -> None:
    assert await unanswered_call(redis, key_prefix) >= 2.5


@pytest.mark.speed  # an upper bound on time: left out of the default run
async def test_a_call_nobody_answers_ends_right_at_its_timeout(
    redis: redis_async.Redis, key_prefix: str
) -> None:
    assert await unanswered_call(redis, key_prefix) < 3.0
