"""The tables' routes: create, list, read and follow tables, their invitations, closing."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from services.lobby import schemas as s
from services.lobby.checks import not_private
from services.lobby.feed import TableFeeds
from services.lobby.lobby import Lobby
from shared.domain import rules_api
from shared.domain.messages import Actor
from shared.edge.contract import (
    APP_KEY,
    OPTIONAL_SEAT_TOKEN,
    SECRET_KEY,
    SECRET_KEY_OR_SEATED,
    problem_responses,
)
from shared.edge.feed_http import (
    FEED_ROUTE,
    FEED_TICKET_ROUTE,
    FeedAfter,
    FeedTicketQuery,
    LastEventId,
    LiveFeed,
    give_ticket,
    open_feed,
)
from shared.edge.feed_tickets import FeedTicket
from shared.edge.idempotency import (
    IDEMPOTENT_ANSWER_HEADERS,
    IdempotencyKey,
    idempotent,
)
from shared.edge.paging import TableCursor
from shared.edge.tokens import bearer_token

_json = msgspec.json.Encoder()


class TablesController(Controller):
    path = "/tables"
    tags = ["tables"]

    @post(
        "/",
        operation_id="createTable",
        response_headers=IDEMPOTENT_ANSWER_HEADERS,
        security=APP_KEY,
        summary="Create a table for a game (a private one answers with its invitation token, once)",
        description="The table belongs to the app whose key creates it: only that app lists it,"
        " seats its players and gets its events by webhook. An app may have as many tables"
        " waiting for players as its quota allows (429 `table-quota-reached` beyond)."
        " `hosting` sets its match's clock and what happens when a player is slow or leaves;"
        " `bots` seats the game's bots (its catalogue entry lists them) at once. A table of"
        " bots only starts as it is created: its `match_id` is set (`getMatch` shows"
        " `status: creating` until the match exists); only the app's secret key creates one"
        " (a publishable key leaves a seat for a person: 403 `secret-key-required`, as a match"
        " that plays itself costs the server and no one plays it).",
        responses=problem_responses(400, 401, 403, 404, 422, 503),
    )
    async def create_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        data: JSONBody[s.CreateTable],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.CreatedTable]:
        caller = await lobby.caller(request, "tables")
        if len(data.bots) >= data.seats:
            caller.require_secret("creating a table of bots only")
        if data.seats_per_invitation is not None and data.visibility != "private":
            raise not_private()
        game = await lobby.game(data.game)
        options = await lobby.runtime.ask_rules(
            rules_api.ResolveOptions(game=data.game, options=data.options, seats=data.seats),
            dict[str, Any],
        )
        secrets = await lobby.secret_options()

        async def work(conn: Any) -> s.CreatedTable:
            table, invitation = await lobby.tables.create(
                conn,
                data,
                game.title,
                options,
                secrets.get(data.game, set()),
                Actor(kind="player"),
                caller.app_id,
            )
            return s.CreatedTable(**msgspec.structs.asdict(table), invitation_token=invitation)

        body = _json.encode(data)
        request_id = idempotent("lobby:create-table", idempotency_key, caller.credential, body)
        response = await lobby.once(request_id, work, 201)
        if len(data.bots) == data.seats:
            lobby.commands.wake()  # a table of bots only started: its match is asked for now
        return response

    @get(
        "/",
        operation_id="listTables",
        security=APP_KEY,
        summary="The app's public tables, oldest first, a page at a time",
        description="`status` picks open, started or closed tables; `match_status` only those"
        " whose match is `running` (to watch) or `finished`.",
        responses=problem_responses(400, 401, 403, 503),
    )
    async def list_tables(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        status: FromQuery[s.TableStatus | None] = None,
        match_status: FromQuery[s.MatchStatusFilter | None] = None,
        game: FromQuery[str | None] = None,
        cursor: TableCursor = None,
        limit: Annotated[int, QueryParameter(ge=1, le=200)] = 50,
    ) -> s.TablePage:
        caller = await lobby.caller(request, "tables")
        secrets = await lobby.secret_options()
        async with lobby.runtime.pool.connection() as conn:
            return await lobby.tables.page(
                conn,
                app_id=caller.app_id,
                status=status,
                match_status=match_status,
                game=game,
                cursor=cursor,
                limit=limit,
                secret_options=secrets,
            )

    @get(
        "/{table_id:str}",
        operation_id="getTable",
        security=OPTIONAL_SEAT_TOKEN,
        summary="One table with its seats (a private one: for its invitation or a seat token)",
        responses=problem_responses(401, 403, 404, 503),
    )
    async def get_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
    ) -> s.TableInfo:
        token = bearer_token(request)
        secrets = await lobby.secret_options()
        async with lobby.runtime.pool.connection() as conn:
            return await lobby.tables.seen_by(conn, table_id, token, secrets)

    @get(
        "/{table_id:str}/feed",
        operation_id="followTable",
        summary="Live Server-Sent Events of the table: seats taken and left, the match started",
        description=(
            "Each event once, in order: `id` is its version, `event` its type, `data` the"
            " event without the table's secrets. Resume with `Last-Event-ID`. A browser opens a"
            " private table's feed with a ticket (createTableFeedTicket)."
        ),
        **FEED_ROUTE,
    )
    async def follow_table(
        self,
        request: Request[Any, Any, Any],
        table_feeds: NamedDependency[TableFeeds],
        table_id: FromPath[str],
        last_event_id: LastEventId = None,
        after: FeedAfter = None,
        ticket: FeedTicketQuery = None,
    ) -> LiveFeed:
        follow = partial(table_feeds.follow, table_id)
        tickets = table_feeds.tickets
        return await open_feed(follow, request, last_event_id, after, ticket, tickets)

    @post(
        "/{table_id:str}/feed-tickets",
        operation_id="createTableFeedTicket",
        summary="A single-use ticket that opens the table's feed (`?ticket=`) as the token would",
        **FEED_TICKET_ROUTE,
    )
    async def create_table_feed_ticket(
        self,
        request: Request[Any, Any, Any],
        table_feeds: NamedDependency[TableFeeds],
        table_id: FromPath[str],
    ) -> FeedTicket:
        check = partial(table_feeds.check, table_id)
        return await give_ticket(request, table_feeds.tickets, check)

    @post(
        "/{table_id:str}/invitation",
        operation_id="rotateInvitation",
        security=SECRET_KEY,
        status_code=200,
        summary="A new invitation for one of the app's private tables while it is open; the one"
        " before stops working (shown once)",
        description="Only with the app's secret key (a publishable key: 403"
        " `secret-key-required`).",
        responses=problem_responses(401, 403, 404, 409, 422, 503),
    )
    async def rotate_invitation(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
    ) -> s.Invitation:
        caller = await lobby.caller(request, "tables")
        caller.require_secret("rotating an invitation")
        assert caller.app_id is not None  # the tables scope is only an app's
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            token = await lobby.tables.rotate_invitation(conn, table_id, caller.app_id)
        return s.Invitation(invitation_token=token)

    @delete(
        "/{table_id:str}/invitation",
        operation_id="revokeInvitation",
        security=SECRET_KEY,
        status_code=200,
        summary="Revoke the invitation of one of the app's private tables while it is open: no one"
        " else sees or joins it (the seated stay)",
        description="Only with the app's secret key (a publishable key: 403"
        " `secret-key-required`).",
        responses=problem_responses(401, 403, 404, 409, 422, 503),
    )
    async def revoke_invitation(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
    ) -> s.TableInfo:
        caller = await lobby.caller(request, "tables")
        caller.require_secret("revoking an invitation")
        assert caller.app_id is not None
        secrets = await lobby.secret_options()
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            await lobby.tables.revoke_invitation(conn, table_id, caller.app_id)
            return await lobby.tables.get(conn, table_id, secrets)

    @delete(
        "/{table_id:str}",
        operation_id="closeTable",
        security=SECRET_KEY_OR_SEATED,
        status_code=200,
        summary="Close one of the app's tables before its match starts: its seats are emptied"
        " (their tokens no longer work) and it no longer counts against the app's quota",
        description="With the app's secret key, any of its open tables; a closed table answers"
        " as it is. With a publishable key (a browser's), only with the seat token"
        " (`Authorization: Bearer`) of the one person seated at the table (bots may be seated"
        " too), as its creator waiting alone: without a seat's token 403"
        " `secret-key-required`, once another person sat down 409 `players-seated` (each"
        " player may leave instead). A started table 409 `table-started`. Its feed and webhooks"
        " get `TableClosed` (`reason: by_app`; the event's actor names the player who closed"
        " it). An open table nobody joins, leaves or changes a seat of for the lobby's idle"
        " time (`PLAYTABLE_OPEN_TABLE_IDLE_S`, a day by default) closes by itself (`reason:"
        " idle`).",
        responses=problem_responses(401, 403, 404, 409, 503),
    )
    async def close_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
    ) -> s.TableInfo:
        caller = await lobby.caller(request, "tables")
        bearer = bearer_token(request)
        secrets = await lobby.secret_options()
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            table = await lobby.tables.close(conn, table_id, bearer, caller, secrets)
        lobby.runtime.relay.wake()
        return table
