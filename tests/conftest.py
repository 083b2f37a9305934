"""Fixtures for tests that need the real Postgres and Redis.

``DATABASE_URL`` and ``REDIS_URL`` name the servers; without them the local ones are used, or,
when nothing answers locally and Docker does, throwaway containers. Every session gets a fresh
database (dropped at the end) and every test its own Redis key prefix, so test runs never see
each other's data nor anyone else's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import AsyncConnectionPool

from services.operator.keys import fresh_key
from shared.edge.apps import KeyKind
from shared.infra.bus import Bus
from shared.infra.db import MAINTENANCE_DATABASE, open_pool
from shared.infra.secretbox import new_entry
from shared.infra.settings import Settings

LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_REDIS = "redis://127.0.0.1:6379/15"

SECRET_KEYS = os.environ.setdefault("PLAYTABLE_SECRET_KEYS", new_entry("tests"))
"""The keyring every service of the session seals with (made for it, unless the environment
has one): every process the tests start inherits it, and the in-process ones are given it."""


DURATIONS = Path(__file__).with_name("durations.json")
"""Seconds each test file took in a whole run (``python -m tools.test_durations``)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first, each file's tests in their order: the workers (``-n``, a file
    to one worker) take files as they finish one, so a long file started last would hold the
    whole run while the others idle. A file not measured yet counts as short."""
    seconds = json.loads(DURATIONS.read_text())
    root = config.rootpath
    items.sort(key=lambda item: -seconds.get(item.path.relative_to(root).as_posix(), 0))


def _answers(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port or default_port), timeout=1):
            return True
    except OSError:
        return False


def _docker_answers() -> bool:
    try:
        import docker

        return bool(docker.from_env().ping())
    except Exception:
        return False


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` on the same server."""
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def create_database(server_url: str, name: str) -> None:
    maintenance = make_conninfo(server_url, dbname=MAINTENANCE_DATABASE)
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(server_url: str, name: str) -> None:
    maintenance = make_conninfo(server_url, dbname=MAINTENANCE_DATABASE)
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A Postgres server on which the tests may create and drop databases."""
    configured = os.environ.get("DATABASE_URL")
    if configured or _answers(LOCAL_POSTGRES, 5432) or not _docker_answers():
        yield configured or LOCAL_POSTGRES
        return
    from testcontainers.community.postgres import PostgresContainer

    with PostgresContainer("postgres:16-alpine", driver=None) as container:
        yield container.get_connection_url()


@contextlib.contextmanager
def fresh_database(postgres_server_url: str) -> Iterator[str]:
    """The URL of a new database on the server, dropped when the block ends."""
    name = f"playtable_test_{uuid.uuid4().hex[:12]}"
    create_database(postgres_server_url, name)
    try:
        yield with_database(postgres_server_url, name)
    finally:
        drop_database(postgres_server_url, name)


@pytest.fixture(scope="session")
def database_url(postgres_server_url: str) -> Iterator[str]:
    """A fresh database for this session, dropped at its end."""
    with fresh_database(postgres_server_url) as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    configured = os.environ.get("REDIS_URL")
    if configured or _answers(LOCAL_REDIS, 6379) or not _docker_answers():
        yield configured or LOCAL_REDIS
        return
    from testcontainers.community.redis import RedisContainer

    with RedisContainer("redis:7-alpine") as container:
        host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
        yield f"redis://{host}:{port}/15"


@pytest.fixture
def key_prefix() -> str:
    """Prefix for every Redis key a test creates; the keys are deleted after the test."""
    return f"test:{uuid.uuid4().hex[:12]}:"


@pytest_asyncio.fixture
async def pool(database_url: str) -> AsyncIterator[AsyncConnectionPool]:
    pool = await open_pool(database_url, min_size=1, max_size=8)
    try:
        yield pool
    finally:
        await pool.close()


@pytest_asyncio.fixture
async def redis(redis_url: str, key_prefix: str) -> AsyncIterator[redis_async.Redis]:
    client = redis_async.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        keys = [key async for key in client.scan_iter(match=f"{key_prefix}*", count=1000)]
        if keys:
            await client.delete(*keys)
        await client.aclose()


@pytest.fixture
def bus(redis: redis_async.Redis) -> Bus:
    return Bus(redis)


TEST_APP = "tests"


def new_app_key(
    database_url: str, label: str, app: str = TEST_APP, kind: KeyKind = "secret"
) -> str:
    """A new key of ``kind`` of a client app (the tests' own by default), made in Postgres as
    ``playtable apps`` does (the database is migrated first)."""
    return asyncio.run(fresh_key(Settings(database_url=database_url), app, label, kind=kind))
