"""Carcassonne turn lists: a match as the tiles placed and the choices made, in order.

The exchange format outside tools read and write (``GET /matches/{id}/export``,
``POST /matches/import``); ``seeds/carcassonne/README.md`` documents it and
``openapi/carcassonne-turns.schema.json`` is its JSON Schema, generated from the Structs here.
An import is replayed move by move through the engine, so the rules check every placement and
choice; what a list declares beside them (seats, points, messages, final figures) must be what
the replay gives.

Version 2 turns rotations from today's tile pictures and adds The Messengers (figure choices,
standing preferences, messages), and Inns & Cathedrals and Traders & Builders (their options,
tiles and a follower's ``piece``; the goods, builder turns and bonuses follow from the replay);
version 1 (a list without ``format_version``) turned them from
the pictures of version 1, before H and I were redrawn.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from services.rules.games.carcassonne.expansions import FOLLOWER, BonusScored, ExpansionsInPlay
from services.rules.games.carcassonne.messengers import (
    EXTRA_TURN,
    MESSAGES,
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    MessageDrawn,
    MessageResolved,
    MessagesShuffled,
    PreferenceSet,
    SetScoringPreference,
    Spot,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.state import (
    FeatureScored,
    GameOver,
    PlaceTile,
    StackShuffled,
    TileDiscarded,
    TilePlaced,
)
from services.rules.games.carcassonne.tiles import (
    KIND_NAMES,
    PICTURES,
    SEG_KIND,
    TILE_INDEX,
    current_rotation,
    feature_reach,
    spot_reaching,
)

FORMAT_VERSION = 2
PICTURES_OF_FORMAT = {1: 1, 2: PICTURES}
"""The tile pictures each version of the format turns its rotations from."""

Letter = Annotated[
    str,
    msgspec.Meta(
        pattern="^([A-X]|I[A-Q]|T[A-X])$",
        description=(
            "A tile letter of tiles.json, or of inns_cathedrals.json (IA-IQ) or"
            " traders_builders.json (TA-TX)"
        ),
    ),
]
Seat = Annotated[int, msgspec.Meta(ge=0, le=5)]
Figure = Annotated[int, msgspec.Meta(ge=0, le=1, description="0 scoring figure, 1 messenger")]
PerSeat = Annotated[list[int], msgspec.Meta(description="One number per seat, seat 0 first")]
FeatureKind = Literal["city", "road", "field", "cloister"]


class NamedFollower(msgspec.Struct, frozen=True):
    """The feature of the placed tile a follower stands on: its ``spot`` (an index into the
    tile's features in tiles.json), or its kind with the edges or half-edges it reaches on the
    board after the rotation (no tile data needed)."""

    spot: Annotated[int, msgspec.Meta(ge=0)] | None = None
    feature: FeatureKind | None = None
    kind: Annotated[FeatureKind | None, msgspec.Meta(description="Another name for feature")] = None
    edges: list[Literal["N", "E", "S", "W"]] | None = None
    halves: list[Literal["NNW", "NNE", "ENE", "ESE", "SSE", "SSW", "WSW", "WNW"]] | None = None
    piece: Annotated[
        Literal["follower", "large_follower", "builder", "pig"] | None,
        msgspec.Meta(description="The piece standing there (null or left out: a follower)"),
    ] = None


class Start(msgspec.Struct, frozen=True, tag="start", tag_field="kind"):
    """The start tile at (0, 0), unrotated; with The Messengers the message stack, top first."""

    tile: Letter
    x: Literal[0] = 0
    y: Literal[0] = 0
    rotation: Literal[0] = 0
    message_order: list[Annotated[int, msgspec.Meta(ge=1, le=8)]] | None = None


class Placement(msgspec.Struct, frozen=True, tag="placement", tag_field="kind"):
    """The drawn tile placed (with The Messengers, a ``choice`` follows for each feature it
    scored for the placing seat)."""

    tile: Letter
    x: int
    y: int
    rotation: Annotated[int, msgspec.Meta(ge=0, le=3, description="Clockwise quarter turns")]
    follower: NamedFollower | None = None
    seat: Seat | None = None
    points: Annotated[
        PerSeat | None,
        msgspec.Meta(
            description="Declared: scored by this turn (with The Messengers its figure moves,"
            " its messages' points included)"
        ),
    ] = None
    extra_turn: Annotated[
        bool | None, msgspec.Meta(description="Declared: drawn for message 4's extra turn")
    ] = None


class Discard(msgspec.Struct, frozen=True, tag="discard", tag_field="kind"):
    """A drawn tile that fit nowhere and left the game."""

    tile: Letter
    seat: Seat | None = None


class Choice(msgspec.Struct, frozen=True, tag="choice", tag_field="kind"):
    """The Messengers: the figure the placing seat moves with one of its scorings, in scoring
    order."""

    figure: Figure
    seat: Seat | None = None
    gained: Annotated[
        int | None,
        msgspec.Meta(description="Declared: the scoring's points (in its placement's points too)"),
    ] = None


class Preference(msgspec.Struct, frozen=True, tag="preference", tag_field="kind"):
    """The Messengers: a seat's standing preference (null: the figure further behind)."""

    seat: Seat
    figure: Figure | None = None


class Message(msgspec.Struct, frozen=True, tag="message", tag_field="kind"):
    """The Messengers: a message drawn and how it was resolved: its action (``carry_out``) or
    its 2 points instead (``take_points``). ``figure`` took the points (null for message 4, or
    when the action gave none); ``follower`` is the one message 8 scored."""

    action: Literal["carry_out", "take_points"]
    seat: Seat | None = None
    message: Annotated[int, msgspec.Meta(ge=1, le=8)] | None = None
    figure: Figure | None = None
    follower: Spot | None = None
    gained: Annotated[
        int | None,
        msgspec.Meta(description="Declared: the points it gave (in its placement's points too)"),
    ] = None


class Final(msgspec.Struct, frozen=True, tag="final", tag_field="kind"):
    """The final scoring's points and the match's scores, both declared."""

    points: PerSeat | None = None
    scores: PerSeat | None = None


Turn = Start | Placement | Discard | Choice | Preference | Message | Final


class TurnList(msgspec.Struct, frozen=True):
    """A Carcassonne match as its turns."""

    game: Literal["carcassonne"]
    players: list[str]
    turns: list[Turn]
    format_version: Annotated[
        Literal[1, 2],
        msgspec.Meta(description="2 today; a list without it is version 1 (older pictures)"),
    ] = 1
    messengers: bool = False
    messengers_edition: Literal["C2", "C3"] | None = None
    zmg_alone_rule: bool | None = None
    inns_cathedrals: bool = False
    traders_builders: bool = False


DECLARED = {
    "placement": ("seat", "points", "extra_turn"),
    "discard": ("seat",),
    "choice": ("seat", "gained"),
    "message": ("seat", "message", "gained"),
    "final": ("points", "scores"),
}
"""What entries may declare that the replay must give too (when present)."""


class ImportedTurns(msgspec.Struct, frozen=True):
    """A turn list read back: options, player names, the actions to replay and who acts (None:
    the seat to move)."""

    players: list[str]
    options: dict[str, Any]
    actions: list[Any]
    actors: list[int | None]


# ---------------------------------------------------------------------------- export


def export_events(events: list[Any], players: list[str]) -> dict[str, Any]:
    """The exchange document of a finished match (``GET /matches/{id}/export``)."""
    document: dict[str, Any] = {
        "game": "carcassonne",
        "format_version": FORMAT_VERSION,
        "players": list(players),
        "messengers": False,
    }
    expansions = next((event for event in events if type(event) is ExpansionsInPlay), None)
    if expansions is not None:
        document["inns_cathedrals"] = expansions.inns_cathedrals
        document["traders_builders"] = expansions.traders_builders
    shuffled = next((event for event in events if type(event) is MessagesShuffled), None)
    if shuffled is not None:
        document["messengers"] = True
        document["messengers_edition"] = shuffled.edition
        document["zmg_alone_rule"] = shuffled.zmg_alone_rule
    document["turns"] = export_turns(events)
    return document


def export_turns(events: list[Any]) -> list[dict[str, Any]]:
    """The turns of a match's events: the start tile, each placement or discard, with The
    Messengers each preference and message, then the final scoring."""
    return _TurnWriter().write(events)


class _TurnWriter:
    """Walks the events once, keeping the entry that later events add to."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.seats = 0
        self.pictures = PICTURES
        self.messengers = False
        self.placement: dict[str, Any] | None = None
        self.message: dict[str, Any] | None = None
        self.final: dict[str, Any] | None = None
        self.extra_turn = False

    def write(self, events: list[Any]) -> list[dict[str, Any]]:
        for event in events:
            handler = self.HANDLERS.get(type(event))
            if handler is not None:
                handler(self, event)
        return self.turns

    def started(self, event: StackShuffled) -> None:
        self.seats, self.pictures = event.seats, event.pictures
        self.turns.append(
            {"kind": "start", "tile": event.start_tile, "x": 0, "y": 0, "rotation": 0}
        )

    def shuffled(self, event: MessagesShuffled) -> None:
        self.messengers = True
        self.turns[0]["message_order"] = list(event.order or ())

    def placed(self, event: TilePlaced) -> None:
        tile = TILE_INDEX[event.tile]
        rotation = current_rotation(tile, event.rotation, self.pictures)
        follower = None
        if event.follower is not None:
            feature = KIND_NAMES[SEG_KIND[tile][event.follower]]
            reach = feature_reach(tile, rotation, event.follower)
            follower = {"spot": event.follower, "feature": feature, **reach}
            if event.piece != FOLLOWER:
                follower["piece"] = event.piece
        self.placement = {
            "kind": "placement",
            "seat": event.seat,
            "tile": event.tile,
            "x": event.x,
            "y": event.y,
            "rotation": rotation,
            "follower": follower,
            "points": [0] * self.seats,
        }
        if self.messengers:
            self.placement["extra_turn"] = self.extra_turn
        self.extra_turn = False
        self.message = None
        self.turns.append(self.placement)

    def discarded(self, event: TileDiscarded) -> None:
        self.turns.append({"kind": "discard", "seat": event.seat, "tile": event.tile})

    def preference(self, event: PreferenceSet) -> None:
        self.turns.append({"kind": "preference", "seat": event.seat, "figure": event.figure})

    def drawn_message(self, event: MessageDrawn) -> None:
        self.message = {
            "kind": "message",
            "seat": event.seat,
            "message": event.message,
            "action": None,
            "figure": None,
            "follower": None,
            "gained": 0,
        }

    def resolved(self, event: MessageResolved) -> None:
        entry = self.message
        if entry is None:
            return
        self.turns.append(entry)  # where its action is taken, after what happened since drawn
        entry["action"] = "take_points" if event.took_points else "carry_out"
        entry["gained"] = event.points
        if event.returned is not None:
            entry["follower"] = msgspec.to_builtins(event.returned)
        self.extra_turn = not event.took_points and MESSAGES[event.message].effect == EXTRA_TURN

    def advanced(self, event: FigureAdvanced) -> None:
        placement = self.placement
        if placement is None:
            return
        placement["points"][event.seat] += event.points
        if event.seat != placement["seat"]:
            return
        if self.message is None:
            choice = {"seat": event.seat, "figure": event.figure, "gained": event.points}
            self.turns.append({"kind": "choice", **choice})
        elif self.message["action"] is not None and self.message["figure"] is None:
            self.message["figure"] = event.figure

    def scored(self, event: FeatureScored) -> None:
        if event.final and self.final is None:
            self.final = {"kind": "final", "points": [0] * self.seats, "scores": None}
            self.turns.append(self.final)
        target = self.final if event.final else None if self.messengers else self.placement
        if target is not None:
            for seat in event.seats:
                target["points"][seat] += event.points

    def bonus(self, event: BonusScored) -> None:
        if self.final is None:
            self.final = {"kind": "final", "points": [0] * self.seats, "scores": None}
            self.turns.append(self.final)
        self.final["points"][event.seat] += event.points

    def over(self, event: GameOver) -> None:
        if self.final is None:
            self.final = {"kind": "final", "points": [0] * self.seats, "scores": None}
            self.turns.append(self.final)
        self.final["scores"] = list(event.scores)

    HANDLERS = {
        StackShuffled: started,
        MessagesShuffled: shuffled,
        TilePlaced: placed,
        TileDiscarded: discarded,
        PreferenceSet: preference,
        MessageDrawn: drawn_message,
        MessageResolved: resolved,
        FigureAdvanced: advanced,
        FeatureScored: scored,
        BonusScored: bonus,
        GameOver: over,
    }


# ---------------------------------------------------------------------------- import


def import_game(document: dict[str, Any]) -> ImportedTurns:
    """Read a turn list (any version) as the options, players and actions that replay it;
    ValueError (or msgspec's ValidationError) says what is wrong with the document."""
    turn_list = _decoded(document)
    order, actions, actors = replay_from_turns(turn_list)
    options: dict[str, Any] = {"tile_order": order}
    for name in ("inns_cathedrals", "traders_builders"):
        if getattr(turn_list, name):
            options[name] = True
    if turn_list.messengers:
        options["messengers"] = True
        if turn_list.messengers_edition is not None:
            options["messengers_edition"] = turn_list.messengers_edition
        if turn_list.zmg_alone_rule is not None:
            options["zmg_alone_rule"] = turn_list.zmg_alone_rule
        options["message_order"] = _message_order(turn_list.turns)
    return ImportedTurns(turn_list.players, options, actions, actors)


def _decoded(document: dict[str, Any]) -> TurnList:
    if not isinstance(document, dict) or document.get("game") != "carcassonne":
        raise ValueError("not a Carcassonne turn list")
    turns = document.get("turns")
    first = turns[0] if isinstance(turns, list) and turns else None
    if not isinstance(first, dict) or first.get("kind") != "start":
        raise ValueError(
            'the turn list begins with the start tile, {"kind": "start", "tile": ...},'
            " which this one lacks"
        )
    turn_list = msgspec.convert(document, TurnList)
    if turn_list.format_version == 1 and turn_list.messengers:
        raise ValueError(
            "a format_version 1 list of a match with The Messengers lacks its figure choices"
            " and messages: export the match again (format_version 2)"
        )
    return turn_list


def replay_from_turns(
    turn_list: TurnList,
) -> tuple[list[str], list[Any], list[int | None]]:
    """The ``tile_order`` option, the actions that replay the turns move by move, and the
    seat of each (None: whoever is to move; a declared seat is checked after the replay)."""
    pictures = PICTURES_OF_FORMAT[turn_list.format_version]
    order: list[str] = []
    actions: list[Any] = []
    actors: list[int | None] = []
    for number, turn in enumerate(turn_list.turns, start=1):
        kind = type(turn)
        if kind is Start or kind is Discard:
            order.append(turn.tile)
        elif kind is Placement:
            order.append(turn.tile)
            tile = TILE_INDEX[turn.tile]
            rotation = current_rotation(tile, turn.rotation, pictures)
            try:
                spot = _follower_spot(tile, rotation, turn.follower)
            except ValueError as error:
                raise ValueError(f"turn {number}'s follower: {error}") from None
            piece = turn.follower.piece if turn.follower is not None else None
            actions.append(PlaceTile(turn.x, turn.y, rotation, spot, piece or FOLLOWER))
            actors.append(None)
        elif kind is Choice:
            actions.append(ChooseFigure(turn.figure))
            actors.append(None)
        elif kind is Preference:
            actions.append(SetScoringPreference(turn.figure))
            actors.append(turn.seat)
        elif kind is Message:
            actions.append(_resolution(turn))
            actors.append(None)
    return order, actions, actors


def _resolution(turn: Message) -> CarryOutMessage | TakeMessagePoints:
    """A message entry's action. Message 4's action names no figure; for another message a
    figure left out (its action gave no points, so none moves) is figure 0. An entry without
    its message number that names neither a figure nor a follower is taken for message 4."""
    figure = 0 if turn.figure is None else turn.figure
    if turn.action == "take_points":
        return TakeMessagePoints(figure)
    if turn.message is None:
        if turn.figure is None and turn.follower is None:
            return CarryOutMessage()
    elif MESSAGES[turn.message].effect == EXTRA_TURN:
        return CarryOutMessage()
    return CarryOutMessage(figure, turn.follower)


def _message_order(turns: list[Turn]) -> list[int]:
    """The message stack: the start entry's, else the first draw of each message (the stack
    is drawn through before any message comes back), the undrawn ones after."""
    start = turns[0]
    if isinstance(start, Start) and start.message_order is not None:
        return list(start.message_order)
    drawn: list[int] = []
    for turn in turns:
        if isinstance(turn, Message):
            if turn.message is None:
                raise ValueError(
                    "give the start entry's message_order or every message entry's message"
                )
            if turn.message not in drawn:
                drawn.append(turn.message)
    return drawn + [number for number in sorted(MESSAGES) if number not in drawn]


def _follower_spot(tile: int, rotation: int, follower: NamedFollower | None) -> int | None:
    """A placement's follower: its spot, or its kind with the edges or halves it reaches."""
    if follower is None or follower.spot is not None:
        return None if follower is None else follower.spot
    kind = follower.kind or follower.feature
    if kind is None:
        raise ValueError("name the follower's spot, or its kind with its edges or halves")
    named = {"edges": follower.edges, "halves": follower.halves}
    return spot_reaching(tile, rotation, kind, {k: v for k, v in named.items() if v is not None})


def disagreement(document: dict[str, Any], events: list[Any]) -> str | None:
    """The first entry of an imported turn list that its replay (``events``) contradicts: a
    different kind, or a declared seat, points, message or final figure; None when all agree."""
    replayed = export_turns(events)
    for number, given in enumerate(document["turns"], start=1):
        if number > len(replayed):
            return f"turn {number} ({given.get('kind')}) is past the end of the replay"
        actual = replayed[number - 1]
        if given.get("kind") != actual["kind"]:
            return f"turn {number} is a {given.get('kind')}, the replay's is a {actual['kind']}"
        for field in DECLARED.get(actual["kind"], ()):
            if given.get(field) is not None and given[field] != actual[field]:
                return (
                    f"turn {number} ({actual['kind']}) declares {field} {given[field]!r},"
                    f" its replay gives {actual[field]!r}"
                )
    return None


def json_schema() -> dict[str, Any]:
    """The format's JSON Schema (draft 2020-12), as committed in ``openapi/``."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Carcassonne turn list, format version {FORMAT_VERSION}",
        **msgspec.json.schema(TurnList),
    }
