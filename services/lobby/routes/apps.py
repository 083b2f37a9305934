"""The operator's routes: client apps, their API keys and quotas."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from services.lobby.lobby import Lobby
from shared.edge import apps
from shared.edge.contract import (
    OPERATOR_KEY,
    problem_responses,
)


class AppsController(Controller):
    """The operator's: client apps, their API keys and quotas."""

    path = "/apps"
    tags = ["apps"]
    security = OPERATOR_KEY

    @post(
        "/",
        operation_id="createApp",
        summary="Register a client app; the answer holds its first API key (shown once)",
        responses=problem_responses(400, 401, 403, 503),
    )
    async def create_app(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        data: JSONBody[apps.CreateApp],
    ) -> apps.CreatedApp:
        await lobby.caller(request, apps.OPERATOR)
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            return await apps.create_app(conn, data)

    @get(
        "/",
        operation_id="listApps",
        summary="Every client app, oldest first",
        responses=problem_responses(401, 403, 503),
    )
    async def list_apps(
        self, request: Request[Any, Any, Any], lobby: NamedDependency[Lobby]
    ) -> list[apps.AppInfo]:
        await lobby.caller(request, apps.OPERATOR)
        async with lobby.runtime.pool.connection() as conn:
            return await apps.list_apps(conn)

    @get(
        "/{app_id:str}",
        operation_id="getApp",
        summary="One client app",
        responses=problem_responses(401, 403, 404, 503),
    )
    async def get_app(
        self, request: Request[Any, Any, Any], lobby: NamedDependency[Lobby], app_id: FromPath[str]
    ) -> apps.AppInfo:
        await lobby.caller(request, apps.OPERATOR)
        async with lobby.runtime.pool.connection() as conn:
            return await apps.app_info(conn, app_id)

    @patch(
        "/{app_id:str}",
        operation_id="updateApp",
        summary="Rename an app or change its quota of tables waiting for players",
        responses=problem_responses(400, 401, 403, 404, 503),
    )
    async def update_app(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        app_id: FromPath[str],
        data: JSONBody[apps.UpdateApp],
    ) -> apps.AppInfo:
        await lobby.caller(request, apps.OPERATOR)
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            return await apps.update_app(conn, app_id, data)

    @post(
        "/{app_id:str}/keys",
        operation_id="createApiKey",
        summary="A new API key for the app, of the kind and with the scopes asked for (shown once)",
        description=(
            "A `secret` key stays on the app's server; a `publishable` key may be shipped to"
            " browsers: it holds only `tables` and creates, lists, reads and joins tables, and"
            " seats or removes bots with a seat's token at that table, while re-seating,"
            " invitations, imports, webhooks, tables of bots only and bots seated without a"
            " seat's token need a secret key."
        ),
        responses=problem_responses(400, 401, 403, 404, 422, 503),
    )
    async def create_key(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        app_id: FromPath[str],
        data: JSONBody[apps.CreateKey],
    ) -> apps.CreatedKey:
        await lobby.caller(request, apps.OPERATOR)
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            return await apps.create_key(conn, app_id, data)

    @get(
        "/{app_id:str}/keys",
        operation_id="listApiKeys",
        summary="The app's API keys (never the keys themselves), revoked ones included",
        responses=problem_responses(401, 403, 404, 503),
    )
    async def list_keys(
        self, request: Request[Any, Any, Any], lobby: NamedDependency[Lobby], app_id: FromPath[str]
    ) -> list[apps.KeyInfo]:
        await lobby.caller(request, apps.OPERATOR)
        async with lobby.runtime.pool.connection() as conn:
            return await apps.list_keys(conn, app_id)

    @delete(
        "/{app_id:str}/keys/{key_id:str}",
        operation_id="revokeApiKey",
        status_code=200,
        summary="Revoke a key: refused from the next request on",
        responses=problem_responses(401, 403, 404, 503),
    )
    async def revoke_key(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        app_id: FromPath[str],
        key_id: FromPath[str],
    ) -> apps.KeyInfo:
        await lobby.caller(request, apps.OPERATOR)
        pool = lobby.runtime.pool
        async with apps.changing_keys(pool):
            async with pool.connection() as conn, conn.transaction():
                revoked = await apps.revoke_key(conn, app_id, key_id)
        return revoked
