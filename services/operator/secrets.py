"""``playtable secrets``: a new key for the keyring, and re-sealing every secret at rest under
the keyring's first key so that the keys after it can be dropped.

Rotating: put a new key first in ``PLAYTABLE_SECRET_KEYS`` (``new:...,old:...``) everywhere and
restart; ``playtable secrets rotate``; then drop the old key and restart again. Idempotency
records cannot be re-sealed (each is sealed with its caller's credential too, which is not
stored): those sealed under a dropped key are no longer replayed (a retry then gets 422).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from shared.infra.db import open_pool
from shared.infra.sealed import SEALED_COLUMNS, seal_rows
from shared.infra.secretbox import MARKER, KeyringError, new_entry
from shared.infra.settings import Settings

_UNSEALED_RECORDS = """
delete from idempotency where substring(body from 1 for %s) <> %s
"""
"""Idempotency records not sealed under a keyring (written by a copy of an earlier version
during an upgrade, under the caller's credential alone): never replayed, so removed."""


def new_key_entry(key_id: str | None) -> str:
    return new_entry(key_id or datetime.now(UTC).strftime("k%Y%m%d%H%M%S"))


async def rotate(settings: Settings) -> tuple[int, int]:
    """Re-seal every sealed column's values under the first key; remove unsealed idempotency
    records. How many values were re-sealed and records removed."""
    keyring = settings.keyring()
    pool = await open_pool(settings.database_url, min_size=1, max_size=1)
    try:
        async with pool.connection() as conn:
            resealed = await seal_rows(conn, keyring, SEALED_COLUMNS, rotate=True)
            marker = f"{MARKER}:".encode()
            removed = await conn.execute(_UNSEALED_RECORDS, (len(marker), marker))
            return resealed, removed.rowcount
    finally:
        await pool.close()


def run(command: str, settings: Settings, key_id: str | None = None) -> int:
    if command == "new-key":
        print(new_key_entry(key_id))
        return 0
    try:
        resealed, removed = asyncio.run(rotate(settings))
    except KeyringError as error:  # a key dropped before its values were re-sealed
        print(f"cannot re-seal: {error}; put that key back after the first", file=sys.stderr)
        return 1
    primary = settings.keyring().primary
    print(
        f"{resealed} secret(s) re-sealed under key {primary!r}, every one now is;"
        f" {removed} unsealed idempotency record(s) removed. The keyring's other keys open only"
        " idempotency records now (dropping them ends those records' replays)."
    )
    return 0
