"""Idempotency-Key support: a retried request gets the first answer and changes nothing twice."""

from __future__ import annotations

import hashlib

import msgspec
from psycopg import AsyncConnection

from shared.http import Problem


class Recorded(msgspec.Struct, frozen=True):
    status: int
    body: bytes


def request_fingerprint(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


async def recall(conn: AsyncConnection, scope: str, key: str, fingerprint: str) -> Recorded | None:
    """The stored answer for this key, if any; a different request under the same key is a 422."""
    cursor = await conn.execute(
        "select request_hash, status, body from idempotency where scope = %s and key = %s",
        (scope, key),
    )
    row = await cursor.fetchone()
    if row is None:
        return None
    if row[0] != fingerprint:
        raise Problem(
            422,
            "idempotency-key-reused",
            "Idempotency-Key reused",
            "this key was already used for a different request",
        )
    return Recorded(status=row[1], body=bytes(row[2]))


async def remember(
    conn: AsyncConnection, scope: str, key: str, fingerprint: str, status: int, body: bytes
) -> None:
    """Store the answer inside the caller's transaction, beside the change it reports."""
    await conn.execute(
        "insert into idempotency (scope, key, request_hash, status, body)"
        " values (%s, %s, %s, %s, %s)",
        (scope, key, fingerprint, status, body),
    )
