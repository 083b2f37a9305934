"""The match service: serves matches over HTTP and creates them from the lobby's commands."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from functools import partial
from typing import Annotated, Any

import msgspec
from litestar import Controller, Litestar, Request, Response, get, post
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter
from opentelemetry.trace import Span

from services.match import schemas as s
from services.match.feed import MatchFeeds
from services.match.matches import Matches
from services.match.replays import Replays
from services.match.snapshot import match_etag
from shared.domain.match_file import ExportFormat
from shared.domain.messages import CommandEnvelope, CreateMatch, TimeOut, decode_command
from shared.edge import apps
from shared.edge.access import access_guard, authenticator
from shared.edge.app import service_app
from shared.edge.conditional import (
    CONDITIONAL_READ,
    IfNoneMatch,
    conditional,
    conditional_responses,
)
from shared.edge.contract import (
    OPTIONAL_SEAT_TOKEN,
    SEAT_TOKEN,
    SECRET_KEY,
    SECRET_KEY_OR_FORMER_HOLDER,
    SeatInPath,
    problem_responses,
)
from shared.edge.errors import Problem
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
from shared.edge.guard import PG_INT_MAX
from shared.edge.idempotency import IDEMPOTENT_ANSWER_HEADERS, IdempotencyKey, json_answer
from shared.edge.paging import NumberedCursor, start_after
from shared.edge.runtime import Runtime, rules_check
from shared.edge.tokens import bearer_token, required_bearer_token
from shared.infra import tracing
from shared.infra.commands import BySubject
from shared.infra.logs import log_context
from shared.infra.metrics import PROBE_TIMEOUT_S, Metric, Probe, gauge
from shared.infra.settings import Settings
from shared.infra.streams import MATCH_COMMANDS_STREAM, MATCH_EVENTS_STREAM, MATCH_TIMEOUTS_STREAM

log = logging.getLogger(__name__)

MATCH_GROUP = "match"
_PAST_VERSION = {"Cache-Control": "private, max-age=31536000, immutable", "Vary": "Authorization"}
"""A version once reached never changes, but what it shows depends on the caller's token."""


class MatchesController(Controller):
    path = "/matches"
    tags = ["matches"]

    @get(
        "/{match_id:str}",
        operation_id="getMatch",
        security=OPTIONAL_SEAT_TOKEN,
        summary="The match as the caller's seat may see it (spectators: no token or an invitation)",
        responses=conditional_responses(401, 403, 404, 503),
        **CONDITIONAL_READ,
    )
    async def get_match(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        match_id: FromPath[str],
        if_none_match: IfNoneMatch = None,
    ) -> Response[s.MatchInfo]:
        info = await matches.info(match_id, bearer_token(request))
        return conditional(info, match_etag(info.version, info.you), if_none_match)

    @get(
        "/{match_id:str}/actions",
        operation_id="listLegalActions",
        security=SEAT_TOKEN,
        summary="The actions the caller's seat may take now",
        responses=problem_responses(401, 403, 404, 409, 503),
    )
    async def legal_actions(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        match_id: FromPath[str],
        version: Annotated[
            int | None,
            QueryParameter(
                ge=1,
                le=PG_INT_MAX,
                description=(
                    "The version the caller knows the match at (from its feed or its last"
                    " answer): its actions then, if the server still holds them at hand;"
                    " otherwise, and without it, the actions now. `version` in the answer"
                    " says which."
                ),
            ),
        ] = None,
    ) -> s.LegalActions:
        return await matches.legal_actions(match_id, required_bearer_token(request), version)

    @post(
        "/{match_id:str}/actions",
        operation_id="submitAction",
        response_headers=IDEMPOTENT_ANSWER_HEADERS,
        security=SEAT_TOKEN,
        summary="Make a move at an expected version; committed before it is acknowledged",
        responses=problem_responses(400, 401, 403, 404, 409, 422, 503),
    )
    async def submit_action(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        match_id: FromPath[str],
        data: JSONBody[s.SubmitAction],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.ActionAccepted]:
        token = required_bearer_token(request)
        status, body, replayed = await matches.act(match_id, token, data, idempotency_key)
        return json_answer(body, status, replayed=replayed)

    @post(
        "/{match_id:str}/leave",
        operation_id="leaveMatch",
        response_headers=IDEMPOTENT_ANSWER_HEADERS,
        security=SEAT_TOKEN,
        status_code=200,
        summary="Leave the running match: the table's policy hands the seat to a bot or ends"
        " the match as abandoned",
        description=(
            "The table's `hosting.on_leave` decides: `bot` (its `hosting.bot`, else the game's"
            " heuristic bot, plays the seat from now on: `PlayerLeft` then `BotTookOver`) or"
            " `abandon` (`PlayerLeft` then `MatchForfeited`: the match is over, and its result"
            " names the seat in `forfeited`). The token holds no seat afterwards, but while"
            " the bot holds it, it takes the seat back once (`reseatPlayer`). Answers the match"
            " as a spectator sees it."
        ),
        responses=problem_responses(401, 403, 404, 409, 503),
    )
    async def leave_match(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        match_id: FromPath[str],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.MatchInfo]:
        token = required_bearer_token(request)
        status, body, replayed = await matches.leave(match_id, token, idempotency_key)
        return json_answer(body, status, replayed=replayed)

    @post(
        "/{match_id:str}/seats/{seat:int}/token",
        operation_id="reseatPlayer",
        response_headers=IDEMPOTENT_ANSWER_HEADERS,
        security=SECRET_KEY_OR_FORMER_HOLDER,
        status_code=201,
        summary="A new token for a seat of a running match (the one before stops working): for"
        " the secret key of the app whose match it is, or the seat's former holder once a bot"
        " holds it",
        description=(
            "The app's secret key re-seats any seat of its match: a player who lost their"
            " token, or a seat a bot holds given to a person (`PlayerReseated`, with"
            " `from_bot`). A player whose seat a bot took over (they left, or timed out) takes"
            " it back with the token the seat had (`Authorization: Bearer`, with the app's"
            " publishable key or none), once: the old token is spent. No one else: a seat a"
            " person holds is theirs, so an invitation, a publishable key alone (403"
            " `secret-key-required`), another seat's token (403 `not-your-seat`) or another"
            " app's key (403 `not-your-match`) changes nothing. The new token is shown once."
        ),
        responses=problem_responses(400, 401, 403, 404, 409, 422, 503),
    )
    async def reseat_player(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        match_id: FromPath[str],
        seat: SeatInPath,
        data: JSONBody[s.Reseat],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[s.Reseated]:
        runtime = matches.runtime
        former_token = bearer_token(request)
        caller = None
        if request.headers.get(apps.API_KEY_HEADER) or former_token is None:
            caller = await apps.authenticate(
                runtime.pool, runtime.settings, request.headers, "tables"
            )
        status, body, replayed = await matches.reseat(
            match_id, seat, caller, former_token, data, idempotency_key
        )
        return json_answer(body, status, replayed=replayed)

    @get(
        "/{match_id:str}/events",
        operation_id="listMatchEvents",
        security=OPTIONAL_SEAT_TOKEN,
        summary="The match's event log, a page at a time, each event as the caller may see it",
        responses=problem_responses(400, 401, 403, 404, 409, 503),
    )
    async def list_events(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        match_id: FromPath[str],
        cursor: NumberedCursor = None,
        after: Annotated[
            int,
            QueryParameter(
                ge=0,
                le=PG_INT_MAX,
                description="Deprecated (`cursor`): return events after this version",
                schema_extra={"deprecated": True},
            ),
        ] = 0,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
    ) -> s.EventPage:
        start = start_after(cursor, after, PG_INT_MAX)
        return await matches.events(match_id, bearer_token(request), start, limit)

    @get(
        "/{match_id:str}/feed",
        operation_id="followMatch",
        summary="Live Server-Sent Events of the match as the caller may see it, then its end",
        description=(
            "Each event once, in order: `id` is its version, `event` its type, `data` the item"
            " listMatchEvents would give (a `MatchEvent` schema, the game's event in its"
            " `data`: `GameEvent`). After the last event of a finished match comes `event:"
            " MatchFinished` (`data`: a `MatchFinished` schema) and the stream ends. Resume"
            " with `Last-Event-ID`. A browser opens it with a ticket (createMatchFeedTicket)."
        ),
        **FEED_ROUTE,
    )
    async def follow_match(
        self,
        request: Request[Any, Any, Any],
        match_feeds: NamedDependency[MatchFeeds],
        match_id: FromPath[str],
        last_event_id: LastEventId = None,
        after: FeedAfter = None,
        ticket: FeedTicketQuery = None,
    ) -> LiveFeed:
        follow = partial(match_feeds.follow, match_id)
        tickets = match_feeds.tickets
        return await open_feed(follow, request, last_event_id, after, ticket, tickets)

    @post(
        "/{match_id:str}/feed-tickets",
        operation_id="createMatchFeedTicket",
        summary="A single-use ticket that opens the match's feed (`?ticket=`) as the token would",
        **FEED_TICKET_ROUTE,
    )
    async def create_match_feed_ticket(
        self,
        request: Request[Any, Any, Any],
        match_feeds: NamedDependency[MatchFeeds],
        match_id: FromPath[str],
    ) -> FeedTicket:
        check = partial(match_feeds.check, match_id)
        return await give_ticket(request, match_feeds.tickets, check)

    @get(
        "/{match_id:str}/replay",
        operation_id="replayMatch",
        security=OPTIONAL_SEAT_TOKEN,
        summary="The match at a past version as the caller saw it then (after the end: in full)",
        responses=problem_responses(400, 401, 403, 404, 409, 503),
        response_headers=[
            ResponseHeader(
                name="Cache-Control",
                description="`private, max-age=31536000, immutable`: a past version never changes",
                documentation_only=True,
            ),
            ResponseHeader(
                name="Vary",
                description="`Authorization`: what it shows depends on the token",
                documentation_only=True,
            ),
        ],
    )
    async def replay_match(
        self,
        request: Request[Any, Any, Any],
        replays: NamedDependency[Replays],
        match_id: FromPath[str],
        version: Annotated[
            int, QueryParameter(ge=1, le=PG_INT_MAX, description="The version to show")
        ],
        full: Annotated[
            bool,
            QueryParameter(description="Show everything (every hand, the deck); finished only"),
        ] = False,
    ) -> Response[s.MatchReplay]:
        shown = await replays.show(match_id, bearer_token(request), version, full)
        return Response(content=shown, media_type="application/json", headers=_PAST_VERSION)

    @get(
        "/{match_id:str}/export",
        operation_id="exportMatch",
        summary=(
            "A finished match as a file: a playtable match file (any game), or the game's"
            " community format (Hanabi: hanab.live JSON; Carcassonne: turns), the default"
            " where there is one"
        ),
        security=OPTIONAL_SEAT_TOKEN,
        responses=problem_responses(400, 401, 403, 404, 409, 422, 503),
    )
    async def export_match(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        match_id: FromPath[str],
        format: Annotated[
            ExportFormat | None,
            QueryParameter(description="The file format (default: the game's community one)"),
        ] = None,
    ) -> Response[dict[str, Any]]:
        document = await matches.export(match_id, format, token=bearer_token(request))
        return Response(content=document, media_type="application/json")

    @post(
        "/import",
        operation_id="importMatch",
        summary=(
            "Replay a match file (playtable match file for any game, hanab.live JSON,"
            " Carcassonne turns) into a new match"
        ),
        security=SECRET_KEY,
        description="The new match belongs to the app whose secret key imports it (a"
        " publishable key: 403 `secret-key-required`).",
        responses=problem_responses(400, 401, 403, 422, 503),
    )
    async def import_match(
        self,
        request: Request[Any, Any, Any],
        matches: NamedDependency[Matches],
        data: JSONBody[s.ImportMatch],
    ) -> s.ImportedMatch:
        runtime = matches.runtime
        caller = await apps.authenticate(runtime.pool, runtime.settings, request.headers, "tables")
        caller.require_secret("importing a match")
        match_id, tokens = await matches.import_match(data, caller.app_id)
        return s.ImportedMatch(
            match_id=match_id, tokens=tokens, match=await matches.info(match_id, None)
        )


@contextlib.contextmanager
def _command_span(
    envelope: CommandEnvelope, match_id: str, attributes: dict[str, str]
) -> Iterator[Span]:
    """A command's handling: logged with its correlation and match ids, in a span continuing
    the trace that sent it."""
    with (
        log_context(correlation_id=envelope.correlation_id, match_id=match_id),
        tracing.span(
            f"command {envelope.type}",
            tracing.CONSUMER,
            parent=envelope.traceparent,
            attributes=attributes,
        ) as span,
    ):
        yield span


COMMANDS_AT_ONCE = 16
"""How many commands of one stream a match process carries out side by side (each one mostly
waits: for the rules worker's set-up, then for Postgres)."""


def command_handler(matches: NamedDependency[Matches]) -> Any:
    """Handle the lobby's and the clocks' commands, each in a span continuing the trace that
    sent it: up to ``COMMANDS_AT_ONCE`` side by side, one match's in order (``BySubject``).
    Each is kept in Postgres and re-driven until done, so when the rules service does not
    answer the entry is only logged and acknowledged: the command comes back, rather than
    being dead-lettered. (The consumer itself retries a handler that failed for Postgres or
    Redis being down.)"""
    by_match = BySubject(COMMANDS_AT_ONCE)

    async def handle(_entry_id: str, payload: bytes) -> None:
        envelope = decode_command(payload)
        if envelope.type == "TimeOut":
            timeout = msgspec.json.decode(envelope.body, type=TimeOut)
            traced = {"playtable.match_id": timeout.match_id}
            async with by_match.turn(timeout.match_id):
                with _command_span(envelope, timeout.match_id, traced) as span:
                    try:
                        await matches.time_out(timeout, envelope.command_id)
                    except Problem as problem:  # pending: re-driven
                        tracing.failed(span, problem.code)
                        log.info("timeout not applied yet: %s", problem.detail)
            return
        if envelope.type != "CreateMatch":
            log.warning("ignoring unknown command %s", envelope.type)
            return
        command = msgspec.json.decode(envelope.body, type=CreateMatch)
        async with by_match.turn(command.match_id):
            await create(envelope, command)

    async def create(envelope: CommandEnvelope, command: CreateMatch) -> None:
        traced = {
            "playtable.command_id": envelope.command_id,
            "playtable.match_id": command.match_id,
            "playtable.table_id": command.table_id,
        }
        with _command_span(envelope, command.match_id, traced) as span:
            try:
                await matches.create(command, envelope.correlation_id, envelope.command_id)
            except Problem as problem:
                tracing.failed(span, problem.code)
                if problem.status == 422:
                    log.error("match refused by the rules: %s", problem.detail)
                else:  # re-driven; the outage behind it is logged where it is met
                    log.info("match not created yet: %s", problem.detail)

    return handle


def create_app(settings: Settings | None = None) -> Litestar:
    """Compose the match service: runtime, domain, command consumer and HTTP routes."""
    settings = settings or Settings.from_env()
    tracing.configure(settings, "match")
    runtime = Runtime(settings)
    matches = Matches(runtime)
    feeds = FeedHub(runtime, settings.stream(MATCH_EVENTS_STREAM))

    async def start() -> None:
        await runtime.start(sealing=True, then=work)

    async def work() -> None:
        """The match service's background work, once Postgres answers."""
        feeds.start()
        for stream in (MATCH_COMMANDS_STREAM, MATCH_TIMEOUTS_STREAM):  # a consumer each
            await runtime.consume(
                settings.stream(stream), MATCH_GROUP, command_handler(matches), concurrent=True
            )

    runtime.metrics.add("matches", live_matches_probe(runtime))
    return service_app(
        "match",
        settings.instance_id,
        [MatchesController],
        {
            "matches": matches,
            "replays": Replays(matches),
            "match_feeds": MatchFeeds(matches, feeds),
        },
        on_startup=[start],
        on_shutdown=[runtime.close],
        ready={**runtime.ready, "rules": rules_check(lambda: runtime.rules)},
        metrics=runtime.metrics,
        settings=settings,
        guards=[
            access_guard(
                authenticator(lambda: runtime.pool, settings),
                "tables",
                {"match_id": matches.app_of},
            )
        ],
    )


_LIVE_MATCHES = "SELECT game, count(*) FROM matches WHERE status = 'running' GROUP BY game"


def live_matches_probe(runtime: Runtime) -> Probe:
    """Matches running, by game (an index holds the running ones: migration 140)."""

    async def probe() -> list[Metric]:
        async with runtime.pool.connection(timeout=PROBE_TIMEOUT_S) as conn:
            rows = await (await conn.execute(_LIVE_MATCHES)).fetchall()
        running = [([game], count) for game, count in rows]
        return [gauge("playtable_live_matches", "Matches running, by game", running, ["game"])]

    return probe
