"""Postgres going away under a running service: dead pooled connections are not lent out after
it comes back, and while it is unreachable requests get a 503 with Retry-After, not a 500."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from litestar import get
from litestar.testing import AsyncTestClient
from psycopg.conninfo import make_conninfo
from psycopg_pool import AsyncConnectionPool, pool_async

from shared.edge.app import service_app
from shared.infra.db import MAINTENANCE_DATABASE, open_pool

_BACKENDS_NAMED = "select count(*) from pg_stat_activity where application_name = %s"

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def service_on(pool: AsyncConnectionPool) -> Any:
    """A public service whose one route needs Postgres."""

    @get("/now")
    async def now() -> str:
        async with pool.connection() as conn:
            cursor = await conn.execute("select now()::text")
            row = await cursor.fetchone()
            assert row is not None
            return str(row[0])

    return service_app("test", "test-1", [now], {}, on_startup=[], on_shutdown=[])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest_asyncio.fixture
async def named_pool(database_url: str) -> AsyncIterator[tuple[AsyncConnectionPool, str]]:
    """A service pool whose connections can be told apart in ``pg_stat_activity``."""
    name = f"outage-{uuid.uuid4().hex[:8]}"
    pool = await open_pool(make_conninfo(database_url, application_name=name), min_size=4)
    try:
        yield pool, name
    finally:
        await pool.close()


async def test_connections_are_good_right_after_the_pools_connections_died(
    database_url: str,
    named_pool: tuple[AsyncConnectionPool, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a Postgres restart does to a running service's idle connections."""
    pool, name = named_pool
    backoffs: list[float] = []  # the pool's waits after a failed check (1 s, 2 s, ...)
    backoff = pool_async.asleep

    async def counted(delay: float) -> None:
        backoffs.append(delay)
        await backoff(delay)

    monkeypatch.setattr(pool_async, "asleep", counted)
    admin = make_conninfo(database_url, dbname=MAINTENANCE_DATABASE)
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        cursor = await conn.execute(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity"
            " where application_name = %s",
            (name,),
        )
        killed = await cursor.fetchone()
        assert killed is not None and killed[0] >= 3
        while await (await conn.execute(_BACKENDS_NAMED, (name,))).fetchone() != (0,):
            await asyncio.sleep(0.01)  # pg_terminate_backend only signals: wait for the ends
    for _ in range(5):
        async with pool.connection() as conn:
            assert await (await conn.execute("select 1")).fetchone() == (1,)
    # no waiting out a backoff per dead connection: the first failed check replaced them all
    assert sum(backoffs) == 0 and len(backoffs) <= 1, backoffs


async def test_postgres_unreachable_is_a_503_with_retry_after() -> None:
    pool = AsyncConnectionPool(
        f"postgresql://postgres@127.0.0.1:{closed_port()}/playtable",
        min_size=1,
        timeout=0.5,
        open=False,
    )
    await pool.open(wait=False)
    try:
        async with AsyncTestClient(service_on(pool)) as client:
            response = await client.get("/now")
    finally:
        await pool.close()
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("application/problem+json")
    assert int(response.headers["retry-after"]) > 0
    problem = response.json()
    assert problem["type"] == "https://playtable.dev/problems/service-unavailable"
    assert "Traceback" not in response.text and "127.0.0.1" not in response.text
