"""The seats' routes: join and leave, seat and unseat bots, start, take a seat in the rematch."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, Response, delete, post
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, JSONBody

from services.lobby import schemas as s
from services.lobby.lobby import Lobby
from shared.edge.contract import (
    APP_KEY_AND_INVITATION,
    SEAT_TOKEN,
    SEATING_A_BOT,
    SECRET_KEY_OR_SEATED,
    SeatInPath,
    problem_responses,
)
from shared.edge.idempotency import (
    IDEMPOTENT_ANSWER_HEADERS,
    IdempotencyKey,
    idempotent,
)
from shared.edge.tokens import bearer_token, required_bearer_token

_json = msgspec.json.Encoder()


class SeatsController(Controller):
    path = "/tables"
    tags = ["tables"]

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
