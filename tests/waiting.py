"""Waiting for an event rather than sleeping: poll a condition until it holds or a deadline.

The deadline is generous on purpose (CI runs on two busy cores): a test waits only as long as
the event takes, and the deadline only says when to give up on it. Sleeping a fixed time
instead either waits too long or, on a busy machine, not long enough.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

TIMEOUT_S = 30.0
"""The default deadline: anything that waits on a process, Postgres or Redis gets this long."""
POLL_S = 0.05


def busy_factor() -> float:
    """Runnable tasks per core (the 1-minute load average over the cores, at least 1): a
    process gets about one share of a core each, so a time the services promise on an idle
    machine takes that many times longer here, and a test must not fail for it."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def wait_until(
    predicate: Callable[[], T], timeout: float = TIMEOUT_S, poll: float = POLL_S, what: str = ""
) -> T:
    """The first truthy value of ``predicate()``, called every ``poll`` seconds; an
    ``AssertionError`` (naming ``what`` and the last value) once ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout} s: {what or predicate!r} (last: {value!r})")
        time.sleep(poll)


async def await_until(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = TIMEOUT_S,
    poll: float = POLL_S,
    what: str = "",
) -> T:
    """``wait_until`` for a running event loop: ``predicate`` may be a coroutine function."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if loop.time() >= deadline:
            raise AssertionError(f"not within {timeout} s: {what or predicate!r} (last: {value!r})")
        await asyncio.sleep(poll)
