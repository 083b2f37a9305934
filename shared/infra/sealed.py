"""The columns that hold secrets sealed under the keyring (``shared/infra/secretbox.py``), and how
their rows are sealed: at start by the service that owns them (rows written in plaintext before
secrets were sealed) and by ``playtable secrets rotate`` (every row, under the first key).

Sealing a row changes it only from the value read, so copies that seal at once, or a webhook
secret rotated meanwhile, never lose a secret: the loser of a race finds the row changed and
reads it again.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import AsyncConnection

from shared.infra.secretbox import MARKER, Keyring, is_sealed


@dataclass(frozen=True)
class SealedColumn:
    table: str
    id_column: str
    column: str
    purpose: str
    """Names what the value is, in its authenticated context (with the row's id): a value of
    one purpose or row never opens as another's."""

    def context(self, row_id: str) -> str:
        return f"{self.purpose}:{row_id}"


WEBHOOK_SECRET = SealedColumn("webhook_subscriptions", "id", "secret", "webhook-secret")
WEBHOOK_PREVIOUS_SECRET = SealedColumn(
    "webhook_subscriptions", "id", "previous_secret", "webhook-secret"
)
"""Both columns seal with one context, since rotating moves the secret from one to the other."""
HOSTING_SECRET = SealedColumn("hosting_secrets", "name", "secret", "hosting-secret")
SEALED_COLUMNS = (WEBHOOK_SECRET, WEBHOOK_PREVIOUS_SECRET, HOSTING_SECRET)
WEBHOOK_COLUMNS = (WEBHOOK_SECRET, WEBHOOK_PREVIOUS_SECRET)


async def seal_rows(
    conn: AsyncConnection, keyring: Keyring, columns: tuple[SealedColumn, ...], *, rotate: bool
) -> int:
    """Seal the plaintext values of ``columns`` (``rotate``: re-seal every value not sealed
    under the keyring's first key); how many values changed."""
    unsealed = f"{MARKER}:{keyring.primary}:" if rotate else f"{MARKER}:"
    changed = 0
    for sealed in columns:
        table, id_column, column = sealed.table, sealed.id_column, sealed.column
        while True:
            cursor = await conn.execute(
                f"SELECT {id_column}, {column} FROM {table}"
                f" WHERE {column} IS NOT NULL AND left({column}, %s) <> %s",
                (len(unsealed), unsealed),
            )
            rows = await cursor.fetchall()
            raced = False
            for row_id, stored in rows:
                resealed = keyring.reseal(stored, sealed.context(row_id))
                if resealed is None:
                    continue
                cursor = await conn.execute(
                    f"UPDATE {table} SET {column} = %s WHERE {id_column} = %s AND {column} = %s",
                    (resealed, row_id, stored),
                )
                changed += cursor.rowcount
                raced = raced or cursor.rowcount == 0
            if not raced:
                break
    return changed


def opened(keyring: Keyring, sealed: SealedColumn, row_id: str, stored: str) -> str:
    """A stored value in the clear: opened if sealed, else as it is (a row written in plaintext
    by a copy of an earlier version, until a start or a rotation seals it)."""
    if not is_sealed(stored):
        return stored
    return keyring.open(stored, sealed.context(row_id)).decode()
