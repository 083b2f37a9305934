"""The examples of the problem answers: each route's own, in the words its code raises them
with, and those any route may answer (a rate limit, a crash, a backing service down)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from services.lobby import schemas as lobby_api
from services.lobby.checks import not_private
from services.match import schemas as match_api
from services.match.answers import not_former_holder
from services.match.snapshot import MatchCreating
from services.rules.engine import RulesEngine
from services.webhooks import schemas as webhooks_api
from services.webhooks.subscriptions import subscription_disabled
from services.webhooks.targets import TargetRefused, allowed_networks, check_target
from shared.domain import rules_api
from shared.domain.messages import CreateMatch
from shared.edge import apps
from shared.edge.errors import Problem, ProblemDocument, invalid_request, not_found
from shared.edge.feed import check_resume_point
from shared.edge.feed_http import resume_point
from shared.edge.feed_tickets import ticket_refused
from shared.edge.runtime import rejection_problem
from shared.infra.commands import REFUSED
from tools.contract.examples.story import Story
from tools.contract.examples.values import (
    APP_ID,
    DELIVERY_ID,
    ENCODER,
    GAME,
    KEY_ID,
    MATCH_ID,
    PLAYERS,
    SEED,
    SUBSCRIPTION_ID,
    TABLE_ID,
    MissingExample,
    example_path,
    nul_in,
)

GENERIC_PROBLEMS = {
    429: Problem(
        429,
        "rate-limited",
        "Rate limited",
        "over the read limit of 1000 requests a second (bursts of 2000) for this client: retry"
        " after 1 s",
    ),
    500: Problem(500, "internal-error", "Internal server error", "the error has been logged"),
    503: Problem(
        503, "service-unavailable", "Service unavailable", "a backing service did not answer"
    ),
}
"""What the shared handlers answer any route with: a client over its rate limit, a crash,
Postgres or Redis down."""

TOKEN_REQUIRED = Problem(
    401, "token-required", "Seat token required", "send 'Authorization: Bearer <token>'"
)

BAD_AUTHORIZATION = Problem(
    401, "bad-authorization", "Bad Authorization header", "use 'Authorization: Bearer <token>'"
)
PRIVATE_TABLE = Problem(
    403,
    "private-table",
    "Private table",
    "this table is private: send its invitation token as 'Authorization: Bearer <token>'",
)
PRIVATE_MATCH = Problem(
    403,
    "private-match",
    "Private match",
    "this match is private: watch it with an invitation token",
)
UNKNOWN_TOKEN = Problem(403, "unknown-token", "Unknown token", "the token holds no seat here")
API_KEY_PROBLEMS = {
    401: Problem(
        401, "api-key-required", "API key required", "send your app's key as 'X-API-Key: <key>'"
    ),
    403: Problem(
        403, "scope-missing", "Scope missing", "this key does not hold the 'tables' scope"
    ),
}
"""What a route taking an API key answers without one, or with one lacking its scope."""
NOT_SEATED = Problem(403, "not-seated", "Not seated", "only a seated player may do this")
PUBLISHABLE_CALLER = apps.Caller(KEY_ID, APP_ID, ("tables",), "", "publishable")
"""A browser's key, for the routes' refusals of what only the app's secret key may do."""
MATCH_CREATING = MatchCreating(
    CreateMatch(
        match_id=MATCH_ID,
        table_id=TABLE_ID,
        game=GAME,
        options={},
        seats=2,
        seat_token_hashes=[],
        players=[],
        seed=SEED,
    )
)


def generic_problem(key: tuple[str, int], template: str) -> Problem | ProblemDocument:
    """What a route without a problem of its own for the status answers: a 400 for a NUL in
    a path parameter (all that can be wrong with a request of path parameters alone), else
    the shared handlers' answer."""
    _, status = key
    if status == 400:
        return invalid_request("the URL holds a NUL character").document(instance=nul_in(template))
    if status not in GENERIC_PROBLEMS:
        raise MissingExample(
            f"no problem example for {key}: add one in tools/contract/examples/problems.py"
        )
    return GENERIC_PROBLEMS[status]


def problem_examples(story: Story) -> dict[tuple[str, int], Problem | ProblemDocument]:
    """The problems particular to each route, by operationId and status; a Problem is answered
    on the route's example path, a ProblemDocument on its own."""
    turn, match = story.turn, story.match
    engine = story.engine
    match_path = example_path("/matches/{match_id}")
    subscription_path = example_path("/webhooks/subscriptions/{subscription_id}")
    missing_match = not_found("match", MATCH_ID)
    missing_table = not_found("table", TABLE_ID)
    missing_subscription = not_found("subscription", SUBSCRIPTION_ID)
    missing_app = not_found("app", APP_ID)
    out_of_turn = rules_api.Decide(
        game=GAME,
        state=match.progress_at[turn.version].state,
        seat=1 - turn.seat,
        action=msgspec.Raw(ENCODER.encode(turn.action)),
    )
    refused_target = _target_refused("http://10.0.0.7/hooks")
    return {
        ("getGame", 404): not_found("game", "chess").document(instance="/games/chess"),
        ("listTables", 400): Problem(
            400, "bad-cursor", "Bad cursor", "the cursor is not one this API gave"
        ),
        ("createTable", 400): _bad_body(lobby_api.CreateTable, {"game": GAME, "seats": 0}),
        ("createTable", 403): _raised(
            PUBLISHABLE_CALLER.require_secret, "creating a table of bots only"
        ),
        ("createTable", 404): not_found("game", "chess"),
        ("createTable", 422): _refused(
            engine, rules_api.ResolveOptions(game=GAME, options={"suits": 4}, seats=2)
        ),
        ("getTable", 401): BAD_AUTHORIZATION,
        ("getTable", 403): PRIVATE_TABLE,
        ("getTable", 404): missing_table,
        ("followTable", 400): _raised(resume_point, "yesterday", None),
        ("followTable", 401): ticket_refused(),
        ("createTableFeedTicket", 401): TOKEN_REQUIRED,
        ("createTableFeedTicket", 403): PRIVATE_TABLE,
        ("createTableFeedTicket", 404): missing_table,
        ("followTable", 403): PRIVATE_TABLE,
        ("followTable", 404): missing_table,
        ("joinTable", 400): _bad_body(lobby_api.JoinTable, {"name": ""}),
        ("joinTable", 401): BAD_AUTHORIZATION,
        ("joinTable", 403): PRIVATE_TABLE,
        ("joinTable", 404): missing_table,
        ("joinTable", 409): Problem(409, "seat-taken", "Seat taken", "seat 1 is taken"),
        ("joinTable", 422): Problem(422, "no-such-seat", "No such seat", "seats are 0 to 1"),
        ("leaveTable", 401): TOKEN_REQUIRED,
        ("leaveTable", 403): Problem(
            403, "not-your-seat", "Not your seat", "the token does not hold seat 1"
        ),
        ("leaveTable", 404): missing_table,
        ("leaveTable", 409): Problem(
            409, "table-started", "Table already started", "the table's match has started"
        ),
        ("seatBot", 400): _bad_body(lobby_api.SeatBot, {"bot": ""}),
        ("seatBot", 401): BAD_AUTHORIZATION,
        ("seatBot", 403): _raised(
            PUBLISHABLE_CALLER.require_secret,
            "seating or removing a bot without a seat's token at the table",
        ),
        ("seatBot", 404): missing_table,
        ("seatBot", 409): Problem(409, "seat-taken", "Seat taken", "seat 1 is taken"),
        ("seatBot", 422): Problem(
            422,
            "unknown-bot",
            "Unknown bot",
            f"{GAME} has no bot 'chess-engine': its catalogue entry lists its bots",
        ),
        ("unseatBot", 403): _raised(
            PUBLISHABLE_CALLER.require_secret,
            "seating or removing a bot without a seat's token at the table",
        ),
        ("unseatBot", 404): missing_table,
        ("unseatBot", 409): Problem(409, "not-a-bot", "Not a bot's seat", "no bot holds seat 1"),
        ("unseatBot", 422): Problem(422, "no-such-seat", "No such seat", "seats are 0 to 1"),
        ("rematchTable", 401): TOKEN_REQUIRED,
        ("rematchTable", 403): Problem(
            403, "not-seated", "Not seated", "only a player of the table may ask for a rematch"
        ),
        ("rematchTable", 404): missing_table,
        ("rematchTable", 409): Problem(
            409,
            "match-running",
            "Match still running",
            "a rematch follows a finished match: this table's has not finished",
        ),
        ("startTable", 401): TOKEN_REQUIRED,
        ("startTable", 403): Problem(
            403, "not-seated", "Not seated", "only a seated player may start the table"
        ),
        ("startTable", 404): missing_table,
        ("startTable", 409): Problem(
            409, "table-not-full", "Table not full", "1 of 2 seats are taken"
        ),
        ("startTable", 422): _match_refused(engine),
        ("getMatch", 401): BAD_AUTHORIZATION,
        ("getMatch", 403): UNKNOWN_TOKEN,
        ("getMatch", 404): missing_match,
        ("leaveMatch", 401): TOKEN_REQUIRED,
        ("leaveMatch", 403): UNKNOWN_TOKEN,
        ("leaveMatch", 404): missing_match,
        ("leaveMatch", 409): Problem(
            409, "match-finished", "Match finished", "the match has ended"
        ),
        ("reseatPlayer", 400): _bad_body(match_api.Reseat, {"name": ""}),
        ("reseatPlayer", 403): not_former_holder(0),
        ("reseatPlayer", 404): missing_match,
        ("reseatPlayer", 409): Problem(
            409, "match-finished", "Match finished", "the match has ended"
        ),
        ("reseatPlayer", 422): Problem(422, "no-such-seat", "No such seat", "seats are 0 to 1"),
        ("listLegalActions", 401): TOKEN_REQUIRED,
        ("listLegalActions", 403): NOT_SEATED,
        ("listLegalActions", 404): missing_match,
        ("submitAction", 400): _bad_body(
            match_api.SubmitAction,
            {
                "game": GAME,
                "expected_version": str(turn.version),
                "action": msgspec.to_builtins(turn.action),
            },
        ),
        ("submitAction", 401): TOKEN_REQUIRED,
        ("submitAction", 403): NOT_SEATED,
        ("submitAction", 404): missing_match,
        ("submitAction", 409): Problem(
            409,
            "stale-version",
            "Stale version",
            f"the match is at version {turn.version_after}, not {turn.version}: reload and"
            " choose again",
        ),
        ("submitAction", 422): _refused(engine, out_of_turn),
        ("listMatchEvents", 400): _bad_parameter("GET", f"{match_path}/events?limit=0", "limit"),
        ("listMatchEvents", 403): PRIVATE_MATCH,
        ("listMatchEvents", 404): missing_match,
        ("exportMatch", 400): _bad_parameter(
            "GET", f"{match_path}/export?format=pdf", "format", "Invalid enum value 'pdf'"
        ),
        ("exportMatch", 401): BAD_AUTHORIZATION,
        ("exportMatch", 403): PRIVATE_MATCH,
        ("exportMatch", 404): missing_match,
        ("exportMatch", 409): Problem(
            409, "match-running", "Match still running", "a match exports once it has finished"
        ),
        ("exportMatch", 422): _refused(
            engine,
            rules_api.ExportMatch(
                game=GAME,
                events=[event.data for event in match.events],
                players=PLAYERS,
                format="carcassonne-turns",
            ),
        ),
        ("followMatch", 400): _raised(resume_point, "yesterday", None),
        ("followTable", 409): _raised(check_resume_point, 9, 4),
        ("followMatch", 401): ticket_refused(),
        ("createMatchFeedTicket", 401): TOKEN_REQUIRED,
        ("createMatchFeedTicket", 403): UNKNOWN_TOKEN,
        ("createMatchFeedTicket", 404): missing_match,
        ("followMatch", 409): MATCH_CREATING,
        ("listLegalActions", 409): MATCH_CREATING,
        ("listMatchEvents", 401): BAD_AUTHORIZATION,
        ("listMatchEvents", 409): MATCH_CREATING,
        ("replayMatch", 401): BAD_AUTHORIZATION,
        ("followMatch", 403): UNKNOWN_TOKEN,
        ("followMatch", 404): missing_match,
        ("replayMatch", 400): invalid_request(
            f"Missing required query parameter 'version' for path {match_path}/replay"
        ),
        ("replayMatch", 403): PRIVATE_MATCH,
        ("replayMatch", 404): Problem(
            404,
            "version-not-found",
            "No such version",
            f"the match has versions 1 (set up) to {match.version}, not {match.version + 1}",
        ),
        ("replayMatch", 409): Problem(
            409,
            "match-running",
            "Match still running",
            "the full replay opens once the match has finished",
        ),
        ("importMatch", 400): _bad_body(match_api.ImportMatch, {"game": GAME}),
        ("importMatch", 403): _raised(PUBLISHABLE_CALLER.require_secret, "importing a match"),
        ("importMatch", 422): _refused(engine, _unplayable_import(story.exported)),
        ("createWebhookSubscription", 400): _bad_body(webhooks_api.CreateSubscription, {"url": ""}),
        ("createWebhookSubscription", 403): _raised(PUBLISHABLE_CALLER.require_secret, "webhooks"),
        ("createWebhookSubscription", 422): refused_target,
        ("getWebhookSubscription", 404): missing_subscription,
        ("updateWebhookSubscription", 400): _bad_body(
            webhooks_api.UpdateSubscription, {"enabled": "no"}
        ),
        ("updateWebhookSubscription", 404): missing_subscription,
        ("updateWebhookSubscription", 422): refused_target,
        ("deleteWebhookSubscription", 404): missing_subscription,
        ("listWebhookDeliveries", 400): _bad_parameter(
            "GET", f"{subscription_path}/deliveries?limit=0", "limit"
        ),
        ("listWebhookDeliveries", 404): missing_subscription,
        ("rotateWebhookSecret", 404): missing_subscription,
        ("redeliverWebhook", 400): _bad_parameter(
            "POST",
            "/webhooks/deliveries/0/redeliver",
            "delivery_id",
            "Expected `int` >= 1",
            source="path",
        ),
        ("redeliverWebhook", 404): not_found("delivery", str(DELIVERY_ID)),
        ("createApp", 400): _bad_body(apps.CreateApp, {"name": ""}),
        ("rotateInvitation", 403): _raised(
            PUBLISHABLE_CALLER.require_secret, "rotating an invitation"
        ),
        ("rotateInvitation", 404): missing_table,
        ("rotateInvitation", 409): Problem(
            409, "table-started", "Table already started", "the table's match has started"
        ),
        ("rotateInvitation", 422): not_private(),
        ("revokeInvitation", 422): not_private(),
        ("revokeInvitation", 403): _raised(
            PUBLISHABLE_CALLER.require_secret, "revoking an invitation"
        ),
        ("revokeInvitation", 404): missing_table,
        ("closeTable", 403): _raised(PUBLISHABLE_CALLER.require_secret, "closing a table"),
        ("closeTable", 404): missing_table,
        ("closeTable", 409): Problem(
            409, "table-started", "Table already started", "the table's match has started"
        ),
        ("revokeInvitation", 409): Problem(
            409, "table-started", "Table already started", "the table's match has started"
        ),
        ("getApp", 404): missing_app,
        ("updateApp", 400): _bad_body(apps.UpdateApp, {"max_open_tables": -1}),
        ("updateApp", 404): missing_app,
        ("createApiKey", 400): _bad_body(apps.CreateKey, {"scopes": ["everything"]}),
        ("createApiKey", 404): missing_app,
        ("createApiKey", 422): Problem(
            422,
            "publishable-scope",
            "Scope not for a publishable key",
            "a publishable key holds only the 'tables' scope: webhooks need a secret key",
        ),
        ("listApiKeys", 404): missing_app,
        ("revokeApiKey", 404): not_found("key", KEY_ID),
        ("pingWebhookSubscription", 404): missing_subscription,
        ("pingWebhookSubscription", 409): subscription_disabled("disabled through the API"),
        ("redeliverWebhook", 409): Problem(
            409, "delivery-pending", "Delivery pending", "it is being delivered already"
        ),
    }


def _raised(check: Callable[..., object], *args: Any) -> Problem:
    """The problem ``check`` answers ``args`` with: the route's own words, not a copy."""
    try:
        check(*args)
    except Problem as problem:
        return problem
    raise ValueError(f"{check.__name__}{args} raised no problem")


def _refused(engine: RulesEngine, request: rules_api.RulesRequest) -> Problem:
    """The 422 the services make of the rules engine's refusal of ``request``."""
    refusal = engine.handle(request)
    if not isinstance(refusal, rules_api.Rejected):
        raise ValueError(f"the rules accepted {request}")
    return rejection_problem(refusal)


def _bad_body(body_type: type, body: dict[str, Any]) -> Problem:
    """``check_request``'s answer to a body its Struct refuses, in msgspec's words."""
    try:
        msgspec.json.decode(ENCODER.encode(body), type=body_type, strict=True)
    except msgspec.ValidationError as error:
        message, _, where = str(error).partition(" - at `$")
        key = where.strip("`.")
        errors = [{"message": message, "source": "body", **({"key": key} if key else {})}]
        return invalid_request(f"the body does not match its schema: {error}", errors)
    raise ValueError(f"{body} is a valid {body_type.__name__}")


def _bad_parameter(
    method: str,
    url: str,
    key: str,
    message: str = "Expected `int` >= 1",
    *,
    source: str = "query",
) -> ProblemDocument:
    """Litestar's answer to a parameter out of its bounds, as ``shared.edge.errors`` words it."""
    error = {"message": message, "key": key, "source": source}
    problem = invalid_request(f"Validation failed for {method} {url}", [error])
    return problem.document(instance=url.partition("?")[0])


def _target_refused(url: str) -> Problem:
    """The webhooks API's answer to a target it may not call (an address given as such, so
    that no name is resolved while the contract is built)."""
    try:
        check_target(url, allowed_networks(""))
    except TargetRefused as refused:
        return Problem(422, "target-refused", "Webhook target refused", str(refused))
    raise ValueError(f"{url} is a webhook target")


def _match_refused(engine: RulesEngine) -> Problem:
    """A start whose match the rules refused to set up (options the rules no longer take)."""
    setup = rules_api.SetUp(game=GAME, options={"suits": 4}, seats=len(PLAYERS), seed=SEED)
    refusal = engine.handle(setup)
    return Problem(
        422, "match-refused", "Match refused by the rules", f"{REFUSED}: {refusal.detail}"
    )


def _unplayable_import(exported: dict[str, Any]) -> rules_api.ImportMatch:
    """The exported game with Bob playing one of Alice's cards (order 0) on his first turn."""
    first, bobs_play, *rest = exported["actions"]
    actions = [first, {**bobs_play, "target": 0}, *rest]
    document = msgspec.Raw(ENCODER.encode({**exported, "actions": actions}))
    return rules_api.ImportMatch(game=GAME, document=document)
