"""Message schemas shared by every service: envelopes for commands and events.

Commands are imperative (``CreateMatch``), events past tense (``MatchCreated``). Every message
travels in an envelope that carries its identity and lineage, so a reader of any log can tell
what caused what and who asked for it.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

import msgspec

from shared.domain.commitments import Commitment
from shared.domain.hosting import NO_HOSTING, Hosting
from shared.infra import tracing

SCHEMA_VERSION = 1


def new_id() -> str:
    """A random, URL-safe identifier for messages, matches and tables."""
    return uuid.uuid4().hex


def now_ms() -> int:
    return int(time.time() * 1000)


TABLE_EVENT_TYPES = (
    "TableCreated",
    "SeatTaken",
    "SeatLeft",
    "TableStarted",
    "RematchOffered",
    "TableClosed",
)
"""A table's events (``TableEvent`` below), which webhooks deliver too."""
MATCH_FINISHED = "MatchFinished"
"""Published after a match's last event, with its result (``FinishedMatch``)."""


def summary(struct: type) -> str:
    """The first paragraph of a Struct's docstring on one line: how the API describes an event."""
    return " ".join((struct.__doc__ or "").partition("\n\n")[0].split())


class Actor(msgspec.Struct, frozen=True, omit_defaults=True):
    """Who asked for something: a seat of a match, a lobby player, or the system itself."""

    kind: str  # "seat" | "player" | "app" | "system"
    seat: int | None = None
    name: str | None = None


SYSTEM = Actor(kind="system")


class EventMetadata(msgspec.Struct, frozen=True, omit_defaults=True):
    """Stored beside every event: its id, lineage and author."""

    event_id: str
    correlation_id: str
    causation_id: str | None = None
    actor: Actor = SYSTEM
    schema_version: int = SCHEMA_VERSION
    occurred_at_ms: int = 0
    app_id: str | None = None
    """The client app whose table or match this is: only its webhook subscriptions get it."""
    traceparent: str | None = None
    """The W3C trace context of the work that recorded the event (a move's request), which its
    webhooks' spans continue; ``None`` when it was not traced."""


class CommandEnvelope(msgspec.Struct, frozen=True, omit_defaults=True):
    """A command on a Redis stream: ``type`` names the command, ``body`` is its JSON."""

    command_id: str
    type: str
    body: msgspec.Raw
    correlation_id: str
    causation_id: str | None = None
    actor: Actor = SYSTEM
    schema_version: int = SCHEMA_VERSION
    issued_at_ms: int = 0
    traceparent: str | None = None
    """The W3C trace context of the sender, which the receiver's span continues."""


class EventEnvelope(msgspec.Struct, frozen=True, omit_defaults=True):
    """A published event on a Redis stream, as consumers (lobby, webhooks, feeds) see it.

    ``data`` is the spectator's redaction of the event: published streams never carry hidden
    information.
    """

    stream_id: str
    version: int
    type: str
    data: msgspec.Raw
    metadata: EventMetadata
    global_position: int | None = None
    game: str | None = None
    """The match's game, on a match's events (their ``data`` is that game's); None on a
    table's (and on a match's published before the envelope named it)."""


def command(
    type_: str,
    body: Any,
    *,
    correlation_id: str | None = None,
    causation_id: str | None = None,
    actor: Actor = SYSTEM,
    command_id: str | None = None,
) -> CommandEnvelope:
    """A new command, carrying the trace under way (if any) for its receiver to continue;
    ``command_id`` names one that must be sent once whoever sends it (default: a new id)."""
    command_id = command_id or new_id()
    return CommandEnvelope(
        command_id=command_id,
        type=type_,
        body=msgspec.Raw(msgspec.json.encode(body)),
        correlation_id=correlation_id or command_id,
        causation_id=causation_id,
        actor=actor,
        issued_at_ms=now_ms(),
        traceparent=tracing.traceparent(),
    )


_command_decoder = msgspec.json.Decoder(CommandEnvelope)


def decode_command(payload: bytes) -> CommandEnvelope:
    return _command_decoder.decode(payload)


def metadata(
    *,
    correlation_id: str,
    causation_id: str | None = None,
    actor: Actor = SYSTEM,
    app_id: str | None = None,
) -> EventMetadata:
    """A new event's metadata, carrying the trace under way (if any) for its consumers."""
    return EventMetadata(
        event_id=new_id(),
        correlation_id=correlation_id,
        causation_id=causation_id,
        actor=actor,
        occurred_at_ms=now_ms(),
        app_id=app_id,
        traceparent=tracing.traceparent(),
    )


# --- Commands between services -------------------------------------------------------------


class CreateMatch(msgspec.Struct, frozen=True):
    """Lobby -> match: a table started; create its match."""

    match_id: str
    table_id: str
    game: str
    options: dict[str, Any]
    seats: int
    seat_token_hashes: list[str]
    players: list[str]
    seed: int
    private: bool = False
    """Watched only with the table's invitation token (or a seat token)."""
    invitation_token_hash: str | None = None
    app_id: str | None = None
    """The app the table belongs to, and so the match."""
    commitments: dict[str, Commitment] = {}
    """The table's commitments to its secret options, revealed by the match's export."""
    bots: dict[int, str] = {}
    """The seats bots play, by seat: the match gives each the token the bots service derives
    (``shared.domain.hosting.bot_token``) instead of the lobby's hash."""
    hosting: Hosting = NO_HOSTING


class TimeOut(msgspec.Struct, frozen=True):
    """Clocks -> match: the match's first running clock had run out at ``version`` (apply the
    timeout policy, unless a move came first: the version tells)."""

    match_id: str
    version: int
    deadline_ms: int


class BotTurnDue(msgspec.Struct, frozen=True):
    """Match -> bots (``BOT_TURNS_STREAM``): a bot seat is among the seats that may move in the
    match at ``version``, committed. Only matches with a bot seat publish it, so the bots read
    nothing else."""

    match_id: str
    version: int


class ClockSet(msgspec.Struct, frozen=True):
    """Match -> clocks (``CLOCKS_STREAM``): at ``version``, committed, the match's first
    running clock runs out at ``deadline_ms``. Only clocked matches publish it, so the clocks
    service reads nothing else."""

    match_id: str
    version: int
    deadline_ms: int


# --- events every service may show: a table's (the lobby's) and the end of a match ----------

Visibility = Literal["public", "private"]
MAX_SEATS = 12
"""The most seats a table has (no game takes more players): seats are numbered from 0."""


class TableCreated(msgspec.Struct, tag=True):
    """A table was created. Published (feeds, webhooks) without its ``options``; ``commitments``
    binds the secret ones, and its keys name those the creator set (a stacked deck, say), so
    everyone learns of it before they sit down."""

    table_id: str
    game: str
    name: str
    seats: int
    options: dict[str, Any]
    seeded: bool
    visibility: Visibility = "public"
    commitments: dict[str, str] = {}
    """The hash of each secret option set (see ``TableInfo.commitments``)."""
    hosting: Hosting = NO_HOSTING
    """The table's time control and what happens when a player is slow or leaves."""
    rematch_of: str | None = None
    """The finished table this one is the rematch of (same game, options and seats)."""


class SeatTaken(msgspec.Struct, tag=True, omit_defaults=True):
    """A player (or a bot) took a seat."""

    seat: int
    player: str
    bot: str | None = None
    """The bot that plays the seat (its name is also ``player``); None for a person."""


class SeatLeft(msgspec.Struct, tag=True):
    """A player left a seat before the start."""

    seat: int
    player: str


class TableStarted(msgspec.Struct, tag=True):
    """The table started its match."""

    match_id: str


class RematchOffered(msgspec.Struct, tag=True):
    """The finished table offers a rematch: a new table with the same seats, each player's to
    take back with their seat's token (``rematchTable``)."""

    rematch_table_id: str


CloseReason = Literal["by_app", "idle"]


class TableClosed(msgspec.Struct, tag=True):
    """The table closed before its match started: by its app (``by_app``) or after nobody
    joined, left or changed a seat for the lobby's idle time (``idle``). Its seats are emptied
    (their tokens no longer work) and it no longer counts against the app's quota."""

    reason: CloseReason


TableEvent = TableCreated | SeatTaken | SeatLeft | TableStarted | RematchOffered | TableClosed
"""The events of a ``table-<id>`` stream."""


class FinishedMatch(msgspec.Struct, frozen=True):
    """The match is over: its result (an ``Outcome``), published after its last event."""

    match_id: str
    result: dict[str, Any]
