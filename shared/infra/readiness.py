"""Readiness: whether a process's dependencies answer, asked by ``/ready`` (the HTTP services'
``shared/edge/health.py``, and the metrics port of the processes without HTTP)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool

READY_TIMEOUT_S = 1.0
"""How long /ready waits for each dependency."""
READY_KEPT_S = 1.0
"""How long an answer of /ready is reused: it is not rate limited (load balancers poll it),
so however often it is asked, each dependency is asked at most once in this time."""

ReadyCheck = Callable[[], Awaitable[Any]]
"""Asks a dependency something cheap; fails (or outlasts ``READY_TIMEOUT_S``) when it is down."""


class ReadyChecks:
    """The dependencies a service needs to do its work, asked together (within
    ``READY_TIMEOUT_S``) by one /ready at a time, the answer reused for ``READY_KEPT_S``."""

    def __init__(self, checks: dict[str, ReadyCheck]) -> None:
        self.checks = checks
        self._failed: list[str] = []
        self._at: float | None = None
        self._checking: asyncio.Task[list[str]] | None = None

    async def failed(self) -> list[str]:
        """What did not answer (what and why, no more: no address or credential)."""
        if self._at is not None and time.monotonic() - self._at < READY_KEPT_S:
            return self._failed
        if self._checking is None:
            self._checking = asyncio.create_task(self._check())
        return await asyncio.shield(self._checking)

    async def _check(self) -> list[str]:
        try:
            answers = await asyncio.gather(
                *(asyncio.wait_for(check(), READY_TIMEOUT_S) for check in self.checks.values()),
                return_exceptions=True,
            )
            self._failed = [
                f"{name} did not answer ({type(answer).__name__})"
                for name, answer in zip(self.checks, answers, strict=True)
                if isinstance(answer, BaseException)
            ]
            self._at = time.monotonic()
            return self._failed
        finally:
            self._checking = None


def ready_checks(
    pool: Callable[[], AsyncConnectionPool], redis: Callable[[], redis_async.Redis]
) -> dict[str, ReadyCheck]:
    """What /ready asks of every service: a connection of its pool, and Redis (both made when
    the service starts, hence asked for when checked). A pool not opened yet (Postgres has not
    answered since the start) fails as Postgres being down does."""

    async def postgres() -> None:
        async with pool().connection(timeout=READY_TIMEOUT_S) as conn:
            await conn.execute("SELECT 1")

    async def redis_ping() -> None:
        await redis().ping()

    return {"postgres": postgres, "redis": redis_ping}
