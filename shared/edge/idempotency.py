"""Idempotency-Key support: a retried request gets the first answer and changes nothing twice.

A record belongs to the caller who made it: its scope carries a hash of the caller's credential
(an app's API key, a seat's token or an invitation), so the same key under other credentials
is another request, never answered the first caller's reply. The reply is stored sealed
(AES-GCM, ``shared/infra/secretbox.py``) under a key derived from the server's keyring and from that
credential and the Idempotency-Key: a row read from the database opens with neither alone, so
the seat tokens and invitations some replies carry are never stored readable, even where the
credential is no secret (a publishable key, which every browser holds; an app's id).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated, Any

import msgspec
from litestar import Response
from litestar.datastructures import ResponseHeader
from litestar.params import HeaderParameter
from psycopg import AsyncConnection

from shared.edge.errors import Problem
from shared.edge.tokens import hash_token
from shared.infra.secretbox import Keyring, KeyringError

IDEMPOTENCY_KEY_MAX = 255
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        required=False,
        min_length=1,
        max_length=IDEMPOTENCY_KEY_MAX,
        description=(
            "Retrying with the same key returns the first answer and changes nothing twice;"
            " the repeated answer says `Idempotent-Replayed: true`"
        ),
    ),
]
"""The header every state-changing POST accepts."""
REPLAYED_HEADER = "Idempotent-Replayed"
IDEMPOTENT_ANSWER_HEADERS = [
    ResponseHeader(
        name=REPLAYED_HEADER,
        description=(
            "`true` on an answer that repeats the first one to the same Idempotency-Key (nothing"
            " was done this time); absent on a first answer"
        ),
        documentation_only=True,
    )
]
"""Route arguments documenting ``json_answer``'s header on the operations that take an
Idempotency-Key."""


def json_answer(body: bytes, status: int, *, replayed: bool) -> Response[Any]:
    """A JSON answer (already encoded) to a request that may have been a retry."""
    headers = {REPLAYED_HEADER: "true"} if replayed else None
    return Response(
        content=body, status_code=status, media_type="application/json", headers=headers
    )


class Recorded(msgspec.Struct, frozen=True):
    status: int
    body: bytes


class Idempotent(msgspec.Struct, frozen=True):
    """One request under an Idempotency-Key, by one caller: where its record lives, what it
    asked (``fingerprint``) and how its reply is sealed."""

    scope: str
    key: str
    fingerprint: str
    credential: str

    def seal(self, body: bytes, keyring: Keyring) -> bytes:
        return keyring.seal(body, self._context(), bound=self._credential_key()).encode()

    def unseal(self, sealed: bytes, keyring: Keyring) -> bytes:
        try:
            return keyring.open(sealed.decode(), self._context(), bound=self._credential_key())
        except (KeyringError, UnicodeDecodeError):  # its key left the keyring, or a corrupt row
            raise Problem(
                422,
                "idempotency-key-reused",
                "Idempotency-Key reused",
                "this key's record cannot be read back: use a new key",
            ) from None

    def _context(self) -> str:
        return f"idempotency\0{self.scope}\0{self.key}"

    def _credential_key(self) -> bytes:
        return hmac.new(self.credential.encode(), self._context().encode(), hashlib.sha256).digest()


def idempotent(
    scope: str, key: str | None, credential: str, *parts: bytes | str
) -> Idempotent | None:
    """The request's idempotency, for ``credential``'s bearer (``None`` without a key)."""
    if key is None:
        return None
    return Idempotent(
        scope=f"{scope}:{hash_token(credential)[:32]}",
        key=key,
        fingerprint=request_fingerprint(*parts),
        credential=credential,
    )


def request_fingerprint(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


async def recall(conn: AsyncConnection, keyring: Keyring, request: Idempotent) -> Recorded | None:
    """The stored answer for this key, if any; a different request under the same key is a 422.

    Called first in the transaction that does the request's work, it holds the key until that
    transaction ends: a retry sent while the first is still in flight (its client gave up
    waiting) waits for it, then reads its answer, rather than doing the work again (a second
    table) or being refused by the first's change (409 table-started)."""
    await conn.execute(
        "select pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (f"idempotency {request.scope} {request.key}",),
    )
    cursor = await conn.execute(
        "select request_hash, status, body from idempotency where scope = %s and key = %s",
        (request.scope, request.key),
    )
    row = await cursor.fetchone()
    if row is None:
        return None
    if row[0] != request.fingerprint:
        raise Problem(
            422,
            "idempotency-key-reused",
            "Idempotency-Key reused",
            "this key was already used for a different request",
        )
    return Recorded(status=row[1], body=request.unseal(bytes(row[2]), keyring))


async def remember(
    conn: AsyncConnection, keyring: Keyring, request: Idempotent, status: int, body: bytes
) -> None:
    """Store the answer, sealed, inside the caller's transaction, beside the change it reports."""
    await conn.execute(
        "insert into idempotency (scope, key, request_hash, status, body)"
        " values (%s, %s, %s, %s, %s)",
        (request.scope, request.key, request.fingerprint, status, request.seal(body, keyring)),
    )
