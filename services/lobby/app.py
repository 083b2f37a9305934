"""The lobby service: catalogue, tables and seats over HTTP; starts matches through Redis."""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Annotated, Any

import msgspec
from litestar import Controller, Litestar, Request, Response, delete, get, patch, post
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from services.lobby import schemas as s
from services.lobby.checks import not_private
from services.lobby.closing import IdleSweep
from services.lobby.feed import TableFeeds
from services.lobby.tables import Tables
from shared.domain import rules_api
from shared.domain.messages import Actor
from shared.edge import apps
from shared.edge.access import access_guard, authenticator, known_caller
from shared.edge.app import service_app
from shared.edge.contract import (
    APP_KEY,
    APP_KEY_AND_INVITATION,
    OPERATOR_KEY,
    OPTIONAL_SEAT_TOKEN,
    SEAT_TOKEN,
    SEATING_A_BOT,
    SECRET_KEY,
    SECRET_KEY_OR_SEATED,
    SeatInPath,
    problem_responses,
)
from shared.edge.errors import Problem, not_found
from shared.edge.feed import FeedHub
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
    Idempotent,
    idempotent,
    json_answer,
    recall,
    remember,
)
from shared.edge.paging import TableCursor
from shared.edge.runtime import Runtime
from shared.edge.tokens import bearer_token, required_bearer_token
from shared.infra import tracing
from shared.infra.commands import CommandRedriver, CommandWatch, Waiter
from shared.infra.settings import Settings
from shared.infra.streams import LOBBY_EVENTS_STREAM

_json = msgspec.json.Encoder()
_table_decoder = msgspec.json.Decoder(s.TableInfo)


class Lobby:
    """The lobby's composition: its runtime, its tables, the commands it sends (re-driven until
    done, which a watch on Postgres' notifications tells), and the rules catalogue it caches."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.tables = Tables(runtime)
        self.commands: CommandRedriver
        self.done: CommandWatch
        self._catalogue: dict[str, s.GameInfo] | None = None
        self._secret_options: dict[str, set[str]] = {}

    async def start(self) -> None:
        await self.runtime.start(sealing=True)
        self.commands = CommandRedriver(self.runtime.pool, self.runtime.bus)
        self.runtime.spawn("command-redriver", self.commands.run(self.runtime.stop))
        # Its own connection, closed when the runtime stops its tasks.
        self.done = CommandWatch(self.runtime.pool, self.runtime.settings.database_url)
        self.runtime.spawn("command-watch", self.done.run(self.runtime.stop))
        idle_s = self.runtime.settings.open_table_idle_s
        if idle_s > 0:
            sweep = IdleSweep(self.tables.steps, idle_s)
            self.runtime.spawn("idle-table-sweep", sweep.run(self.runtime.stop))

    async def catalogue(self) -> dict[str, s.GameInfo]:
        if self._catalogue is None:
            reply = await self.runtime.ask_rules(rules_api.Catalogue(), list[s.GameInfo])
            self._secret_options = {
                game.name: {option.name for option in game.options if option.secret}
                for game in reply
            }
            self._catalogue = {game.name: game for game in reply}
        return self._catalogue

    async def game(self, name: str) -> s.GameInfo:
        games = await self.catalogue()
        if name not in games:
            raise not_found("game", name)
        return games[name]

    async def secret_options(self) -> dict[str, set[str]]:
        """Each game's secret options (read only: shared by every request)."""
        await self.catalogue()
        return self._secret_options

    async def caller(self, request: Request[Any, Any, Any], scope: str) -> apps.Caller:
        return known_caller(request, scope) or await apps.authenticate(
            self.runtime.pool, self.runtime.settings, request.headers, scope
        )

    async def once(self, request: Idempotent | None, work: Any, status: int) -> Response[Any]:
        """Run ``work(conn) -> body`` in one transaction, at most once per Idempotency-Key."""
        body, status, replayed = await self._once(request, work, status)
        return json_answer(body, status, replayed=replayed)

    async def _once(
        self, request: Idempotent | None, work: Any, status: int
    ) -> tuple[bytes, int, bool]:
        """The answer's body and status, and whether it repeats a recorded one."""
        async with self.runtime.pool.connection() as conn, conn.transaction():
            if request is not None:
                recorded = await recall(conn, self.runtime.keyring, request)
                if recorded is not None:
                    return recorded.body, recorded.status, True
            body = _json.encode(await work(conn))
            if request is not None:
                await remember(conn, self.runtime.keyring, request, status, body)
        self.runtime.relay.wake()
        return body, status, False

    async def start_table(
        self, table_id: str, token: str, key: str | None, secrets: dict[str, set[str]]
    ) -> Response[Any]:
        """Start the table, then answer once its match exists (201); if that takes longer than
        ``start_wait_s`` (its rules worker down, say), answer 202 with the match's
        ``Location``, which shows the ``creating`` state until then. A retry does the same."""

        with contextlib.ExitStack() as waiting:
            waiter: Waiter | None = None

            async def work(conn: Any) -> s.TableInfo:
                nonlocal waiter
                table = await self.tables.start(conn, table_id, token, secrets)
                assert table.match_id is not None  # a started table names its match
                # Waiting from before the command commits: its notification cannot be missed.
                waiter = waiting.enter_context(self.done.watch(table.match_id))
                return table

            request = idempotent(f"lobby:start:{table_id}", key, token)
            body, _, replayed = await self._once(request, work, 201)
            self.commands.wake()
            match_id = _table_decoder.decode(body).match_id
            assert match_id is not None
            # A retry answered from its record looks first: its match may exist by now.
            created = await self.done.wait(match_id, self.runtime.settings.start_wait_s, waiter)
        if created is not None and created.outcome is not None and created.outcome != "done":
            raise Problem(422, "match-refused", "Match refused by the rules", created.outcome)
        answer = json_answer(body, 201 if created and created.done else 202, replayed=replayed)
        answer.headers["Location"] = f"/matches/{match_id}"
        return answer


class GamesController(Controller):
    path = "/games"
    tags = ["catalogue"]

    @get(
        "/",
        operation_id="listGames",
        summary="The games with their player counts and options",
        responses=problem_responses(503),
    )
    async def list_games(self, lobby: NamedDependency[Lobby]) -> list[s.GameInfo]:
        return list((await lobby.catalogue()).values())

    @get(
        "/{game:str}",
        operation_id="getGame",
        summary="One game's catalogue entry",
        responses=problem_responses(404, 503),
    )
    async def get_game(self, lobby: NamedDependency[Lobby], game: FromPath[str]) -> s.GameInfo:
        return await lobby.game(game)


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
        await lobby.game(data.game)
        options = await lobby.runtime.ask_rules(
            rules_api.ResolveOptions(game=data.game, options=data.options, seats=data.seats),
            dict[str, Any],
        )
        secrets = await lobby.secret_options()

        async def work(conn: Any) -> s.CreatedTable:
            table, invitation = await lobby.tables.create(
                conn,
                data,
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
        responses=problem_responses(400, 401, 403, 503),
    )
    async def list_tables(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        status: FromQuery[s.TableStatus | None] = None,
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
        "/{table_id:str}/seats",
        operation_id="joinTable",
        response_headers=IDEMPOTENT_ANSWER_HEADERS,
        security=APP_KEY_AND_INVITATION,
        summary="Take a seat at one of the app's tables (a private table's: with its invitation"
        " token too); the answer holds the seat's secret token (shown once)",
        responses=problem_responses(400, 401, 403, 404, 409, 422, 503),
    )
    async def join_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
        data: JSONBody[s.JoinTable],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.Joined]:
        caller = await lobby.caller(request, "tables")
        invitation = bearer_token(request)
        secrets = await lobby.secret_options()

        async def work(conn: Any) -> s.Joined:
            seat, token, table = await lobby.tables.join(
                conn, table_id, data, invitation, caller.app_id, secrets
            )
            return s.Joined(seat=seat, token=token, table=table)

        # The invitation is part of the request: a retry without it is not answered the seat.
        request_id = idempotent(
            f"lobby:join:{table_id}",
            idempotency_key,
            caller.credential,
            _json.encode(data),
            invitation or "",
        )
        return await lobby.once(request_id, work, 201)

    @post(
        "/{table_id:str}/bots",
        operation_id="seatBot",
        response_headers=IDEMPOTENT_ANSWER_HEADERS,
        security=SEATING_A_BOT,
        summary="Seat one of the game's bots at one of the app's open tables: with its secret key"
        " (a private table's: with its invitation too), or a publishable key and the token of a"
        " seat at the table",
        description="A player seated at the table adds a bot with their seat's token"
        " (`Authorization: Bearer`) and the app's publishable key, as the web client does;"
        " a publishable key without a seat's token gets 403 `secret-key-required`."
        " The bot takes the seat asked for, or the first free one; the seat's"
        " `player` and `bot` are the bot's name (at a private table it counts as one of the"
        " invitation's seats). Once bots hold every seat the table starts (there is no player"
        " to start it): its `match_id` is set (`getMatch` shows `status: creating` until the"
        " match exists).",
        responses=problem_responses(400, 401, 403, 404, 409, 422, 503),
    )
    async def seat_bot(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
        data: JSONBody[s.SeatBot],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.TableInfo]:
        caller = await lobby.caller(request, "tables")
        bearer = bearer_token(request)
        secrets = await lobby.secret_options()

        async def work(conn: Any) -> s.TableInfo:
            return await lobby.tables.seat_bot(conn, table_id, data, bearer, caller, secrets)

        request_id = idempotent(
            f"lobby:seat-bot:{table_id}",
            idempotency_key,
            caller.credential,
            _json.encode(data),
            bearer or "",
        )
        response = await lobby.once(request_id, work, 201)
        lobby.commands.wake()  # if the bot filled a table of bots, its match is asked for now
        return response

    @delete(
        "/{table_id:str}/bots/{seat:int}",
        operation_id="unseatBot",
        security=SECRET_KEY_OR_SEATED,
        status_code=200,
        summary="Free a bot's seat at one of the app's tables before its match starts: with its"
        " secret key, or a publishable key and the token of a seat at the table",
        description="A publishable key without a seat's token (`Authorization: Bearer`) gets 403"
        " `secret-key-required`.",
        responses=problem_responses(401, 403, 404, 409, 422, 503),
    )
    async def unseat_bot(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
        seat: SeatInPath,
    ) -> s.TableInfo:
        caller = await lobby.caller(request, "tables")
        bearer = bearer_token(request)
        secrets = await lobby.secret_options()
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            table = await lobby.tables.unseat_bot(conn, table_id, seat, bearer, caller, secrets)
        lobby.runtime.relay.wake()
        return table

    @post(
        "/{table_id:str}/rematch",
        operation_id="rematchTable",
        response_headers=IDEMPOTENT_ANSWER_HEADERS,
        security=SEAT_TOKEN,
        summary="Take your seat again in the rematch of a table whose match has finished (with"
        " its seat's token); the answer holds the new seat's token (shown once)",
        description="The first player to ask opens the rematch: a new table (`rematch_of`) with"
        " the same game, options, seats, visibility and hosting, and the same bots in their"
        " seats, but a new seed and none of the secret options (a stacked deck is shuffled:"
        " the finished match's replay shows it to everyone); the finished table names it"
        " (`rematch_table_id`). Each player takes back their own seat under their own name"
        " (the token the match gave them, if they were seated again in it, works too). Once"
        " every seat is taken, any seated player starts it (`startTable`).",
        responses=problem_responses(400, 401, 403, 404, 409, 503),
    )
    async def rematch_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.Joined]:
        token = required_bearer_token(request)
        secrets = await lobby.secret_options()

        async def work(conn: Any) -> s.Joined:
            seat, seat_token, table = await lobby.tables.rematch(conn, table_id, token, secrets)
            return s.Joined(seat=seat, token=seat_token, table=table)

        request_id = idempotent(f"lobby:rematch:{table_id}", idempotency_key, token)
        return await lobby.once(request_id, work, 201)

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
        security=SECRET_KEY,
        status_code=200,
        summary="Close one of the app's tables before its match starts: its seats are emptied"
        " (their tokens no longer work) and it no longer counts against the app's quota",
        description="Only with the app's secret key (a publishable key, which browsers hold:"
        " 403 `secret-key-required`). A closed table answers as it is; a started one 409"
        " `table-started`. Its feed and webhooks get `TableClosed` (`reason: by_app`). An open"
        " table nobody joins, leaves or changes a seat of for the lobby's idle time"
        " (`PLAYTABLE_OPEN_TABLE_IDLE_S`, a day by default) closes by itself (`reason: idle`).",
        responses=problem_responses(401, 403, 404, 409, 503),
    )
    async def close_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
    ) -> s.TableInfo:
        caller = await lobby.caller(request, "tables")
        caller.require_secret("closing a table")
        secrets = await lobby.secret_options()
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            table = await lobby.tables.close(conn, table_id, caller.app_id, secrets)
        lobby.runtime.relay.wake()
        return table

    @delete(
        "/{table_id:str}/seats/{seat:int}",
        operation_id="leaveTable",
        security=SEAT_TOKEN,
        status_code=200,
        summary="Give up a seat before the match starts (needs the seat's token)",
        responses=problem_responses(401, 403, 404, 409, 503),
    )
    async def leave_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
        seat: SeatInPath,
    ) -> s.TableInfo:
        token = required_bearer_token(request)
        secrets = await lobby.secret_options()
        async with lobby.runtime.pool.connection() as conn, conn.transaction():
            table = await lobby.tables.leave(conn, table_id, seat, token, secrets)
        lobby.runtime.relay.wake()
        return table

    @post(
        "/{table_id:str}/start",
        operation_id="startTable",
        security=SEAT_TOKEN,
        status_code=201,
        summary="Start the match once every seat is taken (any seated player)",
        description=(
            "Answers 201 once the table's match exists (`match_id`; `Location` names it). If"
            " setting it up takes longer (a few seconds: its rules service is down, say), answers"
            " 202 with the same body and `Location`: `getMatch` then shows `status: creating`"
            " (and the match's other routes answer 409 `match-creating` with `Retry-After`)"
            " until it exists. A retry answers the same way."
        ),
        response_headers=[
            ResponseHeader(
                name="Location",
                description="The match: /matches/{match_id}",
                documentation_only=True,
            ),
            *IDEMPOTENT_ANSWER_HEADERS,
        ],
        responses={
            202: ResponseSpec(
                data_container=s.TableInfo,
                description="Started; the match is still being set up",
                generate_examples=False,
            ),
            **problem_responses(401, 403, 404, 409, 422, 503),
        },
    )
    async def start_table(
        self,
        request: Request[Any, Any, Any],
        lobby: NamedDependency[Lobby],
        table_id: FromPath[str],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.TableInfo]:
        token = required_bearer_token(request)
        secrets = await lobby.secret_options()
        return await lobby.start_table(table_id, token, idempotency_key, secrets)


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


def create_app(settings: Settings | None = None) -> Litestar:
    """Compose the lobby: settings, runtime, domain and HTTP routes, in one place."""
    settings = settings or Settings.from_env()
    tracing.configure(settings, "lobby")
    runtime = Runtime(settings)
    lobby = Lobby(runtime)
    feeds = FeedHub(runtime, settings.stream(LOBBY_EVENTS_STREAM))
    return service_app(
        "lobby",
        settings.instance_id,
        [GamesController, TablesController, AppsController],
        {"lobby": lobby, "table_feeds": TableFeeds(lobby.tables, feeds)},
        on_startup=[lobby.start, feeds.start],
        on_shutdown=[runtime.close],
        ready=runtime.ready,
        metrics=runtime.metrics,
        settings=settings,
        guards=[
            access_guard(
                authenticator(lambda: runtime.pool, settings),
                "tables",
                {"table_id": lobby.tables.app_of},
            )
        ],
    )
