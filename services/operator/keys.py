"""``playtable apps ...``: the operator's keys and client apps, straight in Postgres (no running
service or operator key needed), and the development app ``playtable stack`` prints a key of."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg import AsyncConnection

from shared.edge import apps
from shared.infra.db import open_pool
from shared.infra.settings import Settings

DEVELOPMENT_APP = "development"
DEVELOPMENT_LABEL = "playtable stack"
TOOLS_APP = "playtable tools"
"""The app the operator's client commands (``import``, ``bench``) act as, unless given a key."""


@asynccontextmanager
async def _transaction(settings: Settings) -> AsyncIterator[AsyncConnection]:
    """One transaction on the (migrated) database, for a command that runs once."""
    pool = await open_pool(settings.database_url, min_size=1, max_size=1)
    try:
        async with pool.connection() as conn, conn.transaction():
            yield conn
    finally:
        await pool.close()


async def create_app(
    settings: Settings, name: str, max_open_tables: int | None
) -> tuple[apps.CreatedApp, apps.CreatedKey]:
    """A new app with its first (secret) key, and a publishable key for its browsers."""
    async with _transaction(settings) as conn:
        created = await apps.create_app(conn, apps.CreateApp(name, max_open_tables))
        publishable = apps.CreateKey(scopes=["tables"], label="browsers", kind="publishable")
        return created, await apps.create_key(conn, created.app.app_id, publishable)


async def operator_key(settings: Settings, label: str) -> apps.CreatedKey:
    async with _transaction(settings) as conn:
        return await apps.create_key(conn, None, apps.CreateKey(label=label))


async def development_keys(settings: Settings) -> tuple[str, str]:
    """Fresh keys of the development app (the ones printed before are revoked): a secret key,
    for the API tour (docs/tour.md) and the app's own server, and a publishable key, for the
    web client."""
    secret = await fresh_key(settings, DEVELOPMENT_APP, DEVELOPMENT_LABEL, revoke_earlier=True)
    publishable = await fresh_key(
        settings,
        DEVELOPMENT_APP,
        f"{DEVELOPMENT_LABEL} web client",
        revoke_earlier=True,
        kind="publishable",
    )
    return secret, publishable


async def client_key(settings: Settings) -> str:
    """The key the operator's client commands send: ``PLAYTABLE_APP_KEY``, or a new key of the
    tools' app made in Postgres."""
    if settings.app_key:
        return settings.app_key
    return await fresh_key(settings, TOOLS_APP, "playtable cli")


async def fresh_key(
    settings: Settings,
    app_name: str,
    label: str,
    *,
    revoke_earlier: bool = False,
    kind: apps.KeyKind = "secret",
) -> str:
    """A new key of ``kind`` of the app named ``app_name`` (created the first time); with
    ``revoke_earlier``, the keys with the same label made before are revoked."""
    async with _transaction(settings) as conn:
        cursor = await conn.execute(
            "select app_id from apps where name = %s order by created_at limit 1",
            (app_name,),
        )
        row = await cursor.fetchone()
        if row is None:
            created = await apps.create_app(conn, apps.CreateApp(app_name))
            app_id = created.app.app_id
        else:
            app_id = row[0]
        if revoke_earlier:
            await conn.execute(
                "update api_keys set revoked_at = now()"
                " where app_id = %s and label = %s and revoked_at is null",
                (app_id, label),
            )
        scopes: list[apps.AppScope] = ["tables"] if kind == "publishable" else list(apps.APP_SCOPES)
        key = await apps.create_key(
            conn, app_id, apps.CreateKey(scopes=scopes, label=label, kind=kind)
        )
        return key.api_key


def run(command: str, settings: Settings, name: str, max_open_tables: int | None) -> int:
    if command == "create":
        created, publishable = asyncio.run(create_app(settings, name, max_open_tables))
        print(f"app {created.app.app_id} ({created.app.name})")
        print(f"secret key (your server's; every scope): X-API-Key: {created.key.api_key}")
        print(f"publishable key (for browsers; tables): X-API-Key: {publishable.api_key}")
    else:
        key = asyncio.run(operator_key(settings, name))
        print(f"operator key {key.key.key_id}")
        print(f"X-API-Key: {key.api_key}")
    print("shown once: only hashes are kept")
    return 0
