"""App keys kept in memory by each process (``shared/infra/keycache.py``) against real Postgres: two
processes' caches on two pools, a key revoked through one refused by the other at once, and
nothing kept while the listening connection is down."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import TypeVar

import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from shared.domain.messages import new_id
from shared.edge import apps
from shared.edge.errors import Problem
from shared.edge.tokens import hash_token
from shared.infra.db import open_pool
from shared.infra.keycache import KEYS_CHANNEL, KeyCache, KeyRow, cache_keys
from shared.infra.settings import Settings
from tests.conftest import fresh_database
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

Process = tuple[AsyncConnectionPool, KeyCache]
T = TypeVar("T")


async def listening(cache: KeyCache) -> None:
    await await_until(lambda: cache.listening, poll=0.01, what="the cache listening")


@pytest.fixture(scope="module")
def database_url(postgres_server_url: str) -> Iterator[str]:
    """This module's own database: Postgres notifies within a database, and a key created or
    revoked by another module's test running beside these would make the caches forget the
    keys these tests expect kept."""
    with fresh_database(postgres_server_url) as url:
        yield url


@pytest_asyncio.fixture
async def processes(database_url: str) -> AsyncIterator[tuple[Process, Process]]:
    """Two processes' pools, each with its cache listening."""
    stop = asyncio.Event()
    pools = [await open_pool(database_url, min_size=1, max_size=4) for _ in range(2)]
    caches = [cache_keys(pool) for pool in pools]
    tasks = [asyncio.create_task(cache.listen(stop)) for cache in caches]
    try:
        for cache in caches:
            await listening(cache)
        yield (pools[0], caches[0]), (pools[1], caches[1])
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        for pool in pools:
            await pool.close()


async def new_key(pool: AsyncConnectionPool) -> apps.CreatedApp:
    async with pool.connection() as conn, conn.transaction():
        return await apps.create_app(conn, apps.CreateApp(f"cache-{new_id()}"))


async def heard_by(caches: tuple[KeyCache, ...], change: Awaitable[T]) -> T:
    """``change``'s result once every cache heard it: a key's own creation notifies too, and a
    read made before its notification arrives is forgotten when it does."""
    marks = [cache.heard for cache in caches]
    result = await change
    await await_until(
        lambda: all(cache.heard > mark for cache, mark in zip(caches, marks, strict=True)),
        poll=0.001,
        what="the change heard",
    )
    return result


async def caller(pool: AsyncConnectionPool, raw: str) -> apps.Caller:
    return await apps.authenticate(pool, Settings(), {apps.API_KEY_HEADER: raw}, "tables")


async def unreachable(_key_hash: str) -> KeyRow | None:
    raise AssertionError("asked Postgres about a key it keeps")


async def test_a_key_revoked_through_one_process_is_refused_by_every_process(
    processes: tuple[Process, Process],
) -> None:
    """The revoking process refuses the key from its answer on; the other once told, at the
    same moment (here in the same event loop, without the answer's way to a client and back
    in between: the e2e operator test has it, and the other process refuse the next request)."""
    (revoking, revoking_cache), (other, other_cache) = processes
    created = await heard_by((revoking_cache, other_cache), new_key(revoking))
    raw = created.key.api_key
    for pool in (revoking, other):
        assert (await caller(pool, raw)).app_id == created.app.app_id
    assert await other_cache.row(hash_token(raw), unreachable) is not None  # kept

    heard = other_cache.heard
    async with apps.changing_keys(revoking):
        async with revoking.connection() as conn, conn.transaction():
            await apps.revoke_key(conn, created.app.app_id, created.key.key.key_id)
    with pytest.raises(Problem) as refused:
        await caller(revoking, raw)
    assert refused.value.code == "unknown-api-key"
    await await_until(lambda: other_cache.heard != heard, poll=0.001, what="the change heard")
    with pytest.raises(Problem) as refused:
        await caller(other, raw)
    assert refused.value.code == "unknown-api-key"
    assert await other_cache.row(hash_token(raw), unreachable) is None  # kept as refused


async def test_a_change_made_in_plain_sql_is_heard_too(
    processes: tuple[Process, Process],
) -> None:
    """``playtable apps`` and an operator's SQL change keys without any service: the trigger
    tells every process all the same."""
    (pool, cache), _ = processes
    created = await new_key(pool)
    raw = created.key.api_key
    await caller(pool, raw)
    heard = cache.heard
    async with pool.connection() as conn:
        await conn.execute(
            "update api_keys set revoked_at = now() where key_id = %s", (created.key.key.key_id,)
        )
    await await_until(lambda: cache.heard != heard, poll=0.01, what="the change heard")
    with pytest.raises(Problem):
        await caller(pool, raw)


async def test_unknown_keys_are_kept_apart_and_forgotten_on_any_change(
    processes: tuple[Process, Process],
) -> None:
    (pool, cache), _ = processes
    with pytest.raises(Problem):
        await caller(pool, "pt_sk_made-up")
    assert await cache.row(hash_token("pt_sk_made-up"), unreachable) is None
    await new_key(pool)  # a key created anywhere: every kept key is forgotten
    await await_until(
        lambda: hash_token("pt_sk_made-up") not in cache._unknown,  # noqa: SLF001
        poll=0.01,
        what="the unknown key forgotten",
    )


async def test_a_lost_listening_connection_forgets_every_key(
    processes: tuple[Process, Process],
) -> None:
    """The listening connection lost (a Postgres restart): every key is forgotten, and the
    cache keeps keys again once it listens again."""
    (pool, cache), _ = processes
    created = await new_key(pool)
    raw = created.key.api_key
    await caller(pool, raw)
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity"
            " where datname = current_database() and query = %s",
            (f"LISTEN {KEYS_CHANNEL}",),
        )
        terminated = await cursor.fetchone()
        assert terminated is not None and terminated[0] >= 2  # both processes' listeners
    await await_until(lambda: not cache.listening, poll=0.01, what="the listener lost")
    asked: list[str] = []

    async def counted(key_hash: str) -> KeyRow | None:
        asked.append(key_hash)
        return ("key", "app", ("tables",), "secret")

    await cache.row(hash_token(raw), counted)
    assert asked == [hash_token(raw)]  # forgotten
    await listening(cache)
    assert (await caller(pool, raw)).app_id == created.app.app_id
    assert await cache.row(hash_token(raw), unreachable) is not None


async def test_a_cache_that_does_not_listen_keeps_nothing() -> None:
    cache = KeyCache("postgresql://unused")
    asked: list[str] = []

    async def counted(key_hash: str) -> KeyRow | None:
        asked.append(key_hash)
        return None

    for _ in range(2):
        assert await cache.row("hash", counted) is None
    assert asked == ["hash", "hash"]
