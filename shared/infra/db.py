"""Postgres connections: a ready pool for the service's database, and schema migrations.

Every service process calls ``open_pool`` on start, several at once, so creating the database
and applying migrations must be safe when raced.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import psycopg
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

from shared.infra.bus import OutageLog

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

MIGRATION_LOCK = 0x706C61797461626C  # advisory lock key ("playtabl") serialising migrations

MAINTENANCE_DATABASE = "postgres"


POOL_TIMEOUT_S = 5.0
"""How long a request waits for a connection before it is answered 503 (Postgres down)."""
CONNECT_TIMEOUT_S = 5
"""How long starting waits for a Postgres that takes connections but does not answer (paused)
before it says so and tries again."""


def new_pool(database_url: str, *, min_size: int = 2, max_size: int = 10) -> AsyncConnectionPool:
    """The service's pool, not opened yet (``open_pool`` and ``open_when_reachable`` open it):
    until then a request for a connection fails as Postgres being down does (``PoolClosed``,
    an ``OperationalError``)."""
    # Autocommit: a single statement is its own transaction (no BEGIN/ROLLBACK round trips);
    # work of several statements opens ``conn.transaction()`` explicitly.
    pool: AsyncConnectionPool = AsyncConnectionPool(
        database_url,
        min_size=min_size,
        max_size=max_size,
        timeout=POOL_TIMEOUT_S,
        open=False,
        kwargs={"autocommit": True},
        check=lambda conn: _check_before_lending(pool, conn),
    )
    return pool


async def open_pool(
    database_url: str, *, min_size: int = 2, max_size: int = 10
) -> AsyncConnectionPool:
    """Create the database if needed, open a pool on it and bring its schema up to date;
    fails at once if Postgres does not answer (for commands; a service waits for it:
    ``open_when_reachable``)."""
    await ensure_database(database_url)
    pool = new_pool(database_url, min_size=min_size, max_size=max_size)
    try:
        await pool.open(wait=True)
        await _bring_up_to_date(pool)
    except BaseException:
        await pool.close()
        raise
    return pool


async def open_when_reachable(
    pool: AsyncConnectionPool,
    database_url: str,
    stop: asyncio.Event,
    who: str,
    unreachable: asyncio.Event | None = None,
) -> bool:
    """Open ``pool`` (from ``new_pool``) once Postgres answers, creating the database and
    applying the migrations first, trying again until it does or ``stop`` is set (False): a
    service started while Postgres is down waits for it, logging that once, instead of
    exiting. ``unreachable`` is set once a try failed."""
    outage = OutageLog(log, who, "postgres")
    backoff = 0.1
    while not stop.is_set():
        try:
            await ensure_database(database_url)
            if pool.closed:  # opened only once Postgres answered: no connection error per try
                await pool.open(wait=False)
            await _bring_up_to_date(pool)
        except psycopg.OperationalError as error:
            outage.failed(error)
            if unreachable is not None:
                unreachable.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), backoff)
            backoff = min(backoff * 2, 5.0)
        else:
            outage.succeeded()
            return True
    return False


async def _bring_up_to_date(pool: AsyncConnectionPool) -> None:
    async with pool.connection() as conn:
        applied = await migrate(conn)
        autovacuum = await (await conn.execute("show autovacuum")).fetchone()
    if applied:
        log.info("applied migrations %s", ", ".join(applied))
    if autovacuum != ("on",):
        # Seen here: the moves' statement prepared while `idempotency` was small kept its
        # sequential scan as the table grew, and a move's Postgres CPU grew fivefold in minutes.
        log.warning(
            "Postgres runs with autovacuum off: tables are never analyzed, so statements"
            " prepared while they were small keep plans that slow down as they grow"
            " (turn autovacuum on, or ANALYZE now and then)"
        )


async def _check_before_lending(pool: AsyncConnectionPool, conn: psycopg.AsyncConnection) -> None:
    """No request gets a dead connection (Postgres restarted, or ended it). A server that ends
    a connection says goodbye or closes the socket, which makes it readable: only then is a
    round trip spent checking it (a query per checkout cost every request a round trip). One
    dead connection means the others idle beside it are likely dead too: they are all checked
    (and replaced) at once, because the pool waits longer after each failed check (1 s, 2 s,
    ...) and a request would otherwise time out going through them one by one."""
    if _quiet(conn):
        return
    try:
        await AsyncConnectionPool.check_connection(conn)
    except psycopg.OperationalError:
        await pool.check()
        raise


def _quiet(conn: psycopg.AsyncConnection) -> bool:
    """Whether the server has sent nothing since the connection was last used (an idle
    autocommit connection is sent nothing while it lives)."""
    if conn.closed or conn.broken:
        return False
    poller = select.poll()
    try:
        poller.register(conn.fileno(), select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError, psycopg.OperationalError):
        return False


async def listening_connection(database_url: str, channel: str) -> psycopg.AsyncConnection:
    """A connection of its own that LISTENs on ``channel``. A connection lost without a goodbye
    (a network gone) is noticed in about 20 s, since nothing is sent to a listener otherwise;
    a Postgres restart closes it at once."""
    conn = await psycopg.AsyncConnection.connect(
        database_url,
        autocommit=True,
        keepalives=1,
        keepalives_idle=10,
        keepalives_interval=5,
        keepalives_count=2,
    )
    await conn.execute(f"LISTEN {channel}")
    return conn


async def ensure_database(database_url: str) -> None:
    """Create the database named in ``database_url`` unless it already exists.

    The target is tried first, so a role that may not connect to the maintenance database still
    works when its database exists.
    """
    try:
        conn = await psycopg.AsyncConnection.connect(
            database_url, connect_timeout=CONNECT_TIMEOUT_S
        )
    except psycopg.OperationalError as exc:
        if "does not exist" not in str(exc):
            raise
    else:
        await conn.close()
        return
    name = str(conninfo_to_dict(database_url).get("dbname") or "")
    if not name:
        raise ValueError(f"no database name in {database_url!r}")
    maintenance = make_conninfo(database_url, dbname=MAINTENANCE_DATABASE)
    async with await psycopg.AsyncConnection.connect(
        maintenance, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
    ) as conn:
        try:
            await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            log.info("created database %s", name)
        except (errors.DuplicateDatabase, errors.UniqueViolation):
            pass  # another process created it first


def migration_files() -> list[Path]:
    return sorted(MIGRATIONS_DIR.glob("*.sql"), key=lambda path: path.name)


async def migrate(conn: psycopg.AsyncConnection) -> list[str]:
    """Apply the migration files not yet recorded, in name order; return the names applied.

    Each file runs in its own transaction under an advisory lock, so processes starting at the
    same time apply every file exactly once. ``conn`` must be idle (no open transaction).
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " name text PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cursor = await conn.execute("SELECT name FROM schema_migrations")
        recorded = {name for (name,) in await cursor.fetchall()}
    applied: list[str] = []
    for path in migration_files():
        if path.name in recorded:
            continue
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            cursor = await conn.execute(
                "SELECT 1 FROM schema_migrations WHERE name = %s", (path.name,)
            )
            if await cursor.fetchone() is not None:
                continue  # applied by another process since we looked
            await conn.execute(path.read_text(encoding="utf-8").encode(), prepare=False)
            await conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (path.name,))
        applied.append(path.name)
    return applied


PARTITION_EVENTS = MIGRATIONS_DIR / "optional" / "partition_events.sql"


async def partition_events(conn: psycopg.AsyncConnection, partitions: int) -> int:
    """Partition the event log by stream into ``partitions`` (``PARTITION_EVENTS`` says when
    and why); return how many partitions it has. Under the migration lock, in one transaction;
    a log partitioned already is left as it is."""
    if not 1 <= partitions <= 1024:
        raise ValueError("partitions: 1 to 1024")
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute(
            "SELECT set_config('playtable.event_partitions', %s, true)", (str(partitions),)
        )
        await conn.execute(PARTITION_EVENTS.read_text(encoding="utf-8").encode(), prepare=False)
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass"
        )
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


# --- rows and the API ------------------------------------------------------------------------


def given_fields(update: msgspec.Struct) -> dict[str, Any]:
    """The fields a partial update (a PATCH body) sets: the others are left ``UNSET``."""
    fields = msgspec.structs.asdict(update)
    return {name: value for name, value in fields.items() if value is not msgspec.UNSET}


def set_clause(changes: Mapping[str, Any]) -> str:
    """An UPDATE's ``a = %(a)s, b = %(b)s`` for ``changes``, whose names are a Struct's fields
    (never a request's keys, so they are safe to put in SQL)."""
    return ", ".join(f"{name} = %({name})s" for name in changes)


def iso(moment: datetime | None) -> str | None:
    """A timestamp column as the API shows it."""
    return None if moment is None else moment.isoformat()
