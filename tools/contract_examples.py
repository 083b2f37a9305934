"""An example on every request body and response of the contract, made by running the code.

The game data come from a two-player Hanabi match that the rules engine plays in-process from a
fixed seed, answered as the rules service answers the match service. The bodies are the
services' own Structs encoded by msgspec, so a schema change breaks the examples here instead of
letting them drift; the problems are the ones each route raises, in its words. Ids, times and
secrets are fixed (the secrets visibly fake), so the contract is the same on every build.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from litestar.response.sse import ServerSentEventMessage

from services.lobby import schemas as lobby_api
from services.lobby.tables import not_private, public_event
from services.match import schemas as match_api
from services.match.answers import not_former_holder
from services.match.snapshot import MatchCreating
from services.rules.engine import RulesEngine
from services.rules.games.hanabi.state import DiscardCard, GiveRankClue, PlayCard
from services.rules.games.registry import GAMES
from services.webhooks import samples as webhook_samples
from services.webhooks import schemas as webhooks_api
from services.webhooks.dispatcher import event_key
from services.webhooks.signing import SECRET_PREFIX
from services.webhooks.subscriptions import subscription_disabled
from services.webhooks.targets import TargetRefused, allowed_networks, check_target
from shared.domain import messages, rules_api
from shared.domain.hosting import NO_HOSTING
from shared.domain.messages import CreateMatch, EventEnvelope, EventMetadata
from shared.edge import apps
from shared.edge.errors import (
    PROBLEM_MEDIA_TYPE,
    Problem,
    ProblemDocument,
    invalid_request,
    not_found,
)
from shared.edge.feed import RETRY_MS, check_resume_point
from shared.edge.feed_http import resume_point
from shared.edge.feed_tickets import TICKET_PREFIX, TICKET_TTL_S, FeedTicket, ticket_refused
from shared.edge.runtime import rejection_problem
from shared.infra.commands import REFUSED
from shared.infra.eventstore import NewEvent
from shared.infra.settings import Settings

GAME = "hanabi"
SEED = 20250606
PLAYERS = ["Alice", "Bob"]
TABLE_NAME = "Friday fireworks"
TABLE_OPTIONS = {"suits": 5}
TABLE_ID = "5d1f0c3ab7e24f0e9c8b6a4d2e1f3a57"
MATCH_ID = "8c3e5a7b9d1f4e2a8b6c0d9e7f5a3b1c"
IMPORTED_MATCH_ID = "2a4c6e8f0b1d4a3c9e7f5b3d1a8c6e4f"
SUBSCRIPTION_ID = "b7e9d1c3a5f74b2e8d0c6a4f2e9b1d3c"
DELIVERY_ID = 41
APP_ID = "e4a2c6b8d0f14e3a9c7b5d3f1e8a6c42"
APP_NAME = "Fireworks Night"
KEY_ID = "9f7d5b3a1c8e4f6a2d0b9c7e5a3f1d8b"
HOOK_URL = "https://hooks.example.com/playtable"

TAKEOVER_BOT = f"{GAME}-heuristic"
REMATCH_TABLE_ID = "3f2e1d0c9b8a47a6b5c4d3e2f1a0b9c8"
PATH_VALUES = {
    "game": GAME,
    "table_id": TABLE_ID,
    "seat": 1,
    "match_id": MATCH_ID,
    "subscription_id": SUBSCRIPTION_ID,
    "delivery_id": DELIVERY_ID,
    "app_id": APP_ID,
    "key_id": KEY_ID,
}
"""The path parameters of the example requests: the ``instance`` of their problems."""

STORY_START = datetime(2025, 6, 6, 19, 30, tzinfo=UTC)
TABLE_EVENT_TIMES_S = (0, 20, 65, 90)
"""When the table was created, Alice sat, Bob sat and Alice started it."""
MATCH_CREATED_S = 91
SECONDS_PER_MOVE = 40

_json = msgspec.json.Encoder()


class MissingExample(LookupError):
    """The contract and the examples disagree: a route has no example, or one has no route."""


def add_examples(contract: dict[str, Any]) -> None:
    """Set ``example`` on every request body and every response content of ``contract``.

    Raises ``MissingExample`` when a route answers something this module has no example of (a
    route added without one), or when an example belongs to no route any more.
    """
    story = _Story()
    requests = _request_examples(story)
    responses = _response_examples(story)
    problems = _problem_examples(story)
    used: set[Any] = set()
    for template, operation in _operations(contract):
        operation_id = operation["operationId"]
        keyed = any(
            "appKey" in requirement or "operatorKey" in requirement
            for requirement in operation.get("security", [])
        )
        for media in operation.get("requestBody", {}).get("content", {}).values():
            media["example"] = _builtins(_example(requests, operation_id, used))
        for status, response in operation["responses"].items():
            for media_type, media in response.get("content", {}).items():
                key = (operation_id, int(status))
                if media_type == PROBLEM_MEDIA_TYPE:
                    example = _problem(problems, key, template, used, keyed=keyed)
                else:
                    example = _example(responses, key, used)
                media["example"] = _builtins(example)
    unused = [key for table in (requests, responses, problems) for key in table if key not in used]
    if unused:
        raise MissingExample(f"examples of no route in the contract: {unused}")


def _operations(contract: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in contract["paths"].items():
        for operation in item.values():
            if isinstance(operation, dict) and "responses" in operation:
                yield path, operation


def _example(examples: dict[Any, Any], key: Any, used: set[Any]) -> Any:
    if key not in examples:
        raise MissingExample(f"no example for {key}: add one in tools/contract_examples.py")
    used.add(key)
    return examples[key]


def _problem(
    problems: dict[tuple[str, int], Problem | ProblemDocument],
    key: tuple[str, int],
    template: str,
    used: set[Any],
    *,
    keyed: bool,
) -> ProblemDocument:
    """The route's own problem for the status, else what any route answers with it (a route
    taking an API key: its 401 and 403 are the key's)."""
    if key in problems:
        problem = _example(problems, key, used)
    elif keyed and key[1] in API_KEY_PROBLEMS:
        problem = API_KEY_PROBLEMS[key[1]]
    else:
        problem = _generic_problem(key, template)
    if isinstance(problem, ProblemDocument):
        return problem
    return problem.document(instance=_example_path(template))


def _example_path(template: str) -> str:
    return template.format(**PATH_VALUES)


def _nul_in(template: str) -> str:
    """The example path with a NUL ending each text parameter (the route still matches)."""
    values = {name: f"{v}\x00" if isinstance(v, str) else v for name, v in PATH_VALUES.items()}
    path = template.format(**values)
    if "\x00" not in path:
        raise MissingExample(f"{template} has no text parameter to hold a NUL: add its 400")
    return path


def _builtins(example: Any) -> Any:
    """The example as JSON carries it: encoded by msgspec as the services encode it."""
    return msgspec.json.decode(_json.encode(example))


def _fake_token(holder: str) -> str:
    """A seat or invitation token that no one could mistake for a real one."""
    return f"example-{holder}-token-not-a-secret"


def _fake_signing_secret(number: int) -> str:
    """A signing secret in the real format (24 bytes, base64), which decodes to a confession."""
    return SECRET_PREFIX + base64.b64encode(f"example signing secret {number}".encode()).decode()


def _at(seconds: float) -> str:
    """A moment of the story as the services show times (Postgres' ``isoformat``)."""
    return (STORY_START + timedelta(seconds=seconds)).isoformat()


def _feed_ticket(feed: str, given_at_s: float) -> FeedTicket:
    """A ticket to a feed of the story, given at ``given_at_s``."""
    ticket = f"{TICKET_PREFIX}example-{feed}-feed-ticket-not-a-secret"
    return FeedTicket(ticket=ticket, expires_at=_at(given_at_s + TICKET_TTL_S))


# --- the Hanabi match ------------------------------------------------------------------------


class _HanabiMatch:
    """A match played in-process by the rules engine, kept as the match service keeps one: its
    stored events, the seat behind each (None: the set-up), when each was recorded, and its
    progress after every move."""

    def __init__(self, engine: RulesEngine, options: dict[str, Any]) -> None:
        done = engine.handle(
            rules_api.SetUp(game=GAME, options=options, seats=len(PLAYERS), seed=SEED)
        )
        self.engine = engine
        self.events: list[rules_api.EncodedEvent] = list(done.events)
        self.actors: list[int | None] = [None] * len(done.events)
        self.moves = [0] * len(done.events)
        self.progress_at = {self.version: done.progress}

    @property
    def version(self) -> int:
        return len(self.events)

    @property
    def progress(self) -> rules_api.Progress:
        return self.progress_at[self.version]

    def legal_actions(self, seat: int) -> list[Any]:
        state = self.progress.state
        return self.engine.handle(rules_api.ListLegalActions(game=GAME, state=state, seat=seat))

    def act(self, seat: int, action: Any) -> rules_api.Decided:
        """Play ``action``, which must be one the engine lists as legal (else the story broke)."""
        if action not in self.legal_actions(seat):
            raise ValueError(f"{action} is not legal for seat {seat} at version {self.version}")
        decided = self.engine.handle(
            rules_api.Decide(
                game=GAME,
                state=self.progress.state,
                seat=seat,
                action=msgspec.Raw(_json.encode(action)),
            )
        )
        move = self.moves[-1] + 1
        self.events += decided.events
        self.actors += [seat] * len(decided.events)
        self.moves += [move] * len(decided.events)
        self.progress_at[self.version] = decided.progress
        return decided

    def recorded_at(self, version: int) -> str:
        """The events of one move commit together, so they share its time."""
        return _at(MATCH_CREATED_S + SECONDS_PER_MOVE * self.moves[version - 1])

    def redacted(self, seat: int | None) -> list[msgspec.Raw]:
        """Every event as ``seat`` may see it (None: a spectator)."""
        data = [event.data for event in self.events]
        return self.engine.handle(rules_api.RedactEvents(game=GAME, events=data, seat=seat))

    def view(self, version: int, seat: int | None) -> msgspec.Raw:
        state = self.progress_at[version].state
        shown = self.engine.handle(rules_api.ShowView(game=GAME, state=state, seat=seat))
        return msgspec.Raw(_json.encode(shown))

    def event_items(self, seat: int | None, first: int, last: int) -> list[match_api.MatchEvent]:
        """Events ``first`` to ``last`` as ``listMatchEvents`` gives them to ``seat``."""
        redacted = self.redacted(seat)
        return [
            match_api.MatchEvent(
                game=GAME,
                version=version,
                type=self.events[version - 1].type,
                data=redacted[version - 1],
                seat=self.actors[version - 1],
                recorded_at=self.recorded_at(version),
            )
            for version in range(first, last + 1)
        ]


@dataclass(frozen=True)
class _Turn:
    """A move as its seat submitted it: the version it was chosen at, what the seat could do
    then, what it did, and the rules' answer."""

    seat: int
    version: int
    legal: list[Any]
    action: Any
    decided: rules_api.Decided

    @classmethod
    def take(cls, match: _HanabiMatch, seat: int, action: Any) -> _Turn:
        version, legal = match.version, match.legal_actions(seat)
        return cls(seat, version, legal, action, match.act(seat, action))

    @property
    def version_after(self) -> int:
        return self.version + len(self.decided.events)


def _play(engine: RulesEngine, options: dict[str, Any]) -> tuple[_HanabiMatch, _Turn]:
    """Alice clues Bob's 1s, Bob plays one (the move the match examples follow), Alice
    discards, then both play blind, oldest card first, until the third fuse burns."""
    match = _HanabiMatch(engine, options)
    clue = match.act(0, GiveRankClue(target=1, rank=1))
    touched = msgspec.json.decode(clue.events[0].data)["touched"]
    bobs_play = _Turn.take(match, 1, PlayCard(card=touched[0]))
    match.act(0, _first(DiscardCard, match.legal_actions(0)))
    while match.progress.to_move:
        seat = match.progress.to_move[0]
        match.act(seat, _first(PlayCard, match.legal_actions(seat)))
    return match, bobs_play


def _first(kind: type, actions: list[Any]) -> Any:
    return next(action for action in actions if isinstance(action, kind))


# --- the story -------------------------------------------------------------------------------


def _abridged(action_schema: dict[str, Any]) -> dict[str, Any]:
    """A game's ``action_schema`` as an example shows it: each action by name only. The real
    one refers to its own ``$defs``, and tools that resolve every ``$ref`` in a contract
    (examples included) would look for those in the contract."""

    def named(schema: Any) -> Any:
        if isinstance(schema, list):
            return [named(item) for item in schema]
        if not isinstance(schema, dict):
            return schema
        if "$ref" in schema:
            return {"title": schema["$ref"].rpartition("/")[2]}
        return {
            key: named(value)
            for key, value in schema.items()
            if key not in ("$defs", "discriminator")
        }

    return {
        **named(action_schema),
        "description": "Abridged in this example: the catalogue gives each action's schema",
    }


class _Story:
    """Everything the examples show, made once: the catalogue, Alice and Bob's table, the
    match it started, a re-import of that match and a webhook subscription to the table."""

    def __init__(self) -> None:
        self.engine = RulesEngine(GAMES)
        self.catalogue = [
            msgspec.structs.replace(game, action_schema=_abridged(game.action_schema))
            for game in msgspec.convert(self.engine.catalogue, list[lobby_api.GameInfo])
        ]
        self.game = next(game for game in self.catalogue if game.name == GAME)
        options = self.engine.handle(
            rules_api.ResolveOptions(game=GAME, options=TABLE_OPTIONS, seats=len(PLAYERS))
        )
        self.created = messages.TableCreated(
            table_id=TABLE_ID,
            game=GAME,
            name=TABLE_NAME,
            seats=len(PLAYERS),
            options=options,
            seeded=True,
        )
        self.table_events: list[tuple[messages.TableEvent, int | None]] = [
            (self.created, None),
            (messages.SeatTaken(seat=0, player=PLAYERS[0]), 0),
            (messages.SeatTaken(seat=1, player=PLAYERS[1]), 1),
            (messages.TableStarted(match_id=MATCH_ID), 0),
        ]
        self.match, self.turn = _play(self.engine, options)
        self.exported: dict[str, Any] = self.engine.handle(
            rules_api.ExportMatch(
                game=GAME, events=[event.data for event in self.match.events], players=PLAYERS
            )
        )

    def table(
        self, events: int, *, bob_left: bool = False, bot_seated: bool = False
    ) -> lobby_api.TableInfo:
        """The table after its first ``events`` events (and Bob's leaving, or a bot seated in
        his place), as the lobby's read model shows it: secret options as null."""
        history = [event for event, _ in self.table_events[:events]]
        if bob_left or bot_seated:
            history.append(messages.SeatLeft(seat=1, player=PLAYERS[1]))
        if bot_seated:
            history.append(messages.SeatTaken(seat=1, player=TAKEOVER_BOT, bot=TAKEOVER_BOT))
        players: dict[int, str] = {}
        bots: dict[int, str] = {}
        match_id = None
        for event in history:
            if isinstance(event, messages.SeatTaken):
                players[event.seat] = event.player
                if event.bot is not None:
                    bots[event.seat] = event.bot
            elif isinstance(event, messages.SeatLeft):
                del players[event.seat]
            elif isinstance(event, messages.TableStarted):
                match_id = event.match_id
        secret = {option.name for option in self.game.options if option.secret}
        created = self.created
        return lobby_api.TableInfo(
            table_id=created.table_id,
            game=created.game,
            name=created.name,
            options={name: None if name in secret else v for name, v in created.options.items()},
            seeded=created.seeded,
            status="open" if match_id is None else "started",
            match_id=match_id,
            seats=[
                lobby_api.SeatInfo(seat=n, player=players.get(n), bot=bots.get(n))
                for n in range(created.seats)
            ],
            version=len(history),
            visibility=created.visibility,
            secret_options_set=sorted(
                name for name in secret if created.options.get(name) is not None
            ),
            commitments=created.commitments,
            seats_per_invitation=None,
            hosting=created.hosting,
            rematch_of=None,
            rematch_table_id=None,
        )

    def table_feed(self) -> str:
        """The table's feed from its creation, as ``TableFeeds`` sends it (no secrets)."""
        messages = []
        for version, ((event, seat), seconds) in enumerate(
            zip(self.table_events, TABLE_EVENT_TIMES_S, strict=True), start=1
        ):
            name = type(event).__name__
            stored = NewEvent(name, _json.encode(event), _metadata(version))
            item = lobby_api.TableFeedEvent(
                version=version,
                type=name,
                data=msgspec.Raw(public_event(stored)),
                seat=seat,
                recorded_at=_at(seconds),
            )
            messages.append(_sse(version, name, item))
        return _stream(messages)

    def match_info(self, version: int, seat: int | None) -> match_api.MatchInfo:
        progress = self.match.progress_at[version]
        return match_api.MatchInfo(
            match_id=MATCH_ID,
            table_id=TABLE_ID,
            game=GAME,
            players=PLAYERS,
            version=version,
            status=_status(progress.result),
            to_move=progress.to_move,
            you=seat,
            view=self.match.view(version, seat),
            result=progress.result,
            bots={},
            hosting=NO_HOSTING,
            clock=None,
        )

    def replay(self, version: int) -> match_api.MatchReplay:
        """The finished match at ``version`` as a spectator asks for it with ``full=true``."""
        state = self.match.progress_at[version].state
        span = rules_api.ReplaySpan(game=GAME, state=state, events=[], seat=None, full=True)
        (replayed,) = self.engine.handle(span)
        return match_api.MatchReplay(
            match_id=MATCH_ID,
            game=GAME,
            players=PLAYERS,
            version=version,
            status=_status(replayed.result),
            to_move=replayed.to_move,
            you=None,
            view=replayed.view,
            result=replayed.result,
            state=replayed.state,
        )

    def match_feed_end(self, after: int) -> str:
        """A spectator's feed of the finished match resumed after ``after``: the last events,
        then ``MatchFinished``, as ``MatchFeeds`` sends them."""
        last, result = self.match.version, self.match.progress.result
        if result is None:
            raise ValueError("the story's match never finished")
        items = self.match.event_items(None, after + 1, last)
        messages = [_sse(item.version, item.type, item) for item in items]
        finished = match_api.MatchFinished(match_id=MATCH_ID, version=last, result=result)
        messages.append(_sse(last, "MatchFinished", finished))
        return _stream(messages)

    def imported_match(self) -> match_api.ImportedMatch:
        """The exported match imported again, as ``importMatch`` answers (to a spectator)."""
        document = msgspec.Raw(_json.encode(self.exported))
        imported = self.engine.handle(rules_api.ImportMatch(game=GAME, document=document))
        shown = self.engine.handle(
            rules_api.ShowView(game=GAME, state=imported.progress.state, seat=None)
        )
        return match_api.ImportedMatch(
            match_id=IMPORTED_MATCH_ID,
            tokens=[_fake_token(f"imported-seat{seat}") for seat in range(imported.seats)],
            match=match_api.MatchInfo(
                match_id=IMPORTED_MATCH_ID,
                table_id=None,
                game=GAME,
                players=imported.players,
                version=len(imported.events),
                status=_status(imported.progress.result),
                to_move=imported.progress.to_move,
                you=None,
                view=msgspec.Raw(_json.encode(shown)),
                result=imported.progress.result,
                bots={},
                hosting=NO_HOSTING,
                clock=None,
            ),
        )


def _status(result: dict[str, Any] | None) -> match_api.PlayStatus:
    return "running" if result is None else "finished"


def _metadata(version: int) -> EventMetadata:
    return EventMetadata(event_id=f"example-event-{version}", correlation_id="example")


def _sse(version: int, event: str, item: msgspec.Struct) -> ServerSentEventMessage:
    return ServerSentEventMessage(id=version, event=event, data=_json.encode(item).decode())


def _stream(messages: list[ServerSentEventMessage]) -> str:
    """A feed's bytes as ``FeedHub.follow`` sends them: the retry hint, then the messages."""
    opening = ServerSentEventMessage(data=None, retry=RETRY_MS)
    return b"".join(message.encode() for message in [opening, *messages]).decode()


# --- webhooks --------------------------------------------------------------------------------

SUBSCRIBED_EVENTS = ["TableStarted", "MatchFinished"]
SUBSCRIBED_AT_S = -600
"""Ten minutes before the table: the subscription watches it from its creation."""
ROTATED_AT_S = 86_400
"""A day into the story, the subscription's secret is rotated."""


def _subscription(*, enabled: bool = True) -> webhooks_api.SubscriptionInfo:
    return webhooks_api.SubscriptionInfo(
        id=SUBSCRIPTION_ID,
        url=HOOK_URL,
        event_types=SUBSCRIBED_EVENTS,
        table_id=TABLE_ID,
        match_id=None,
        enabled=enabled,
        disabled_reason=None if enabled else "disabled through the API",
        created_at=_at(SUBSCRIBED_AT_S),
        previous_secret_until=None,
        failing_since=None,
    )


APP_CREATED_AT_S = -86_400
"""A day before the table, the operator registers the app."""


def _app(max_open_tables: int) -> apps.AppInfo:
    return apps.AppInfo(
        app_id=APP_ID,
        name=APP_NAME,
        max_open_tables=max_open_tables,
        created_at=_at(APP_CREATED_AT_S),
    )


def _key(scopes: list[str], label: str, *, revoked: bool = False) -> apps.KeyInfo:
    return apps.KeyInfo(
        key_id=KEY_ID,
        app_id=APP_ID,
        kind="secret",
        scopes=scopes,
        label=label,
        created_at=_at(APP_CREATED_AT_S),
        revoked_at=_at(ROTATED_AT_S) if revoked else None,
    )


def _fake_api_key(number: int) -> str:
    return f"{apps.KIND_PREFIXES['secret']}example-app-key-{number}-not-a-secret"


def _delivery(status: str) -> webhooks_api.DeliveryInfo:
    """The delivery of the table's start: refused once by a busy target, then delivered."""
    started = EventEnvelope(
        stream_id=f"table-{TABLE_ID}",
        version=len(TABLE_EVENT_TIMES_S),
        type="TableStarted",
        data=msgspec.Raw(b"{}"),
        metadata=_metadata(len(TABLE_EVENT_TIMES_S)),
    )
    sent_s = TABLE_EVENT_TIMES_S[-1] + 0.2
    retried_s = sent_s + Settings().webhook_retry_base_s
    return webhooks_api.DeliveryInfo(
        id=DELIVERY_ID,
        webhook_id=event_key(started),
        event_type=started.type,
        stream_id=started.stream_id,
        status=status,
        created_at=_at(TABLE_EVENT_TIMES_S[-1] + 0.1),
        attempts=[
            webhooks_api.AttemptInfo(
                attempted_at=_at(sent_s), status_code=503, duration_ms=84.6, error="HTTP 503"
            ),
            webhooks_api.AttemptInfo(
                attempted_at=_at(retried_s), status_code=200, duration_ms=41.3, error=None
            ),
        ],
    )


def _ping() -> webhooks_api.DeliveryInfo:
    """A ping just sent, its attempt not made yet."""
    return webhooks_api.DeliveryInfo(
        id=DELIVERY_ID + 1,
        webhook_id="ping:0f8e6d4c2b0a4e9c8d7f6e5d4c3b2a19",
        event_type=webhook_samples.PING,
        stream_id=f"ping-{SUBSCRIPTION_ID}",
        status="pending",
        created_at=_at(SUBSCRIBED_AT_S + 1),
        attempts=[],
    )


EVENT_TYPES_SHOWN = ("TableStarted", "ClueGiven", "MatchFinished")
"""The event types ``listWebhookEventTypes``' example shows (of all of them)."""


# --- the tables of examples ------------------------------------------------------------------


def _request_examples(story: _Story) -> dict[str, Any]:
    """The request body of each route that takes one, by operationId."""
    turn = story.turn
    return {
        "createTable": lobby_api.CreateTable(
            game=GAME, seats=len(PLAYERS), options=TABLE_OPTIONS, name=TABLE_NAME, seed=SEED
        ),
        "joinTable": lobby_api.JoinTable(name=PLAYERS[1]),
        "seatBot": lobby_api.SeatBot(bot=TAKEOVER_BOT, seat=1),
        "submitAction": match_api.SubmitAction(
            game=GAME, expected_version=turn.version, action=msgspec.to_builtins(turn.action)
        ),
        "importMatch": match_api.ImportMatch(document=story.exported, game=GAME),
        "reseatPlayer": match_api.Reseat(name=PLAYERS[1]),
        "createWebhookSubscription": webhooks_api.CreateSubscription(
            url=HOOK_URL, event_types=SUBSCRIBED_EVENTS, table_id=TABLE_ID
        ),
        "updateWebhookSubscription": webhooks_api.UpdateSubscription(enabled=False),
        "createApp": apps.CreateApp(name=APP_NAME, max_open_tables=200),
        "updateApp": apps.UpdateApp(max_open_tables=500),
        "createApiKey": apps.CreateKey(scopes=["tables"], label="game server"),
    }


def _response_examples(story: _Story) -> dict[tuple[str, int], Any]:
    """The successful answer of each route, by operationId and status: Bob's view of the match
    when he is to move, his move, and the match once over."""
    turn, match = story.turn, story.match
    started = story.table(events=4)
    overlap_s = Settings().webhook_secret_overlap_s
    return {
        ("listGames", 200): story.catalogue,
        ("getGame", 200): story.game,
        ("listTables", 200): lobby_api.TablePage(items=[story.table(events=2)], next_cursor=None),
        ("createTable", 201): lobby_api.CreatedTable(
            **msgspec.structs.asdict(story.table(events=1)), invitation_token=None
        ),
        ("getTable", 200): story.table(events=3),
        ("followTable", 200): story.table_feed(),
        ("createTableFeedTicket", 201): _feed_ticket("table", TABLE_EVENT_TIMES_S[-1]),
        ("joinTable", 201): lobby_api.Joined(
            seat=1, token=_fake_token("bob"), table=story.table(events=3)
        ),
        ("leaveTable", 200): story.table(events=3, bob_left=True),
        ("seatBot", 201): story.table(events=3, bot_seated=True),
        ("unseatBot", 200): story.table(events=3, bob_left=True),
        ("rematchTable", 201): lobby_api.Joined(
            seat=1,
            token=_fake_token("bob-rematch"),
            table=msgspec.structs.replace(
                story.table(events=1),
                table_id=REMATCH_TABLE_ID,
                rematch_of=TABLE_ID,
                seats=[
                    lobby_api.SeatInfo(seat=0, player=None, bot=None),
                    lobby_api.SeatInfo(seat=1, player=PLAYERS[1], bot=None),
                ],
                version=2,
            ),
        ),
        ("startTable", 201): started,
        ("startTable", 202): started,
        ("getMatch", 200): story.match_info(turn.version, turn.seat),
        ("leaveMatch", 200): msgspec.structs.replace(
            story.match_info(turn.version, None), bots={1: TAKEOVER_BOT}
        ),
        ("reseatPlayer", 201): match_api.Reseated(
            seat=1,
            token=_fake_token("bob-reseated"),
            match=msgspec.structs.replace(story.match_info(turn.version, 1), view=None),
        ),
        ("listLegalActions", 200): match_api.LegalActions(
            game=GAME,
            version=turn.version,
            seat=turn.seat,
            actions=[msgspec.Raw(_json.encode(action)) for action in turn.legal],
        ),
        ("submitAction", 201): match_api.ActionAccepted(
            game=GAME,
            version=turn.version_after,
            events=turn.decided.actor_events,
            to_move=turn.decided.progress.to_move,
            status=_status(turn.decided.progress.result),
            result=turn.decided.progress.result,
            view=turn.decided.actor_view,
            legal_actions=turn.decided.legal_actions.get(turn.seat, []),
        ),
        ("listMatchEvents", 200): match_api.EventPage(
            items=match.event_items(turn.seat, 1, turn.version_after),
            next_cursor=None,
            next_after=None,
        ),
        ("followMatch", 200): story.match_feed_end(after=match.version - 3),
        ("createMatchFeedTicket", 201): _feed_ticket("match", MATCH_CREATED_S),
        ("replayMatch", 200): story.replay(turn.version),
        ("exportMatch", 200): story.exported,
        ("importMatch", 201): story.imported_match(),
        ("createWebhookSubscription", 201): webhooks_api.CreatedSubscription(
            subscription=_subscription(), secret=_fake_signing_secret(1)
        ),
        ("listWebhookSubscriptions", 200): [_subscription()],
        ("getWebhookSubscription", 200): _subscription(),
        ("updateWebhookSubscription", 200): _subscription(enabled=False),
        ("rotateWebhookSecret", 200): webhooks_api.RotatedSecret(
            secret=_fake_signing_secret(2), previous_secret_until=_at(ROTATED_AT_S + overlap_s)
        ),
        ("listWebhookDeliveries", 200): webhooks_api.DeliveryPage(
            deliveries=[_delivery("delivered")], next_cursor=None, next_after=None
        ),
        ("redeliverWebhook", 202): _delivery("pending"),
        ("pingWebhookSubscription", 202): _ping(),
        ("listWebhookEventTypes", 200): [
            info
            for info in webhook_samples.event_types(story.engine.event_samples)
            if info.type in EVENT_TYPES_SHOWN
        ],
        ("createApp", 201): apps.CreatedApp(
            app=_app(200),
            key=apps.CreatedKey(
                key=_key(["tables", "webhooks"], "first key"), api_key=_fake_api_key(1)
            ),
        ),
        ("listApps", 200): [_app(200)],
        ("rotateInvitation", 200): lobby_api.Invitation(
            invitation_token=_fake_token("second-invitation")
        ),
        ("revokeInvitation", 200): story.table(1),
        ("closeTable", 200): msgspec.structs.replace(
            story.table(events=2),
            status="closed",
            seats=[lobby_api.SeatInfo(seat=n, player=None, bot=None) for n in range(2)],
            version=3,
        ),
        ("getApp", 200): _app(200),
        ("updateApp", 200): _app(500),
        ("createApiKey", 201): apps.CreatedKey(
            key=_key(["tables"], "game server"), api_key=_fake_api_key(2)
        ),
        ("listApiKeys", 200): [_key(["tables", "webhooks"], "first key")],
        ("revokeApiKey", 200): _key(["tables", "webhooks"], "first key", revoked=True),
    }


# --- problems --------------------------------------------------------------------------------

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


def _generic_problem(key: tuple[str, int], template: str) -> Problem | ProblemDocument:
    """What a route without a problem of its own for the status answers: a 400 for a NUL in
    a path parameter (all that can be wrong with a request of path parameters alone), else
    the shared handlers' answer."""
    _, status = key
    if status == 400:
        return invalid_request("the URL holds a NUL character").document(instance=_nul_in(template))
    if status not in GENERIC_PROBLEMS:
        raise MissingExample(f"no problem example for {key}: add one in tools/contract_examples.py")
    return GENERIC_PROBLEMS[status]


def _problem_examples(story: _Story) -> dict[tuple[str, int], Problem | ProblemDocument]:
    """The problems particular to each route, by operationId and status; a Problem is answered
    on the route's example path, a ProblemDocument on its own."""
    turn, match = story.turn, story.match
    engine = story.engine
    match_path = _example_path("/matches/{match_id}")
    subscription_path = _example_path("/webhooks/subscriptions/{subscription_id}")
    missing_match = not_found("match", MATCH_ID)
    missing_table = not_found("table", TABLE_ID)
    missing_subscription = not_found("subscription", SUBSCRIPTION_ID)
    missing_app = not_found("app", APP_ID)
    out_of_turn = rules_api.Decide(
        game=GAME,
        state=match.progress_at[turn.version].state,
        seat=1 - turn.seat,
        action=msgspec.Raw(_json.encode(turn.action)),
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
        msgspec.json.decode(_json.encode(body), type=body_type, strict=True)
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
    document = msgspec.Raw(_json.encode({**exported, "actions": actions}))
    return rules_api.ImportMatch(game=GAME, document=document)
