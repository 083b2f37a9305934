"""Carcassonne's board coordinates, actions, events, state and views (msgspec Structs)."""

from __future__ import annotations

from typing import Literal

import msgspec

from services.rules.games.carcassonne.expansions import (
    BonusScored,
    BuilderTurn,
    ExpansionsInPlay,
    ExtrasState,
    GoodsTaken,
    PieceReturned,
    PiecesView,
)
from services.rules.games.carcassonne.messengers import (
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    FiguresSummed,
    MessageDrawn,
    MessageResolved,
    MessagesShuffled,
    MessengersState,
    MessengersView,
    PreferenceSet,
    SetScoringPreference,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.tiles import (
    PICTURES,
    current_rotation,
)

FOLLOWERS_PER_PLAYER = 7
CLOISTER_COMPLETE_POINTS = 9
FARM_POINTS_PER_CITY = 3

BOUND = 100
"""Largest |x| or |y| accepted; 71 tiles in a row reach 71, and squares are coded in a byte."""
STEPS = (1, 256, -1, -256)
"""Square offsets to the N, E, S and W neighbours."""
AROUND = (1, 257, 256, 255, -1, -257, -256, -255)
"""Square offsets to the eight squares around one (a cloister's neighbourhood)."""
ROTATIONS = frozenset(range(4))
FACING_SHIFT = (4, 6, 0, 2)
"""For a neighbour on side d, the bit shift of its own side that faces back (2 * opposite)."""
NODE_SLOTS = 8
"""Union-find nodes reserved per placed tile (the most features on one tile is 8)."""


def square_of(x: int, y: int) -> int:
    return ((x + 128) << 8) | (y + 128)


def xy_of(square: int) -> tuple[int, int]:
    return (square >> 8) - 128, (square & 255) - 128


# ---------------------------------------------------------------------------- messages


class PlaceTile(
    msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True, tag_field="type"
):
    """Put the drawn tile at (x, y), turned ``rotation`` clockwise quarter turns, with a
    follower on feature ``follower`` of the tile (an index into its feature list) or none.
    ``piece`` says which piece stands there: the ordinary follower, or with Inns & Cathedrals
    the large follower, with Traders & Builders the builder or the pig."""

    x: int
    y: int
    rotation: int
    follower: int | None = None
    piece: Literal["follower", "large_follower", "builder", "pig"] = "follower"


class Follower(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A follower on the board: the tile square and the feature (spot) it stands on;
    ``large`` for Inns & Cathedrals' large follower (left out when false)."""

    seat: int
    x: int
    y: int
    spot: int
    feature: str
    large: bool = False


class StackShuffled(msgspec.Struct, frozen=True, tag_field="type"):
    """The match begins: the start tile lies at (0, 0) and ``stack`` is the draw order.
    ``stack`` is None in every redacted copy; ``stack_size`` stays public. The match's
    rotations are turned from the tile pictures of version ``pictures`` (``tiles.json``);
    logs written before the version was recorded used version 1."""

    seats: int
    start_tile: str
    stack: list[str] | None
    stack_size: int
    pictures: int = 1
    rules_version: int | None = None
    """The rules the match is played and folded under (``versions.RULES``); None in a log
    recorded before versions, folded as ``versions`` explains."""


class TileDrawn(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    seat: int
    tile: str


class TileDiscarded(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    """The drawn tile fits nowhere on the board; it leaves the game and ``seat`` draws again."""

    seat: int
    tile: str


class TilePlaced(msgspec.Struct, frozen=True, gc=False, tag_field="type", omit_defaults=True):
    """``piece`` stands on feature ``follower`` (left out when it is the ordinary follower)."""

    seat: int
    tile: str
    x: int
    y: int
    rotation: int
    follower: int | None
    piece: str = "follower"


class FeatureScored(msgspec.Struct, frozen=True, tag_field="type"):
    """``points`` go to each seat in ``seats`` (the majority, ties all score). ``followers`` are
    all followers on the feature; during play they go back to their owners, at the final
    scoring (``final``) they stay."""

    feature: str
    points: int
    seats: list[int]
    followers: list[Follower]
    final: bool


class GameOver(msgspec.Struct, frozen=True, tag_field="type"):
    scores: list[int]
    winners: list[int]


Event = (
    StackShuffled
    | TileDrawn
    | TileDiscarded
    | TilePlaced
    | FeatureScored
    | GameOver
    | MessagesShuffled
    | PreferenceSet
    | FigureAdvanced
    | MessageDrawn
    | MessageResolved
    | FiguresSummed
    | ExpansionsInPlay
    | BuilderTurn
    | GoodsTaken
    | PieceReturned
    | BonusScored
)
Action = PlaceTile | SetScoringPreference | ChooseFigure | CarryOutMessage | TakeMessagePoints


# dict=True: a state may carry an index that msgspec neither encodes nor copies (``standing``).
class CarcassonneState(msgspec.Struct, tag_field="type", dict=True):
    """The fold of the events, compact for speed (see the module docstring for the codes).

    Features form a union-find over nodes ``ordinal * 8 + spot``; every node points straight at
    its root (merges relabel the smaller side), and only roots carry ``members`` (None: just
    the root), ``open_ends`` (unmatched city/road sides) and ``holders`` (``node << 3 | seat``
    per follower, None when empty). ``open`` maps each empty square next to the board to its
    requirement key and ``links`` to what a tile placed there would join:
    ``(port bits, port, node)``.
    """

    seats: int
    stack: list[int]
    drawn: int
    seat: int
    tile: int
    finished: bool
    scores: list[int]
    supply: list[int]
    winners: list[int]
    board: dict[int, int]
    codes: list[int]
    squares: list[int]
    open: dict[int, int]
    links: dict[int, list[tuple[int, int, int]]]
    parent: list[int]
    members: list[list[int] | None]
    open_ends: list[int]
    holders: list[list[int] | None]
    cloisters: dict[int, int]
    messengers: MessengersState | None = None
    """The Messengers' figures, messages and turn phase; None without the expansion."""
    extras: ExtrasState | None = None
    """Inns & Cathedrals' and Traders & Builders' pieces and goods; None without both."""
    pictures: int = 1
    """The tile pictures the match's events turn rotations from (``StackShuffled``)."""
    codes_pictures: int = 1
    """The tile pictures ``codes`` were made with: a state stored before pictures had versions
    is brought to today's as it is decoded (the rest of the fold does not depend on them)."""

    rules_version: int | None = None
    """``StackShuffled.rules_version``, None for version 3 (``RULES.in_state``): the version a
    match recorded before versions plays on by, as the release before did, whose states have
    no such field."""

    def __post_init__(self) -> None:
        if self.codes_pictures != PICTURES:
            self.codes = [
                (code & ~3) + current_rotation(code >> 2, code & 3, self.codes_pictures)
                for code in self.codes
            ]
            self.codes_pictures = PICTURES


class PlacedTile(msgspec.Struct, frozen=True):
    tile: str
    x: int
    y: int
    rotation: int


class CarcassonneView(msgspec.Struct, frozen=True, tag_field="type"):
    """Everything public: board, followers, scores, supplies and the drawn tile. The order of
    the remaining tiles is hidden; only their number shows."""

    seats: int
    to_move: list[int]
    tile: str | None
    tiles_left: int
    scores: list[int]
    supply: list[int]
    board: list[PlacedTile]
    followers: list[Follower]
    finished: bool
    winners: list[int]
    messengers: MessengersView | None = None
    pieces: PiecesView | None = None
