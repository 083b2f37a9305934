"""Tokens taken a few at a time (``shared/edge/ratelimit.py``'s allowances), with the real Redis:
a client far from its limits costs one call per many requests, near the edge each request is
counted, processes sharing a bucket admit no more than its bound, unspent tokens lapse."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple

import pytest
import pytest_asyncio
import redis.asyncio as redis_async

from shared.edge.ratelimit import RateLimiter
from shared.infra.settings import Settings
from tests.integration.limited_service import OTHER_CLIENT, admitted

pytestmark = pytest.mark.integration


LimiterMaker = Callable[..., Awaitable[RateLimiter]]


@pytest_asyncio.fixture
async def limiters(
    redis_url: str, key_prefix: str, redis: redis_async.Redis, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[LimiterMaker]:
    """Makes started limiters with the limits given, as separate processes of one deployment
    would have: they share the buckets in Redis (under the test's prefix), nothing else.
    Their Redis timeout is long: these tests count tokens, and on a busy machine a reply
    later than the served 0.25 s let requests pass unchecked (the outage tests judge that)."""
    monkeypatch.setattr("shared.edge.ratelimit.REDIS_TIMEOUT_S", 30.0)
    started: list[RateLimiter] = []

    async def make(**limits: Any) -> RateLimiter:
        settings = Settings(
            redis_url=redis_url,
            stream_prefix=key_prefix.rstrip(":"),
            instance_id="rate-test",
            **limits,
        )
        limiter = RateLimiter(settings)
        await limiter.start()
        started.append(limiter)
        return limiter

    yield make
    for limiter in started:
        await limiter.close()


class Call(NamedTuple):
    need: int
    ask: int
    taken: int


def counting_calls(limiter: RateLimiter, monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """The token script's calls the limiter makes from now on: the tokens it needed for the
    requests waiting, the most it asked for, the tokens it took."""
    calls: list[Call] = []
    script = limiter._take_tokens
    assert script is not None

    async def counted(**call: Any) -> Any:
        answer = await script(**call)
        _rate, _burst, need, ask = call["args"]
        calls.append(Call(need, ask, answer[0]))
        return answer

    monkeypatch.setattr(limiter, "_take_tokens", counted)
    return calls


def state(answer: str | None) -> tuple[int, int]:
    """The tokens left and the seconds until full of a write's ``RateLimit``."""
    assert answer is not None
    match = re.fullmatch(r'"write";r=(\d+);t=(\d+)', answer)
    assert match is not None, answer
    return int(match[1]), int(match[2])


@pytest.mark.asyncio
async def test_a_client_far_from_its_limits_costs_one_call_per_many_requests(
    limiters: LimiterMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    limiter = await limiters(rate_limit_write_per_s=0.01, rate_limit_write_burst=10_000)
    calls = counting_calls(limiter, monkeypatch)
    answers = [await admitted(limiter) for _ in range(1 + 2 + 4 + 8 + 16 + 32 * 10)]
    # 1, 2, 4, 8, 16 then 32 tokens a call, as the client spends them all
    assert [call.taken for call in calls] == [1, 2, 4, 8, 16] + [32] * 10
    # the count a lone process gives is exact: the tokens it holds count as in the bucket
    assert [state(answer)[0] for answer in answers] == list(range(9999, 9999 - 351, -1))


@pytest.mark.asyncio
async def test_near_the_edge_each_request_is_counted_by_redis(
    limiters: LimiterMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    limiter = await limiters(rate_limit_write_per_s=0.5, rate_limit_write_burst=10)
    calls = counting_calls(limiter, monkeypatch)
    answers = [await admitted(limiter) for _ in range(12)]
    # as a lone process, the counts are exact: the tokens held count as still in the bucket
    states = [state(answer) for answer in answers[:10]]
    assert [left for left, _ in states] == list(range(9, -1, -1))
    for left, full_in_s in states:  # one second less once the bucket refilled a second's worth
        assert full_in_s in ((10 - left) * 2, (10 - left) * 2 - 1)
    assert answers[10:] == [None, None]
    # spare tokens only while the bucket stays more than half full: the 2nd call took 2 (9
    # left: 7), the 3rd 2 (7: 5); from then on, one call per request; the 2nd 429 is known
    assert [call.taken for call in calls] == [1, 2, 2, 1, 1, 1, 1, 1, 0]
    assert {call.need for call in calls} == {1}


@pytest.mark.asyncio
async def test_processes_sharing_a_bucket_admit_no_more_than_their_bound(
    limiters: LimiterMaker,
) -> None:
    """Each process holds up to 31 spare tokens taken while the bucket was full; the bucket
    refills meanwhile: a flood then gets at most the bucket's own bound and those."""
    limits = {"rate_limit_write_per_s": 400, "rate_limit_write_burst": 400}
    processes = [await limiters(**limits), await limiters(**limits)]
    for limiter in processes:  # takes 1 + 2 + 4 + 8 + 16 + 32 = 63 tokens, spends 32
        assert None not in [await admitted(limiter) for _ in range(32)]
    await asyncio.sleep(0.35)  # 126 tokens taken: the bucket is full again after 0.32 s
    passed = 0
    refused: set[RateLimiter] = set()
    began = time.perf_counter()
    at_least_until, at_most_until = began + 0.3, began + 30

    async def flood(limiter: RateLimiter) -> None:
        nonlocal passed
        while (now := time.perf_counter()) < at_least_until or (
            len(refused) < 2 and now < at_most_until  # on a busy machine, until both are
        ):
            if await admitted(limiter) is None:
                refused.add(limiter)
            else:
                passed += 1
            await asyncio.sleep(0)  # a refusal known in the process does not wait

    await asyncio.gather(*(flood(limiter) for limiter in processes for _ in range(4)))
    elapsed = time.perf_counter() - began
    assert len(refused) == 2, passed  # still a flood
    assert passed <= 400 + 400 * elapsed + 2 * 31 + 1, (passed, elapsed)
    assert passed >= 400 - 2 * 31, (passed, elapsed)  # the bucket was spent (some may lapse)


@pytest.mark.asyncio
async def test_processes_sharing_a_bucket_share_it_exactly_without_refill(
    limiters: LimiterMaker,
) -> None:
    limits = {"rate_limit_write_per_s": 0.01, "rate_limit_write_burst": 40}
    first, second = await limiters(**limits), await limiters(**limits)
    answers = [await admitted(limiter) for _ in range(40) for limiter in (first, second)]
    assert sum(answer is not None for answer in answers) == 40  # tokens held are spent too
    assert answers[-4:] == [None] * 4


@pytest.mark.asyncio
async def test_concurrent_requests_of_a_client_wait_for_one_call(
    limiters: LimiterMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    limiter = await limiters(rate_limit_write_per_s=0.01, rate_limit_write_burst=1000)
    calls = counting_calls(limiter, monkeypatch)
    answers = await asyncio.gather(*(admitted(limiter) for _ in range(50)))
    assert None not in answers
    # the first asked for itself; the 49 that came meanwhile, for 32 of them; then the rest
    assert [call.need for call in calls] == [1, 32, 17]
    # near the edge, the call takes a token for each request waiting, and no more
    near_edge = await limiters(rate_limit_write_per_s=0.01, rate_limit_write_burst=20)
    calls = counting_calls(near_edge, monkeypatch)
    answers = await asyncio.gather(*(admitted(near_edge, OTHER_CLIENT) for _ in range(30)))
    assert sum(answer is not None for answer in answers) == 20
    assert [(call.need, call.taken) for call in calls] == [(1, 1), (29, 19), (10, 0)]


@pytest.mark.asyncio
async def test_unspent_tokens_lapse_and_the_next_call_asks_for_fewer(
    limiters: LimiterMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shared.edge.ratelimit.ALLOWANCE_S", 0.2)
    limiter = await limiters(rate_limit_write_per_s=0.01, rate_limit_write_burst=1000)
    calls = counting_calls(limiter, monkeypatch)
    for _ in range(8):  # calls of 1, 2, 4, then 8 tokens: one spent, 7 held
        await admitted(limiter)
    await asyncio.sleep(0.25)
    answer = await admitted(limiter)
    assert [call.ask for call in calls] == [1, 2, 4, 8, 1]  # the client spent one of 8 in time
    # the 7 lapsed tokens are lost to the client (of 1000, 8 + 7 + 1 are gone)
    assert state(answer)[0] == 984


@pytest.mark.asyncio
async def test_a_closed_limiter_counts_nothing_even_with_tokens_held(
    limiters: LimiterMaker,
) -> None:
    limiter = await limiters(rate_limit_write_per_s=0.01, rate_limit_write_burst=1000)
    for _ in range(4):  # the last call took 4: 3 held
        await admitted(limiter)
    await limiter.close()
    assert await admitted(limiter) == "passed unchecked"
