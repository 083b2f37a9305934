"""Every kind of problem the services answer with, by the code its ``type`` URI ends with.

The contract lists them (``x-problem-types``) with the games' own refusals; a unit test checks
that every problem the code can raise is here, with the same status and title, and that nothing
here is stale.
"""

from __future__ import annotations

import msgspec


class ProblemType(msgspec.Struct, frozen=True):
    """One documented kind of error: a client may branch on ``code`` (the ``type`` URI's end)."""

    code: str
    status: int
    title: str
    description: str
    """When it is answered, and what the client can do about it."""
    state: bool = False
    """What decides is not in the request but in the state it meets (a table's seats and
    visibility, a match's game and moves, the games' rules and catalogue, where a URL leads):
    a request the contract admits may get it. Any other 400 or 422 means the contract did not
    say something the server knows from the request alone (``test_contract_fuzz.py``)."""


def _types(*types: ProblemType) -> dict[str, ProblemType]:
    return {problem.code: problem for problem in types}


PROBLEM_TYPES = _types(
    # --- any route ---
    ProblemType(
        "invalid-request",
        400,
        "The request is not valid",
        "A parameter, header or the body does not match the contract (wrong type, out of range,"
        " unknown field, empty or not JSON, too deep, a NUL character; a move's action not one"
        " of its game's, as `action_schema` in the catalogue has them); a query or path"
        " parameter not in its one exact form (an integer in decimal digits, a boolean `true`"
        " or `false`, an enum's value as listed); `errors` says which and where.",
    ),
    ProblemType(
        "bad-request", 400, "Bad request", "The HTTP request itself could not be understood."
    ),
    ProblemType(
        "bad-authorization",
        401,
        "Bad Authorization header",
        "The Authorization header is not `Bearer <token>`.",
    ),
    ProblemType(
        "token-required",
        401,
        "Seat token required",
        "The route acts for a seat: send its token as `Authorization: Bearer <token>`.",
    ),
    ProblemType("unauthorized", 401, "Unauthorized", "Credentials are missing or wrong."),
    ProblemType("forbidden", 403, "Forbidden", "The credentials do not allow this."),
    ProblemType("not-found", 404, "Not found", "No route has this path."),
    ProblemType(
        "method-not-allowed",
        405,
        "Method not allowed",
        "The path exists but not with this method; `Allow` lists the methods it takes.",
    ),
    ProblemType("conflict", 409, "Conflict", "The request conflicts with the resource's state."),
    ProblemType(
        "payload-too-large", 413, "Payload too large", "The body is over the size limit (1 MB)."
    ),
    ProblemType(
        "unsupported-media-type",
        415,
        "Unsupported media type",
        "The body is not in a media type the route takes (JSON).",
    ),
    ProblemType(
        "too-many-requests", 429, "Too many requests", "Slow down: retry after `Retry-After`."
    ),
    ProblemType(
        "rate-limited",
        429,
        "Rate limited",
        "The client (its address, or its `X-API-Key`) sent more requests of this kind (read,"
        " write, opening a feed) than its limit, or has as many live feeds open as it may: retry"
        " after `Retry-After`. `RateLimit-Policy` and `RateLimit` tell the limit and what is left"
        " of it on every answer.",
    ),
    ProblemType("http-error", 400, "HTTP error", "Another HTTP-level error; `status` tells which."),
    ProblemType(
        "internal-error",
        500,
        "Internal server error",
        "A bug: the error has been logged, nothing was changed. Retrying may not help.",
    ),
    ProblemType(
        "service-unavailable",
        503,
        "Service unavailable",
        "Postgres or Redis did not answer; nothing was changed. Retry after `Retry-After`.",
    ),
    ProblemType(
        "not-ready",
        503,
        "Not ready",
        "A service's `/ready` (not part of this API: each service's own, for load balancers and"
        " orchestrators): a dependency it needs (Postgres, Redis, a rules worker) did not answer;"
        " `detail` names which.",
    ),
    ProblemType(
        "rules-unavailable",
        503,
        "Rules service unavailable",
        "No rules worker answered in time; nothing was changed. Retry after `Retry-After`.",
    ),
    # --- client apps and the operator ---
    ProblemType(
        "api-key-required",
        401,
        "API key required",
        "The route acts for a client app: send its key as `X-API-Key: <key>`.",
    ),
    ProblemType(
        "unknown-api-key",
        401,
        "Unknown API key",
        "The `X-API-Key` is not known or was revoked: ask the operator for a key.",
    ),
    ProblemType(
        "scope-missing",
        403,
        "Scope missing",
        "The key does not hold the scope the route needs (`tables`, `webhooks`, or the"
        " operator's).",
    ),
    ProblemType(
        "secret-key-required",
        403,
        "Secret key required",
        "A publishable key (one shipped to browsers) was sent where only the app's secret key"
        " may act: re-seating a player, an invitation's rotation or revocation, imports,"
        " webhooks, a table of bots only, a bot seated or removed or a table closed without a"
        " seat's token at the table.",
    ),
    ProblemType(
        "publishable-scope",
        422,
        "Scope not for a publishable key",
        "A publishable key was asked for with a scope other than `tables`.",
    ),
    ProblemType(
        "table-quota-reached",
        429,
        "Table quota reached",
        "The app has as many tables waiting for players as its quota allows: start some first,"
        " or ask the operator for a larger quota.",
    ),
    ProblemType("app-not-found", 404, "App not found", "No client app with that id."),
    ProblemType("key-not-found", 404, "Key not found", "The app has no API key with that id."),
    # --- idempotency and feeds ---
    ProblemType(
        "idempotency-key-reused",
        422,
        "Idempotency-Key reused",
        "The key was used before for a different request; use a new key per request.",
        state=True,
    ),
    ProblemType(
        "bad-last-event-id",
        400,
        "Bad Last-Event-ID",
        "Last-Event-ID must be the `id` (a version) of the last event received.",
    ),
    ProblemType(
        "bad-resume-point",
        409,
        "Resume point beyond the stream",
        "Last-Event-ID or `after` is past the stream's last event: resume from an `id` received.",
    ),
    ProblemType(
        "feed-ticket-refused",
        401,
        "Feed ticket refused",
        "The feed's `ticket` was used already (each is good for one connection), has expired,"
        " or is for another feed: get a new one (createMatchFeedTicket, createTableFeedTicket)"
        " and resume with `after`.",
    ),
    # --- catalogue and tables ---
    ProblemType("game-not-found", 404, "Game not found", "No game of that name: see `GET /games`."),
    ProblemType("table-not-found", 404, "Table not found", "No table with that id."),
    ProblemType("bad-cursor", 400, "Bad cursor", "`cursor` must be a `next_cursor` a page gave."),
    ProblemType(
        "private-table",
        403,
        "Private table",
        "The table is private: send its invitation token (or a seat token) as the bearer.",
    ),
    ProblemType(
        "seat-taken", 409, "Seat taken", "Someone has this seat: pick another, or any free one."
    ),
    ProblemType("table-full", 409, "Table full", "Every seat is taken."),
    ProblemType(
        "table-not-full",
        409,
        "Table not full",
        "A table starts once every seat is taken: wait for the other players.",
    ),
    ProblemType(
        "table-started",
        409,
        "Table already started",
        "The table's match has been asked for: seats can no longer change.",
    ),
    ProblemType(
        "table-closed",
        409,
        "Table closed",
        "The table was closed before its match started (by its app, or idle): nobody sits"
        " down at it or starts it any more.",
    ),
    ProblemType(
        "invitation-used-up",
        409,
        "Invitation used up",
        "The invitation filled as many seats as the table lets one fill: ask the table's app for"
        " a new one (it rotates the invitation).",
    ),
    ProblemType(
        "not-private",
        422,
        "Not a private table",
        "Only a private table has an invitation to bound (`seats_per_invitation`), rotate or"
        " revoke.",
        state=True,
    ),
    ProblemType(
        "no-such-seat", 422, "No such seat", "The table has no seat with that number.", state=True
    ),
    ProblemType(
        "unknown-bot",
        422,
        "Unknown bot",
        "The game has no bot of that name: its catalogue entry (`bots`) lists the bots it has.",
        state=True,
    ),
    ProblemType(
        "bad-bots",
        422,
        "Invalid bots",
        "The bots asked for do not fit the table: two for one seat, or more bots than seats.",
        state=True,
    ),
    ProblemType(
        "bad-hosting",
        422,
        "Invalid hosting",
        "The time control is not one (set exactly one of `per_move_s` and `bank_s`, and"
        " `increment_s` only with `bank_s`), or `on_timeout` is `pass` for a game with no pass"
        " in its rules (its catalogue entry lists its `timeout_policies`).",
        state=True,
    ),
    ProblemType(
        "not-a-bot",
        409,
        "Not a bot's seat",
        "No bot holds that seat (it is empty, or a player's): `unseatBot` frees bots' seats only.",
    ),
    ProblemType(
        "not-your-seat",
        403,
        "Not your seat",
        "The token is not the token of that seat (re-seating: not the token it had before the"
        " bot that holds it now took over; a seat a person holds is re-seated only by the"
        " app's secret key).",
    ),
    ProblemType(
        "players-seated",
        409,
        "Other players seated",
        "A player closes a table with a publishable key only while no other person is seated"
        " there: leave the seat instead, or close it with the app's secret key.",
        state=True,
    ),
    ProblemType(
        "not-seated",
        403,
        "Not seated",
        "The token is no seat's at this table or match (an invitation cannot act).",
    ),
    ProblemType(
        "match-refused",
        422,
        "Match refused by the rules",
        "The rules refused to set up the table's match (its options or seats).",
        state=True,
    ),
    # --- matches ---
    ProblemType("match-not-found", 404, "Match not found", "No match with that id."),
    ProblemType(
        "match-creating",
        409,
        "Match being created",
        "The table has started and its match is being set up: retry after `Retry-After`.",
    ),
    ProblemType(
        "private-match",
        403,
        "Private match",
        "The match is private: send a seat token or the table's invitation.",
    ),
    ProblemType(
        "unknown-token", 403, "Unknown token", "The token is no seat's token of this match."
    ),
    ProblemType(
        "stale-version",
        409,
        "Stale version",
        "The match moved on since `expected_version`: reload (the `ETag` header has the current"
        " version) and choose again.",
    ),
    ProblemType("match-finished", 409, "Match finished", "The match is over: no more moves."),
    ProblemType(
        "wrong-game",
        422,
        "Not this match's game",
        "The move's `game` is not the match's (`MatchInfo.game`): its action is another game's."
        " Nothing changed; send the match's game with one of its actions.",
        state=True,
    ),
    ProblemType(
        "match-running",
        409,
        "Match still running",
        "Only a finished match can be exported, replayed in full or rematched.",
    ),
    ProblemType(
        "version-not-found", 404, "No such version", "The match has not reached that version."
    ),
    ProblemType(
        "out-of-time",
        409,
        "Out of time",
        "The seat's clock ran out before the move arrived: the table's timeout policy applies"
        " (the match's next events say how).",
    ),
    ProblemType(
        "not-out-of-time",
        409,
        "Not out of time",
        "A timeout arrived before the clock ran out by the match service's clock: it is"
        " applied when it has (internal: the clocks service's command is re-driven).",
    ),
    ProblemType(
        "match-busy",
        409,
        "Match busy",
        "Moves kept coming while a change of seat was being recorded: retry after `Retry-After`.",
    ),
    ProblemType(
        "not-your-match",
        403,
        "Not your match",
        "Another app's key: only the secret key of the app whose match it is, or the seat's"
        " former holder, gives a seat a new token.",
    ),
    ProblemType(
        "game-required",
        422,
        "Game required",
        "A community-format file does not name its game: give `game` beside `document`.",
        state=True,
    ),
    # --- refused by the rules service, though no rule of play decides ---
    ProblemType(
        "unknown-game",
        422,
        "Unknown game",
        "The rules service has no game of that name: see `GET /games`.",
        state=True,
    ),
    ProblemType(
        "unknown-option",
        422,
        "Unknown table option",
        "The table's options name an option the game does not have: use only the options its"
        " catalogue entry lists.",
        state=True,
    ),
    ProblemType(
        "bad-option",
        422,
        "Invalid table option",
        "An option has the wrong type or value, or does not fit the other options or the"
        " number of players: correct the option the detail names.",
        state=True,
    ),
    ProblemType(
        "bad-seat-count",
        422,
        "Unsupported number of players",
        "The game does not take this number of players, or not with these options: change the"
        " number of seats or the options.",
        state=True,
    ),
    ProblemType(
        "export-unsupported",
        422,
        "Export format not supported",
        "The game has no file in that format: see `format` of `exportMatch`.",
        state=True,
    ),
    ProblemType(
        "import-unsupported",
        422,
        "Import format not supported",
        "The game cannot be imported from that format.",
        state=True,
    ),
    ProblemType(
        "invalid-document",
        422,
        "Invalid match document",
        "The match file is not one the game can replay (not JSON, wrong shape, or its moves"
        " break the rules): the detail says where.",
        state=True,
    ),
    # --- webhooks (operators) ---
    ProblemType("subscription-not-found", 404, "Subscription not found", "No such subscription."),
    ProblemType("delivery-not-found", 404, "Delivery not found", "No such delivery."),
    ProblemType(
        "target-refused",
        422,
        "Webhook target refused",
        "The URL is not http(s), does not resolve, or resolves to an address webhooks may not"
        " reach (private, loopback: unless the operator allowed its network).",
        state=True,
    ),
    ProblemType(
        "subscription-disabled",
        409,
        "Subscription disabled",
        "The subscription is disabled (through the API, after a long streak of failed"
        " attempts, or by its target answering 410): enable it (`PATCH` with `enabled: true`)"
        " before pinging it.",
    ),
    ProblemType(
        "delivery-pending",
        409,
        "Delivery pending",
        "The delivery is still being attempted: redeliver once it has succeeded or failed.",
    ),
)
"""Problems the services raise themselves, and the rules service's refusals that no rule of
play decides. What each game's rules refuse is documented with the game (``Game.refusals``)."""

RULES_REFUSAL = "Refused by the game's rules"
"""The title of a move the rules of play refuse (the ``type`` names the rule)."""
