"""How a process spends the tokens it takes from Redis a few at a time
(``shared/edge/ratelimit.py``),
against an in-memory stand-in for the token script: requests waiting for a call that is
cancelled or fails, how many tokens the next call asks for, and a bounded memory of clients.
With the real Redis: ``tests/integration/test_rate_limit_allowances.py`` (and the other
``test_rate_limit*.py`` and ``test_feed_limits.py`` beside it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shared.edge.buckets import ALLOWANCE_MAX, Allowance
from shared.edge.errors import Problem
from shared.edge.ratelimit import RateLimiter
from shared.infra.settings import Settings


class Buckets:
    """The token script over buckets that never refill; a call waits for ``gate`` when set,
    and raises ``failure`` when given."""

    def __init__(self) -> None:
        self.levels: dict[str, int] = {}
        self.calls: list[tuple[int, int]] = []
        self.gate: asyncio.Event | None = None
        self.failure: Exception | None = None

    async def __call__(self, *, keys: tuple[str, ...], args: tuple[Any, ...]) -> list[int]:
        _rate, burst, need, ask = args
        self.calls.append((need, ask))
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        lowest = min(self.levels.get(key, burst) for key in keys)
        if lowest < 1:
            return [0, 0, 1000, 1000]
        taken = min(need, lowest)
        taken += max(0, min(ask - taken, (lowest - taken - burst // 2)))
        for key in keys:
            self.levels[key] = self.levels.get(key, burst) - taken
        return [taken, lowest - taken, 0, 1000]


def limiter_on(buckets: Buckets, burst: int = 1000) -> RateLimiter:
    limiter = RateLimiter(Settings(rate_limit_write_per_s=1, rate_limit_write_burst=burst))
    limiter._take_tokens = buckets  # type: ignore[assignment]  # as if started
    return limiter


def scope(address: str = "203.0.113.5") -> Any:
    return {"type": "http", "method": "POST", "path": "/things", "client": (address, 1)}


async def admit(limiter: RateLimiter, address: str = "203.0.113.5") -> bool:
    """Whether the request was counted (False: it passed unchecked); raises the 429."""
    return await limiter.admit({**scope(address), "headers": []}) is not None


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_requests_waiting_for_a_cancelled_call_ask_again() -> None:
    buckets = Buckets()
    buckets.gate = asyncio.Event()
    limiter = limiter_on(buckets)
    first = asyncio.create_task(admit(limiter))
    await settle()
    waiting = [asyncio.create_task(admit(limiter)) for _ in range(2)]
    await settle()
    first.cancel()  # its client left while Redis was asked
    buckets.gate.set()
    assert await asyncio.gather(*waiting) == [True, True]
    assert buckets.calls == [(1, 1), (2, 2)]  # one call for the two waiting


@pytest.mark.asyncio
async def test_requests_waiting_for_a_failed_call_pass_at_once() -> None:
    buckets = Buckets()
    buckets.gate = asyncio.Event()
    buckets.failure = ConnectionError("Redis went away")
    limiter = limiter_on(buckets)
    requests = [asyncio.create_task(admit(limiter)) for _ in range(5)]
    await settle()
    buckets.gate.set()
    assert await asyncio.gather(*requests) == [False] * 5
    assert len(buckets.calls) == 1  # then Redis is left alone a moment


@pytest.mark.asyncio
async def test_a_refusal_refuses_the_requests_waiting_for_it() -> None:
    buckets = Buckets()
    limiter = limiter_on(buckets, burst=3)
    buckets.gate = asyncio.Event()
    requests = [asyncio.create_task(admit(limiter)) for _ in range(6)]
    await settle()
    buckets.gate.set()
    answers = await asyncio.gather(*requests, return_exceptions=True)
    assert answers[:3] == [True] * 3
    assert all(isinstance(answer, Problem) and answer.status == 429 for answer in answers[3:])
    assert buckets.calls == [(1, 1), (5, 5), (3, 4)]  # the last one refused all three left


@pytest.mark.asyncio
async def test_the_next_call_asks_for_twice_what_was_spent_in_time() -> None:
    buckets = Buckets()
    limiter = limiter_on(buckets)
    for _ in range(1 + 2 + 4 + 8 + 16 + 32 + 32):
        await admit(limiter)
    assert [ask for _, ask in buckets.calls] == [1, 2, 4, 8, 16, 32, 32]


def test_the_next_call_asks_for_what_was_spent_of_tokens_that_lapsed() -> None:
    allowance = Allowance()
    allowance.plan(now=0.0)
    assert allowance.want == 1  # nothing known yet
    allowance.taken, allowance.tokens, allowance.until = 16, 0, 10.0
    allowance.plan(now=5.0)
    assert allowance.want == ALLOWANCE_MAX
    allowance.taken, allowance.tokens = 16, 11
    allowance.plan(now=11.0)
    assert allowance.want == 5  # of 16, 5 spent before they lapsed
    allowance.taken, allowance.tokens = 1, 1
    allowance.plan(now=12.0)
    assert allowance.want == 1


@pytest.mark.asyncio
async def test_a_process_remembers_a_bounded_number_of_clients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("shared.edge.ratelimit.REMEMBERED_ALLOWANCES", 3)
    monkeypatch.setattr("shared.edge.ratelimit.ALLOWANCE_S", 0.05)
    buckets = Buckets()
    limiter = limiter_on(buckets)
    for client in range(5):
        assert await admit(limiter, f"198.51.100.{client}")
    assert len(limiter._allowances) == 3  # the others were counted all the same
    await asyncio.sleep(0.06)  # all lapsed: forgotten to make room
    assert await admit(limiter, "198.51.100.9")
    assert len(limiter._allowances) == 1
