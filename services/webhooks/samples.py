"""Sample webhooks: one of every event type a subscription may name, built as the dispatcher
builds the real ones, and the test ping. ``GET /webhooks/event-types`` lists them and the
contract shows them; the games' samples come from the rules service (no game code here)."""

from __future__ import annotations

import msgspec

from services.webhooks import schemas as s
from services.webhooks.bodies import webhook_body
from shared.domain.hosting import (
    BotTookOver,
    ClockUpdated,
    MatchForfeited,
    PlayerLeft,
    PlayerReseated,
    TurnTimedOut,
)
from shared.domain.messages import (
    MATCH_FINISHED,
    EventEnvelope,
    EventMetadata,
    FinishedMatch,
    RematchOffered,
    SeatLeft,
    SeatTaken,
    TableClosed,
    TableCreated,
    TableStarted,
    new_id,
    summary,
)
from shared.domain.rules_api import GameSamples

PING = "WebhookPing"
"""The type of a test ping: sent to a subscription on request, whatever its event types."""
PING_MESSAGE = "A test webhook from playtable: your endpoint receives and can verify webhooks."

SAMPLE_TIME_MS = 1_749_238_200_000
"""When every sample happened (2025-06-06T19:30:00Z): samples are the same on every build."""
SAMPLE_TABLE_ID = "5d1f0c3ab7e24f0e9c8b6a4d2e1f3a57"
SAMPLE_MATCH_ID = "8c3e5a7b9d1f4e2a8b6c0d9e7f5a3b1c"
SAMPLE_SUBSCRIPTION_ID = "b7e9d1c3a5f74b2e8d0c6a4f2e9b1d3c"
TABLE_SAMPLES = (
    TableCreated(
        table_id=SAMPLE_TABLE_ID,
        game="hanabi",
        name="Friday fireworks",
        seats=2,
        options={},
        seeded=False,
    ),
    SeatTaken(seat=0, player="Alice"),
    SeatLeft(seat=0, player="Alice"),
    TableStarted(match_id=SAMPLE_MATCH_ID),
    RematchOffered(rematch_table_id="0a9b8c7d6e5f40312a3b4c5d6e7f8091"),
    TableClosed(reason="idle"),
)
"""A table's events as published (``TableCreated`` without its options), in stream order (but
the last: a table that closes never starts)."""

_FORFEIT = {"scores": [0, 0], "winners": [0], "reason": "forfeit", "forfeited": [1]}
HOSTING_SAMPLES = (
    (
        12,
        ClockUpdated(
            moved=0,
            used_ms=8_412,
            remaining_ms=[291_588, 300_000],
            on_clock=[1],
            deadline_ms=SAMPLE_TIME_MS + 300_000,
            server_time_ms=SAMPLE_TIME_MS,
        ),
    ),
    (13, PlayerLeft(seat=1, player="Bob", policy="bot")),
    (14, BotTookOver(seat=1, bot="hanabi-heuristic", reason="left")),
    (15, PlayerReseated(seat=1, player="Bob", from_bot="hanabi-heuristic")),
    (16, TurnTimedOut(seat=1, policy="forfeit", deadline_ms=SAMPLE_TIME_MS - 20)),
    (17, MatchForfeited(seats=[1], reason="timeout", result=_FORFEIT)),
)
"""What a match records about its seats and clocks (every game's), with their versions."""

_json = msgspec.json.Encoder()


def event_types(games: list[GameSamples]) -> list[s.EventTypeInfo]:
    """Every event type a subscription may name, by type, each with a sample: a table's, each
    game's (the first game in the catalogue that records it gives the sample) and
    ``MatchFinished`` (how the catalogue's first game's sample match ended)."""
    infos = [
        s.EventTypeInfo(
            type=type(event).__name__,
            games=[],
            description=summary(type(event)),
            sample=_sample(f"table-{SAMPLE_TABLE_ID}", version, type(event).__name__, event),
        )
        for version, event in enumerate(TABLE_SAMPLES, 1)
    ]
    every_game = [game.game for game in games]
    first = games[0]
    infos += [
        s.EventTypeInfo(
            type=type(event).__name__,
            games=every_game,
            description=summary(type(event)),
            sample=_sample(
                f"match-{SAMPLE_MATCH_ID}", version, type(event).__name__, event, first.game
            ),
        )
        for version, event in HOSTING_SAMPLES
    ]
    by_type: dict[str, s.EventTypeInfo] = {}
    for game in games:
        for event in game.events:
            info = by_type.get(event.type)
            if info is None:
                stream = f"match-{SAMPLE_MATCH_ID}"
                sample = _sample(stream, event.version, event.type, event.data, game.game)
                by_type[event.type] = s.EventTypeInfo(event.type, [], event.description, sample)
            by_type[event.type].games.append(game.game)
    finished = FinishedMatch(match_id=SAMPLE_MATCH_ID, result=first.result)
    stream = f"match-{SAMPLE_MATCH_ID}"
    sample = _sample(stream, first.last_version, MATCH_FINISHED, finished, first.game)
    infos.append(s.EventTypeInfo(MATCH_FINISHED, [], summary(FinishedMatch), sample))
    return sorted([*infos, *by_type.values()], key=lambda info: info.type)


def ping(subscription_id: str, at_ms: int) -> tuple[str, str, bytes]:
    """A new ping to the subscription at ``at_ms``: its ``webhook-id``, stream and body. A ping
    is no stream's event: its stream is the subscription's own, its version 0."""
    stream_id = f"ping-{subscription_id}"
    data = s.WebhookPing(subscription_id=subscription_id, message=PING_MESSAGE)
    envelope = _envelope(stream_id, 0, PING, data, at_ms)
    return f"ping:{new_id()}", stream_id, webhook_body(envelope)


def ping_info() -> s.EventTypeInfo:
    """The test ping as the contract shows it (no subscription may name it: it has no filter)."""
    sample = msgspec.Raw(ping(SAMPLE_SUBSCRIPTION_ID, SAMPLE_TIME_MS)[2])
    return s.EventTypeInfo(PING, [], summary(s.WebhookPing), sample)


def _sample(
    stream_id: str, version: int, type_: str, data: object, game: str | None = None
) -> msgspec.Raw:
    envelope = _envelope(stream_id, version, type_, data, SAMPLE_TIME_MS, game)
    return msgspec.Raw(webhook_body(envelope))


def _envelope(
    stream_id: str, version: int, type_: str, data: object, at_ms: int, game: str | None = None
) -> EventEnvelope:
    raw = data if isinstance(data, msgspec.Raw) else msgspec.Raw(_json.encode(data))
    meta = EventMetadata(event_id=new_id(), correlation_id=new_id(), occurred_at_ms=at_ms)
    return EventEnvelope(
        stream_id=stream_id, version=version, type=type_, data=raw, metadata=meta, game=game
    )
