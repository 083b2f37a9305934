"""The tests' own waiting helpers: the first truthy value, or an error naming what never came."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.waiting import await_until, wait_until


def test_wait_until_returns_the_first_truthy_value() -> None:
    counts = itertools.count()
    assert wait_until(lambda: next(counts) >= 3 and "there", poll=0) == "there"


def test_wait_until_names_what_never_came() -> None:
    with pytest.raises(AssertionError, match="the answer"):
        wait_until(lambda: [], timeout=0.05, poll=0.01, what="the answer")


@pytest.mark.asyncio
async def test_await_until_takes_coroutine_functions_too() -> None:
    counts = itertools.count()

    async def ready() -> int:
        await asyncio.sleep(0)
        return max(0, next(counts) - 2)

    assert await await_until(ready, poll=0) == 1
    with pytest.raises(AssertionError, match="never"):
        await await_until(lambda: None, timeout=0.05, poll=0.01, what="never")
