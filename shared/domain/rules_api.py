"""Requests the lobby and match services send to the rules service, and its replies.

The match service holds no game code: game states travel as opaque bytes produced by the rules
engines, and events and views travel as JSON (``msgspec.Raw``) that the services store and serve
as they are.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

OptionType = Literal["bool", "int", "enum", "list[int]", "list[str]"]
"""What a table option holds: ``enum`` is one of its ``choices``."""


class PlayersRequirement(msgspec.Struct, frozen=True):
    """A number of players a game takes only with some options (Carcassonne's sixth seat
    needs a sixth colour): the game's definition holds it, its catalogue entry shows it and
    resolving a table's options refuses that many players without it."""

    players: int
    requires_any: list[dict[str, Any]]
    """Option values any one of which allows ``players``: each maps option names to the value
    each must have (all of them, as an option's ``requires``)."""


class EncodedEvent(msgspec.Struct, frozen=True):
    """One game event: its type name and its JSON (which carries the same ``type`` tag)."""

    type: str
    data: msgspec.Raw


class Progress(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where a match stands after some events: who may act, and the result once finished."""

    state: bytes
    to_move: list[int]
    result: dict[str, Any] | None = None


# --- requests (tagged so one stream carries them all) ----------------------------------------


class Catalogue(msgspec.Struct, frozen=True, tag=True):
    """List the games with their options and player counts."""


class ResolveOptions(msgspec.Struct, frozen=True, tag=True):
    """Check a table's options and seat count; fill in the defaults."""

    game: str
    options: dict[str, Any]
    seats: int


class SetUp(msgspec.Struct, frozen=True, tag=True):
    game: str
    options: dict[str, Any]
    seats: int
    seed: int


class Decide(msgspec.Struct, frozen=True, tag=True):
    game: str
    state: bytes
    seat: int
    action: msgspec.Raw


class ShowView(msgspec.Struct, frozen=True, tag=True):
    game: str
    state: bytes
    seat: int | None


class ListLegalActions(msgspec.Struct, frozen=True, tag=True):
    game: str
    state: bytes
    seat: int


class RedactEvents(msgspec.Struct, frozen=True, tag=True):
    game: str
    events: list[msgspec.Raw]
    seat: int | None


class Fold(msgspec.Struct, frozen=True, tag=True):
    """Replay stored events from nothing (a consistency check, or a cold snapshot)."""

    game: str
    events: list[msgspec.Raw]


class ReplaySpan(msgspec.Struct, frozen=True, tag=True):
    """Show the match at a stored snapshot ``state``, then after each of ``events`` in turn:
    one call serves every version between two snapshots, so stepping through a match asks the
    rules service once per span.

    ``full`` adds the complete state (every hand, the deck order): only for finished matches.
    """

    game: str
    state: bytes
    events: list[msgspec.Raw]
    seat: int | None
    full: bool = False


class ExportMatch(msgspec.Struct, frozen=True, tag=True):
    """A finished match in its game's community format: ``format`` names it (``None``: the
    game's own, and a JSON null reply when the game has none)."""

    game: str
    events: list[msgspec.Raw]
    players: list[str]
    format: str | None = None


class ImportMatch(msgspec.Struct, frozen=True, tag=True):
    """A match file (playtable's or the game's community format) replayed into events, with
    the state every ``snapshot_every`` events (0: none) so its replays cost what played ones do."""

    game: str
    document: msgspec.Raw
    snapshot_every: int = 0


class EndEarly(msgspec.Struct, frozen=True, tag=True):
    """The result (an ``Outcome``) of a match that ``forfeited`` seats ended early: they ran out
    of time (``reason`` ``timeout``) or left (``abandoned``)."""

    game: str
    seats: int
    forfeited: list[int]
    reason: str


class EventSamples(msgspec.Struct, frozen=True, tag=True):
    """A sample of every event type of every game, as webhooks carry it (the spectator's
    redaction): the webhooks API shows them, and holds no game code."""


class Ping(msgspec.Struct, frozen=True, tag=True):
    """Answered ``True`` at once: the match service's /ready asks it to know that a rules
    worker is there."""


RulesRequest = (
    Ping
    | Catalogue
    | EventSamples
    | ResolveOptions
    | SetUp
    | Decide
    | ShowView
    | ListLegalActions
    | RedactEvents
    | Fold
    | ReplaySpan
    | ExportMatch
    | ImportMatch
    | EndEarly
)


# --- replies ---------------------------------------------------------------------------------


class SetUpDone(msgspec.Struct, frozen=True):
    options: dict[str, Any]
    events: list[EncodedEvent]
    public_events: list[msgspec.Raw]
    progress: Progress


class Decided(msgspec.Struct, frozen=True):
    """Accepted: the new events, as stored, as the actor sees them and as everyone else does."""

    events: list[EncodedEvent]
    actor_events: list[msgspec.Raw]
    public_events: list[msgspec.Raw]
    progress: Progress
    legal_actions: dict[int, list[msgspec.Raw]] = {}
    """Each seat to move's legal actions in the new state: the match service answers the next
    ``GET /actions`` with them, saving a round trip per move (a seat not to move has none)."""
    actor_view: msgspec.Raw = msgspec.Raw(b"null")
    """The new state as the actor sees it: the answer to the move shows it, so the mover needs
    no ``GET`` of the match after moving."""


class Replayed(msgspec.Struct, frozen=True):
    """A match at some version: the view asked for, who was to move, the result if over."""

    view: msgspec.Raw
    to_move: list[int]
    result: dict[str, Any] | None
    state: msgspec.Raw = msgspec.Raw(b"null")
    """The complete state when asked for ``full``; JSON null otherwise."""


class EventSample(msgspec.Struct, frozen=True):
    """The first event of one type in seeded random matches of a game, as a spectator sees it."""

    type: str
    version: int
    """Its version in the match it comes from."""
    description: str
    data: msgspec.Raw


class GameSamples(msgspec.Struct, frozen=True):
    """One game's ``EventSamples``: an event of each type, and how the first match ended."""

    game: str
    events: list[EventSample]
    result: dict[str, Any]
    """The first match's ``Outcome``."""
    last_version: int
    """The version of the first match's last event."""


class Rejected(msgspec.Struct, frozen=True):
    code: str
    detail: str


class StateSnapshot(msgspec.Struct, frozen=True):
    version: int
    state: bytes


class Imported(msgspec.Struct, frozen=True):
    options: dict[str, Any]
    seats: int
    players: list[str]
    events: list[EncodedEvent]
    progress: Progress
    actors: list[int | None] = msgspec.field(default_factory=list)
    """Per event, the seat whose move caused it (``None``: the set-up)."""
    snapshots: list[StateSnapshot] = msgspec.field(default_factory=list)
    """The state once set up, at every multiple of ``snapshot_every``, and at the end."""


class RulesCall(msgspec.Struct, frozen=True):
    """The envelope on the request stream: where to reply, and the request itself."""

    request_id: str
    reply_to: str
    request: RulesRequest
    deadline_ms: int = 0
    correlation_id: str = ""
    """The caller's (its request's), which the rules worker's log lines carry."""
    traceparent: str | None = None
    """The W3C trace context of the caller's span, which the rules worker's span continues."""


class RulesReply(msgspec.Struct, frozen=True, omit_defaults=True):
    request_id: str
    body: msgspec.Raw = msgspec.Raw(b"null")
    rejected: Rejected | None = None
    error: str | None = None
