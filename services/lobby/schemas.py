"""Request and response bodies of the lobby API (a table's events are in
``shared.domain.messages``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from shared.domain.hosting import NO_HOSTING, BotInfo, BotName, Hosting, PolicyInfo
from shared.domain.messages import MAX_SEATS, Visibility
from shared.domain.rules_api import OptionType, PlayersRequirement
from shared.edge.contract import Timestamp, documented_as
from shared.edge.guard import PG_BIGINT_MAX

PlayerName = Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
TableStatus = Literal["open", "started", "closed"]
MatchStatusFilter = Literal["running", "finished"]
"""A started table's match: being played (to watch), or over."""


class GameOption(msgspec.Struct, omit_defaults=True):
    name: str
    """What ``CreateTable.options`` names it by."""
    title: str
    """What a person calls it: a setup screen's label."""
    type: OptionType
    default: Any
    description: str
    """What it does: a setup screen's help."""
    choices: list[Any] | None = None
    minimum: int | None = None
    maximum: int | None = None
    secret: bool = False
    requires: dict[str, Any] = {}
    """The value each named option must have for this one to be set (to other than its
    default): offer it only then; a table setting it without them gets 422 ``bad-option``."""


class GameInfo(msgspec.Struct):
    """A catalogue entry: enough for a client to build its setup screen."""

    name: str
    title: str
    description: str
    min_players: int
    max_players: int
    options: list[GameOption]
    action_schema: dict[str, Any]
    event_types: list[str]
    """The types of its matches' events, as feeds and webhooks name them."""
    bots: list[BotInfo]
    """The bots that can play a seat (``seatBot``, ``CreateTable.bots``) or take one over."""
    timeout_policies: list[PolicyInfo]
    """The ``hosting.on_timeout`` policies its tables may choose, each with what it does in
    this game (``pass`` only for a game whose rules have a pass)."""
    leave_policies: list[PolicyInfo]
    """The ``hosting.on_leave`` policies, each with what it does."""
    players_requirements: list[PlayersRequirement] = []
    """The numbers of players taken only with some options, each with the option values any
    one of which allows it (Carcassonne: 6 players need ``messengers`` or
    ``inns_cathedrals`` true): offer that many only then; a table without them gets 422
    ``bad-seat-count`` naming them. Empty for a game that takes every number between its
    ``min_players`` and ``max_players`` with any options."""


SeatNumber = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEATS - 1)]


class BotSeat(msgspec.Struct, forbid_unknown_fields=True):
    """A bot to seat: one of the game's (``GameInfo.bots``)."""

    bot: BotName
    seat: SeatNumber | None = None
    """A particular seat, or the first free one."""


class CreateTable(msgspec.Struct, forbid_unknown_fields=True):
    game: str
    seats: Annotated[int, msgspec.Meta(ge=1, le=MAX_SEATS)]
    options: dict[str, Any] = {}
    name: Annotated[str, msgspec.Meta(max_length=80)] = ""
    """What the lobby shows; empty: the game's title and "table" ("Hanabi table")."""
    seed: Annotated[int, msgspec.Meta(ge=0, le=PG_BIGINT_MAX)] | None = None
    """Two tables with the same seed and options get the same deal (duplicate tournaments)."""
    visibility: Visibility = "public"
    """A ``private`` table is not listed; seeing it, joining it and watching its match take the
    invitation token its creation answers with."""
    seats_per_invitation: Annotated[int, msgspec.Meta(ge=1, le=MAX_SEATS)] | None = None
    """A private table's bound on the seats one invitation token fills (null: any number);
    rotating the invitation gives a token with seats of its own."""
    hosting: Hosting = NO_HOSTING
    """The match's time control and what happens when a player is slow or leaves."""
    bots: Annotated[list[BotSeat], msgspec.Meta(max_length=MAX_SEATS)] = []
    """Bots seated at creation (a bot seat's ``player`` is the bot's name). A table of bots
    only starts at once."""


class JoinTable(msgspec.Struct, forbid_unknown_fields=True):
    name: PlayerName
    seat: SeatNumber | None = None
    """A particular seat, or the first free one."""


class SeatBot(BotSeat, forbid_unknown_fields=True):
    """A bot to seat at an open table (``seatBot``)."""


class SeatInfo(msgspec.Struct):
    seat: int
    player: str | None
    bot: str | None
    """The bot that plays the seat (then also its ``player``); null for a person or no one."""


class TableInfo(msgspec.Struct):
    table_id: str
    game: str
    name: str
    options: dict[str, Any]
    seeded: bool
    status: TableStatus
    """``open`` while seats are being taken, ``started`` once the match has been asked for,
    ``closed`` if it closed before (``closeTable``, or idle for the lobby's idle time)."""
    match_id: str | None
    seats: list[SeatInfo]
    version: int
    visibility: Visibility
    secret_options_set: list[str]
    """The secret options the creator set (an explicit deck order, say): their values stay
    hidden while the match runs, but that they are set does not, so no one sits down at a
    stacked table unaware."""
    commitments: dict[str, str]
    """Per secret option set, published at creation: SHA-256 (hex) of a 32-hex-digit salt, a
    colon and the value as compact JSON with sorted keys. The finished match's playtable
    export reveals value and salt (``commitments``), so anyone can check the deck played was
    the one fixed before anyone sat down."""
    seats_per_invitation: int | None
    hosting: Hosting
    """The match's time control and what happens when a player is slow or leaves."""
    rematch_of: str | None
    """The finished table this one is the rematch of."""
    rematch_table_id: str | None
    """This table's rematch, once a player asked for one (``rematchTable``)."""


class CreatedTable(TableInfo):
    invitation_token: str | None
    """A private table's invitation (null for a public one): send it as ``Authorization: Bearer
    <token>`` to see the table, join it and watch its match. Shown only once."""


class Invitation(msgspec.Struct):
    invitation_token: str
    """The private table's new invitation: the one before it no longer works. Shown once."""


class TablePage(msgspec.Struct):
    items: list[TableInfo]
    next_cursor: str | None
    """Pass as ``cursor`` for the next page; null on the last page."""


class Joined(msgspec.Struct):
    seat: int
    token: str
    """The seat's secret: send it as ``Authorization: Bearer <token>``. Shown only once."""
    table: TableInfo


class TableFeedEvent(msgspec.Struct):
    """A table's event as its feed sends it (the shape of a match's feed items)."""

    version: int
    type: str
    data: Annotated[msgspec.Raw, documented_as("TableEvent")]
    """The event without secrets: ``TableCreated`` comes without its options."""
    seat: int | None
    """The seat of the player who caused it, if any."""
    recorded_at: Timestamp
