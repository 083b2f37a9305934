"""Who is asking, settled before a request's body is read: a Litestar guard runs before the
body is parsed and checked, so a request without valid credentials gets its 401 or 403 (never
a 400 that would tell a stranger what the body should hold), and a request that carries an app
key acts only on that app's tables and matches, whatever seat token or invitation it holds."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from shared.edge.apps import API_KEY_HEADER, OPERATOR, Caller, authenticate
from shared.edge.errors import not_found
from shared.edge.tokens import required_bearer_token

if TYPE_CHECKING:
    from litestar.connection import ASGIConnection
    from litestar.handlers.base import BaseRouteHandler
    from litestar.types import Guard
    from psycopg_pool import AsyncConnectionPool

    from shared.infra.settings import Settings

Authenticate = Callable[[Any, str, str | None], Awaitable[Caller]]
"""``apps.authenticate`` of a service's pool and settings: (headers, scope, secret_for) -> the
caller."""
OwnerOf = Callable[[str], Awaitable[str | None]]
"""The app that a resource named in the path (a table, a match) belongs to; a 404 if none."""

KEY_SCHEMES = frozenset({"appKey", "operatorKey"})
_CALLER = "playtable.caller"


def authenticator(pool: Callable[[], AsyncConnectionPool], settings: Settings) -> Authenticate:
    """``apps.authenticate`` with a service's pool (made when the service starts)."""
    return lambda headers, scope, secret_for: authenticate(
        pool(), settings, headers, scope, secret_for=secret_for
    )


def access_guard(
    check_key: Authenticate,
    app_scope: str,
    owners: dict[str, OwnerOf],
    *,
    secret_for: str | None = None,
) -> Guard:
    """The guard of a service whose app keys need ``app_scope``; ``owners`` by path parameter
    (``match_id``: the match's app); ``secret_for``: what every app route of the service does,
    if only a secret key may. An API key sent is checked wherever a route takes one or
    names an app's resource; one is demanded where every way of calling the route needs it; a
    seat token or invitation where every way needs one."""

    async def guard(
        connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
    ) -> None:
        if connection.scope.get("method") == "OPTIONS":
            return  # names the path's methods, and nothing of what it holds
        security = [set(way) for way in getattr(handler, "resolve_security", list)()]
        named = {
            param: connection.path_params[param]
            for param in owners
            if param in connection.path_params
        }
        takes_key = any(way & KEY_SCHEMES for way in security)
        needs_key = bool(security) and all(way & KEY_SCHEMES for way in security)
        sent_key = bool(connection.headers.get(API_KEY_HEADER))
        if needs_key or (sent_key and (takes_key or named)):
            scope = OPERATOR if any("operatorKey" in way for way in security) else app_scope
            caller = await check_key(connection.headers, scope, secret_for)
            connection.scope.setdefault("state", {})[_CALLER] = (scope, caller)
            for param, ident in named.items():
                if await owners[param](ident) != caller.app_id:
                    raise not_found(param.removesuffix("_id"), ident)
        elif security and all(way and not way & KEY_SCHEMES for way in security):
            required_bearer_token(connection)  # type: ignore[arg-type]

    return guard


def known_caller(connection: ASGIConnection[Any, Any, Any, Any], scope: str) -> Caller | None:
    """The caller the guard authenticated for ``scope``, so the handler asks Postgres once."""
    known = connection.scope.get("state", {}).get(_CALLER)
    return known[1] if known is not None and known[0] == scope else None
