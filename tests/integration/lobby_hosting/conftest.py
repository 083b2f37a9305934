"""The lobby app and a rules worker for the hosting tests, run in the test's own loop (the lobby
and a rules worker run in this process; no match service runs, so a started table's
``CreateMatch`` stays in the commands table, where the tests read it, and a finished match is a
``matches`` row written by ``Lobby.finish``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest_asyncio
import redis.asyncio as redis_async
from litestar import Litestar

from services.lobby.app import create_app
from services.operator.keys import fresh_key
from services.rules.worker import serve as serve_rules
from shared.edge.apps import API_KEY_HEADER
from shared.infra.db import open_pool
from shared.infra.settings import Settings
from tests.conftest import SECRET_KEYS
from tests.integration.lobby_hosting.lobby_client import Lobby


@pytest_asyncio.fixture
async def lobby(
    database_url: str, redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> AsyncIterator[Lobby]:
    """The lobby app and a rules worker, their streams under the test's Redis prefix, and an
    app of the test's own (its key in every request)."""
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        stream_prefix=key_prefix.rstrip(":"),
        instance_id="lobby-hosting-test",
        start_wait_s=0.2,
        rate_limits=False,
        secret_keys=SECRET_KEYS,
    )
    stop = asyncio.Event()
    rules_settings = msgspec.structs.replace(settings, instance_id="rules-hosting-test")
    rules = asyncio.create_task(serve_rules(rules_settings, stop))
    key = await fresh_key(settings, f"hosting-{uuid.uuid4().hex[:8]}", "tests")
    pool = await open_pool(database_url, min_size=1, max_size=4)
    app = create_app(settings)
    up, done = asyncio.Event(), asyncio.Event()
    # The app runs in this loop (not a test client's thread), so requests sent at once run at
    # once; its lifespan is one task's, entered and left there.
    running = asyncio.create_task(_lifespan(app, up, done))
    transport = httpx.ASGITransport(app=app)
    try:
        await asyncio.wait_for(up.wait(), 30)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://lobby", headers={API_KEY_HEADER: key}
        ) as client:
            yield Lobby(client=client, pool=pool, settings=settings)
    finally:
        done.set()
        await asyncio.wait_for(running, 30)
        await pool.close()
        stop.set()
        await asyncio.wait_for(rules, 10)


async def _lifespan(app: Litestar, up: asyncio.Event, done: asyncio.Event) -> None:
    async with app.lifespan():
        up.set()
        await done.wait()
