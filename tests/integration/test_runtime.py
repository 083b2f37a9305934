"""A service's runtime against real Postgres and Redis: closing it never hangs."""

from __future__ import annotations

import asyncio
import logging

import pytest

from shared.edge import runtime as runtime_module
from shared.edge.runtime import Runtime
from shared.infra.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_closing_leaves_behind_a_task_that_will_not_stop(
    database_url: str,
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A task that ignores both the stop and its cancel (as one inside a stuck redis-py read
    can) is left behind after twice the grace, and said so; the rest closes."""
    monkeypatch.setattr(runtime_module, "STOP_GRACE_S", 0.2)
    runtime = Runtime(
        Settings(database_url=database_url, redis_url=redis_url, stream_prefix=key_prefix)
    )
    await runtime.start()
    released = asyncio.Event()

    async def stubborn() -> None:
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                continue

    runtime.spawn("stubborn", stubborn())
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="shared.edge.runtime"):
        await asyncio.wait_for(runtime.close(), timeout=5)
    assert "1 background tasks did not stop" in caplog.text
    assert runtime.pool.closed
    released.set()
    await asyncio.sleep(0.01)
