"""Client apps and the operator: who sends a request, told by its API key.

An app's key (``X-API-Key``) is shown once, kept only as its hash, revocable, and carries scopes
(``tables``, ``webhooks``) and a kind, as payment APIs' keys do: a ``secret`` key stays on the
app's server and may do all its scopes allow; a ``publishable`` key is meant to be shipped to
browsers, so it is no secret: it creates, lists and joins tables (and players play with their
seat tokens), and anything else (bots, re-seating, invitations, webhooks) needs a secret key.
The kind shows in the key itself (``pt_sk_``, ``pt_pk_``; keys made before kinds, ``pt_``, are
secret), so the rate limiter can give a publishable key's buckets per client address without
asking Postgres. What an app creates (tables, so their matches, and webhook
subscriptions) is its own: another app neither sees nor changes it. The operator's key (the
``PLAYTABLE_OPERATOR_KEY`` setting, or one made with ``playtable apps operator-key``) manages
apps, their keys and quotas and nothing else. Seat tokens and invitations stay a player's.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, cast

import msgspec
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from shared.domain.messages import new_id
from shared.edge.contract import Timestamp
from shared.edge.errors import Problem, not_found
from shared.edge.tokens import hash_token, new_token
from shared.infra.db import given_fields, iso, set_clause
from shared.infra.keycache import KeyRow, key_cache
from shared.infra.settings import Settings

API_KEY_HEADER = "X-API-Key"
AppScope = Literal["tables", "webhooks"]
KeyKind = Literal["secret", "publishable"]
APP_SCOPES: tuple[AppScope, ...] = ("tables", "webhooks")
OPERATOR = "operator"
"""The operator's only scope: an operator key acts on no app's tables or subscriptions."""
ENVIRONMENT_KEY_ID = "environment"
"""The key id the operator key of the settings goes by."""
KEY_PREFIX = "pt_"
"""Marks an API key, so one pasted where a seat token goes is told apart (and leak scanners
can find one)."""
KIND_PREFIXES: dict[KeyKind, str] = {
    "secret": KEY_PREFIX + "sk_",
    "publishable": KEY_PREFIX + "pk_",
}
PUBLISHABLE_PREFIX = KIND_PREFIXES["publishable"]


def is_publishable(raw_key: str) -> bool:
    """Whether a key, by its look alone, is publishable (the rate limiter's question: a forged
    one is refused by ``authenticate`` all the same)."""
    return raw_key.startswith(PUBLISHABLE_PREFIX)


class Caller(msgspec.Struct, frozen=True):
    """An authenticated request's sender. ``credential`` is the raw key: never stored, it seals
    the sender's idempotency records (``shared/edge/idempotency.py``)."""

    key_id: str
    app_id: str | None
    scopes: tuple[str, ...]
    credential: str
    kind: KeyKind = "secret"

    def require_secret(self, action: str) -> None:
        """Refuse a publishable key (a browser's, so anyone's) what only the app may do."""
        if self.kind != "secret":
            raise Problem(
                403,
                "secret-key-required",
                "Secret key required",
                f"{action} needs the app's secret key; a publishable key cannot",
            )


AppName = Annotated[str, msgspec.Meta(min_length=1, max_length=80)]
TableQuota = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]
KeyLabel = Annotated[str, msgspec.Meta(max_length=80)]


class CreateApp(msgspec.Struct, forbid_unknown_fields=True):
    name: AppName
    max_open_tables: TableQuota | None = None
    """Tables the app may have waiting for players at once (null: the deployment's default)."""


class UpdateApp(msgspec.Struct, forbid_unknown_fields=True):
    max_open_tables: TableQuota | None | msgspec.UnsetType = msgspec.UNSET
    name: AppName | msgspec.UnsetType = msgspec.UNSET


class CreateKey(msgspec.Struct, forbid_unknown_fields=True):
    scopes: Annotated[list[AppScope], msgspec.Meta(min_length=1)] = msgspec.field(
        default_factory=lambda: list(APP_SCOPES)
    )
    label: KeyLabel = ""
    kind: KeyKind = "secret"
    """``publishable`` for a key shipped to browsers: ``tables`` is its only scope."""


class AppInfo(msgspec.Struct):
    app_id: str
    name: str
    max_open_tables: int | None
    created_at: Timestamp


class KeyInfo(msgspec.Struct):
    key_id: str
    app_id: str | None
    kind: KeyKind
    scopes: list[str]
    label: str
    created_at: Timestamp
    revoked_at: Timestamp | None


class CreatedKey(msgspec.Struct):
    key: KeyInfo
    api_key: str
    """Send it as ``X-API-Key: <api_key>``. Shown only once: only its hash is kept."""


class CreatedApp(msgspec.Struct):
    app: AppInfo
    key: CreatedKey
    """The app's first key, with every app scope."""


# --- who is asking ---------------------------------------------------------------------------


async def authenticate(
    pool: AsyncConnectionPool,
    settings: Settings,
    headers: Any,
    scope: str,
    *,
    secret_for: str | None = None,
) -> Caller:
    """The sender of a request with its ``X-API-Key``, if that key holds ``scope``: a 401 for a
    missing, unknown or revoked key, a 403 for one without the scope (or, with ``secret_for``,
    what the route does, a publishable key: 403 ``secret-key-required``). A process that caches
    keys (``shared/infra/keycache.py``) asks Postgres only about a key it has not read since the
    last change of any key."""
    raw = headers.get(API_KEY_HEADER)
    if not raw:
        raise Problem(
            401,
            "api-key-required",
            "API key required",
            f"send your app's key as '{API_KEY_HEADER}: <key>'",
        )
    caller = await _caller(pool, settings, raw)
    if secret_for is not None:
        caller.require_secret(secret_for)
    if scope not in caller.scopes:
        raise Problem(
            403, "scope-missing", "Scope missing", f"this key does not hold the {scope!r} scope"
        )
    return caller


async def _caller(pool: AsyncConnectionPool, settings: Settings, raw: str) -> Caller:
    hashed = hash_token(raw)
    if settings.operator_key and hmac.compare_digest(hashed, _hashed(settings.operator_key)):
        return Caller(ENVIRONMENT_KEY_ID, None, (OPERATOR,), raw)
    cache = key_cache(pool)
    read = functools.partial(_key_row, pool)
    row = await (read(hashed) if cache is None else cache.row(hashed, read))
    if row is None:
        raise Problem(
            401, "unknown-api-key", "Unknown API key", "this key is not known or was revoked"
        )
    return Caller(row[0], row[1], row[2], raw, cast(KeyKind, row[3]))


@functools.lru_cache(maxsize=1)
def _hashed(operator_key: str) -> str:
    """The operator key's hash, made once (it is the same for every request)."""
    return hash_token(operator_key)


async def _key_row(pool: AsyncConnectionPool, key_hash: str) -> KeyRow | None:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "select key_id, app_id, scopes, kind from api_keys"
            " where key_hash = %s and revoked_at is null",
            (key_hash,),
        )
        row = await cursor.fetchone()
    return None if row is None else (row[0], row[1], tuple(row[2]), row[3])


@contextlib.asynccontextmanager
async def changing_keys(pool: AsyncConnectionPool) -> AsyncIterator[None]:
    """Around a transaction (on ``pool``) that changes keys: once it committed, this process
    forgets the keys it knew at once and answers after it heard of the change, as every other
    process does (``shared/infra/keycache.py``)."""
    cache = key_cache(pool)
    mark = cache.heard if cache is not None else 0
    yield
    if cache is not None:
        await cache.forget_changed(mark)


# --- apps and keys (the operator's) ----------------------------------------------------------


async def create_app(conn: AsyncConnection, body: CreateApp) -> CreatedApp:
    """A new app with a first key holding every app scope."""
    app_id = new_id()
    await conn.execute(
        "insert into apps (app_id, name, max_open_tables) values (%s, %s, %s)",
        (app_id, body.name, body.max_open_tables),
    )
    key = await create_key(conn, app_id, CreateKey(label="first key"))
    return CreatedApp(app=await app_info(conn, app_id), key=key)


async def list_apps(conn: AsyncConnection) -> list[AppInfo]:
    cursor = await conn.execute(f"select {_APP_COLUMNS} from apps order by created_at, app_id")
    return [_app(row) for row in await cursor.fetchall()]


async def app_info(conn: AsyncConnection, app_id: str) -> AppInfo:
    cursor = await conn.execute(f"select {_APP_COLUMNS} from apps where app_id = %s", (app_id,))
    row = await cursor.fetchone()
    if row is None:
        raise not_found("app", app_id)
    return _app(row)


async def update_app(conn: AsyncConnection, app_id: str, body: UpdateApp) -> AppInfo:
    changes = given_fields(body)
    if changes:
        await conn.execute(
            f"update apps set {set_clause(changes)} where app_id = %(app_id)s",
            {**changes, "app_id": app_id},
        )
    return await app_info(conn, app_id)


async def create_key(conn: AsyncConnection, app_id: str | None, body: CreateKey) -> CreatedKey:
    """A new key for the app (``None``: an operator key); only its hash is stored."""
    if app_id is not None:
        await app_info(conn, app_id)
    if app_id is None:
        kind: KeyKind = "secret"
        scopes = [OPERATOR]
    else:
        kind = body.kind
        scopes = sorted(set(body.scopes))
        if kind == "publishable" and scopes != ["tables"]:
            raise Problem(
                422,
                "publishable-scope",
                "Scope not for a publishable key",
                "a publishable key holds only the 'tables' scope: webhooks need a secret key",
            )
    key_id, raw = new_id(), KIND_PREFIXES[kind] + new_token()
    await conn.execute(
        "insert into api_keys (key_id, app_id, key_hash, scopes, label, kind)"
        " values (%s, %s, %s, %s, %s, %s)",
        (key_id, app_id, hash_token(raw), scopes, body.label, kind),
    )
    return CreatedKey(key=await _key(conn, app_id, key_id), api_key=raw)


async def list_keys(conn: AsyncConnection, app_id: str) -> list[KeyInfo]:
    await app_info(conn, app_id)
    cursor = await conn.execute(
        f"select {_KEY_COLUMNS} from api_keys where app_id = %s order by created_at, key_id",
        (app_id,),
    )
    return [_key_info(row) for row in await cursor.fetchall()]


async def revoke_key(conn: AsyncConnection, app_id: str, key_id: str) -> KeyInfo:
    """Refuse the key from now on (its row stays, to show when it was revoked)."""
    await conn.execute(
        "update api_keys set revoked_at = coalesce(revoked_at, now())"
        " where app_id = %s and key_id = %s",
        (app_id, key_id),
    )
    return await _key(conn, app_id, key_id)


async def _key(conn: AsyncConnection, app_id: str | None, key_id: str) -> KeyInfo:
    cursor = await conn.execute(
        f"select {_KEY_COLUMNS} from api_keys where key_id = %s and app_id is not distinct from %s",
        (key_id, app_id),
    )
    row = await cursor.fetchone()
    if row is None:
        raise not_found("key", key_id)
    return _key_info(row)


_APP_COLUMNS = "app_id, name, max_open_tables, created_at"
_KEY_COLUMNS = "key_id, app_id, kind, scopes, label, created_at, revoked_at"


def _app(row: tuple[Any, ...]) -> AppInfo:
    return AppInfo(
        app_id=row[0], name=row[1], max_open_tables=row[2], created_at=row[3].isoformat()
    )


def _key_info(row: tuple[Any, ...]) -> KeyInfo:
    return KeyInfo(
        key_id=row[0],
        app_id=row[1],
        kind=row[2],
        scopes=list(row[3]),
        label=row[4],
        created_at=row[5].isoformat(),
        revoked_at=iso(row[6]),
    )
