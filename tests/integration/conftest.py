"""Fixtures shared by the integration tests of the event store, bus and outbox, and of the rate
limits (their small service is ``limited_service.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from litestar import Litestar
from psycopg_pool import AsyncConnectionPool

from shared.edge.app import service_app
from shared.infra.eventstore import EventStore
from shared.infra.settings import Settings
from tests.integration.limited_service import AppMaker, add_thing, follow_things, read_things


@pytest.fixture
def store(pool: AsyncConnectionPool) -> EventStore:
    return EventStore(pool)


@pytest_asyncio.fixture
async def limited_app(
    redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> AsyncIterator[AppMaker]:
    """Makes the small service with the limits given (settings' names), its limiter started;
    its keys are under the test's prefix, which the ``redis`` fixture deletes."""
    started: list[Litestar] = []

    async def make(**limits: Any) -> Litestar:
        settings = Settings(
            redis_url=limits.pop("redis_url", redis_url),
            stream_prefix=key_prefix.rstrip(":"),
            instance_id="rate-test",
            **limits,
        )
        app = service_app(
            "test",
            "test-1",
            [read_things, add_thing, follow_things],
            {},
            on_startup=[],
            on_shutdown=[],
            settings=settings,
        )
        await app.rate_limiter.start()
        started.append(app)
        return app

    yield make
    for app in started:
        await app.rate_limiter.close()
