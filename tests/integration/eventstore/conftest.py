"""The event store tests run on a plain and on a partitioned event log: the ``pool`` here (and
the ``store`` of ``tests/integration/conftest.py`` on it) is each in turn."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from shared.infra import db
from shared.infra.db import open_pool
from shared.infra.eventstore import EventStore
from tests.conftest import drop_database, with_database
from tests.integration.eventstore.events import BEFORE_PARTITIONING, new_events


@pytest.fixture(scope="package")
def partitioned_database_url(postgres_server_url: str) -> Iterator[str]:
    """A database whose event log was partitioned (``playtable partition-events``) after
    some streams were written: every test of this folder also runs on it."""
    name = f"playtable_partitioned_{uuid.uuid4().hex[:12]}"
    url = with_database(postgres_server_url, name)

    async def prepare() -> None:
        pool = await open_pool(url, min_size=1, max_size=2)
        try:
            store = EventStore(pool)
            for number in range(BEFORE_PARTITIONING):
                await store.append(f"match-before-{number}", 0, new_events("A", "B", "C"))
            async with pool.connection() as conn:
                assert await db.partition_events(conn, 4) == 4
        finally:
            await pool.close()

    asyncio.run(prepare())
    try:
        yield url
    finally:
        drop_database(postgres_server_url, name)


@pytest_asyncio.fixture(params=["plain log", "partitioned log"])
async def pool(
    request: pytest.FixtureRequest, database_url: str, partitioned_database_url: str
) -> AsyncIterator[AsyncConnectionPool]:
    url = database_url if request.param == "plain log" else partitioned_database_url
    opened = await open_pool(url, min_size=1, max_size=8)
    try:
        yield opened
    finally:
        await opened.close()
