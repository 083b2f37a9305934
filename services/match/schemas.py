"""Request and response bodies of the match API."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from shared.domain.hosting import ClockView, Hosting
from shared.edge.contract import Timestamp, documented_as
from shared.edge.guard import PG_INT_MAX

# The rules service makes these JSON documents; this service passes them on as they are.
GameAction = Annotated[msgspec.Raw, documented_as("GameAction")]
GameEvent = Annotated[msgspec.Raw, documented_as("GameEvent")]
GameView = Annotated[msgspec.Raw, documented_as("GameView")]
GameState = Annotated[msgspec.Raw, documented_as("GameState")]
Outcome = Annotated[dict[str, Any], documented_as("Outcome")]


MatchStatus = Literal["creating", "running", "finished"]
PlayStatus = Literal["running", "finished"]
"""A match's status once it exists."""


class SubmitAction(msgspec.Struct, forbid_unknown_fields=True):
    game: str
    """The match's game (``MatchInfo.game``), which says whose action ``action`` is: tags such as
    ``PlayCard`` repeat across games. Another game's move is refused (422 ``wrong-game``)."""
    expected_version: Annotated[int, msgspec.Meta(ge=0, le=PG_INT_MAX)]
    """The match version the move was chosen at; a stale one gets 409 and changes nothing."""
    action: Annotated[dict[str, Any], documented_as("GameAction")]
    """One of that game's actions, tagged by ``type`` (see ``action_schema`` in the catalogue)."""


class MatchInfo(msgspec.Struct):
    match_id: str
    table_id: str | None
    game: str
    players: list[str]
    version: int
    status: MatchStatus
    """``creating`` (its table has started; set-up under way: look again in a moment),
    ``running`` or ``finished``."""
    to_move: list[int]
    you: int | None
    """The caller's seat, or null for a spectator."""
    view: GameView | None
    """The state as the caller may see it (null while ``creating``)."""
    result: Outcome | None
    bots: dict[int, str]
    """The seats bots play, by seat, with the bot's name."""
    hosting: Hosting
    """The table's time control and what happens when a player is slow or leaves."""
    clock: ClockView | None
    """The clocks now (null without a time control)."""


class MatchReplay(msgspec.Struct):
    match_id: str
    game: str
    players: list[str]
    version: int
    """The version shown: the state after that many events."""
    status: PlayStatus
    """At that version."""
    to_move: list[int]
    """Who was to move at that version."""
    you: int | None
    view: GameView
    """The state at that version as the caller could see it then."""
    result: Outcome | None
    """The result, if the match had finished at that version."""
    state: GameState | None
    """With ``full=true`` (finished matches only): the complete state, every hand and the
    deck order included; null otherwise."""
    clock: ClockView | None = None
    """The clocks as they read at that version (null without a time control)."""


class ActionAccepted(msgspec.Struct):
    game: str
    """The match's game (see ``LegalActions.game``)."""
    version: int
    events: list[GameEvent]
    """The new events, as the actor may see them."""
    to_move: list[int]
    status: PlayStatus
    result: Outcome | None
    view: GameView
    """The match after the move as the mover sees it (``view`` of ``getMatch``)."""
    legal_actions: list[GameAction]
    """The mover's actions now, when the mover is to move again (an extra turn, a
    simultaneous phase); empty otherwise: act on them without asking ``listLegalActions``."""
    clock: ClockView | None = None
    """The clocks after the move (null without a time control)."""


class MatchEvent(msgspec.Struct):
    game: str
    """The match's game (see ``LegalActions.game``)."""
    version: int
    type: str
    data: GameEvent
    """The event as the caller may see it."""
    seat: int | None
    """Whose action caused it (null for setup)."""
    recorded_at: Timestamp


class EventPage(msgspec.Struct):
    items: list[MatchEvent]
    next_cursor: str | None
    """Pass as ``cursor`` to read on; null once the page reached the current end (a running
    match's later events: read on from the last event's ``version``, or follow the feed)."""
    next_after: int | None
    """Deprecated (``next_cursor``): pass as ``after`` to read on; null with ``next_cursor``."""


class MatchFinished(msgspec.Struct):
    """The last message of a match's feed, after its last event."""

    match_id: str
    version: int
    result: Outcome


class LegalActions(msgspec.Struct):
    game: str
    """The match's game, which tells whose actions these are: ``type`` tags such as
    ``PlayCard`` repeat across games (the contract discriminates on it)."""
    version: int
    seat: int
    actions: list[GameAction]


class ImportMatch(msgspec.Struct, forbid_unknown_fields=True):
    document: dict[str, Any]
    """A playtable match file (recognised by ``"format": "playtable-match"``, any game) or the
    game in its community format (Hanabi: hanab.live's JSON game; Carcassonne: turns)."""
    game: str | None = None
    """The game; optional for a playtable match file, which names its own."""


class ImportedMatch(msgspec.Struct):
    match_id: str
    tokens: list[str]
    """One secret token per seat, to play on if the imported game had not ended."""
    match: MatchInfo


PlayerName = Annotated[str, msgspec.Meta(min_length=1, max_length=40)]


class Reseat(msgspec.Struct, forbid_unknown_fields=True):
    name: PlayerName | None = None
    """The seat's player from now on (null: the name it had)."""


class Reseated(msgspec.Struct):
    seat: int
    token: str
    """The seat's new secret (the one before no longer works). Shown only once."""
    match: MatchInfo
