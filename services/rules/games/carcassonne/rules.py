"""Carcassonne, base game (2nd edition, River excluded): 72 land tiles, followers, farms;
optionally with the mini expansion The Messengers (option ``messengers``).

A turn is one action, ``PlaceTile(x, y, rotation, follower)``: the drawn tile goes next to the
board with every touching edge matching, and the player may put a follower on one feature of
that tile whose connected feature holds no follower yet. Completed roads, cities and cloisters
score at once and give their followers back; unfinished features and farms score at the end.

All chance is the shuffle in ``setup`` (recorded in ``StackShuffled``, hidden from every seat);
each draw then follows the recorded order, a tile that fits nowhere is discarded
(``TileDiscarded``) and the next one drawn. Coordinates: x grows east, y grows north, the start
tile lies at (0, 0); a rotation is a number of clockwise quarter turns of the tile's published
picture; a follower *spot* is an index into the tile's feature list in
``seeds/carcassonne/tiles.json`` (see the README there for the data format and the export).

Speed: squares are ints, tiles are precomputed in all rotations (``carcassonne_tiles``), and
features live in an incremental union-find whose roots keep their open ends, members and
followers, so no check ever walks the board.

The Messengers (``carcassonne_messengers`` holds its data, messages and track rules): a turn
becomes a short sequence of actions by the active player. ``PlaceTile``; then one
``ChooseFigure`` per feature the player scored (in scoring order), which the board has already
scored (``FeatureScored``); then, if a figure that moved stopped on a dark space, a message is
drawn and resolved with ``CarryOutMessage`` or ``TakeMessagePoints``. Other players' points go
to the figure of their standing preference (``SetScoringPreference``, accepted from any seat
at any time). Every figure move is a ``FigureAdvanced`` event. Without the expansion nothing of
this runs and the events are those of the base game.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any

import msgspec

from services.rules.games import carcassonne_messengers as messengers
from services.rules.games.carcassonne_messengers import (
    EXTRA_TURN,
    FIGURES,
    MESSAGES,
    SCORE_FOLLOWER,
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    FiguresSummed,
    MessageDrawn,
    MessageResolved,
    MessagesShuffled,
    MessengersState,
    MessengersView,
    OwnFollower,
    PreferenceSet,
    SetScoringPreference,
    Spot,
    TakeMessagePoints,
)
from services.rules.games.carcassonne_tiles import (
    CLOISTER,
    COUNTS,
    EDGES,
    FIELD,
    FITS,
    KIND_NAMES,
    LETTERS,
    OPEN_KEY,
    OPEN_LINKS,
    PICTURES,
    PORT_SEG,
    ROAD,
    SEG_CITIES,
    SEG_KIND,
    SEG_MASK,
    SEG_PENNANT,
    SEG_SIDES,
    START_TILE,
    TILE_INDEX,
    current_rotation,
    rotation_in,
)
from services.rules.games.contract import Game, OptionSpec, Outcome, Rejection

FOLLOWERS_PER_PLAYER = 7
CLOISTER_COMPLETE_POINTS = 9
FARM_POINTS_PER_CITY = 3

_BOUND = 100
"""Largest |x| or |y| accepted; 71 tiles in a row reach 71, and squares are coded in a byte."""
_STEPS = (1, 256, -1, -256)
"""Square offsets to the N, E, S and W neighbours."""
_AROUND = (1, 257, 256, 255, -1, -257, -256, -255)
"""Square offsets to the eight squares around one (a cloister's neighbourhood)."""
_ROTATIONS = frozenset(range(4))
_FACING_SHIFT = (4, 6, 0, 2)
"""For a neighbour on side d, the bit shift of its own side that faces back (2 * opposite)."""
_NODE_SLOTS = 8
"""Union-find nodes reserved per placed tile (the most features on one tile is 8)."""


def _square(x: int, y: int) -> int:
    return ((x + 128) << 8) | (y + 128)


def _xy(square: int) -> tuple[int, int]:
    return (square >> 8) - 128, (square & 255) - 128


# ---------------------------------------------------------------------------- messages


class PlaceTile(
    msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True, tag_field="type"
):
    """Put the drawn tile at (x, y), turned ``rotation`` clockwise quarter turns, with a
    follower on feature ``follower`` of the tile (an index into its feature list) or none."""

    x: int
    y: int
    rotation: int
    follower: int | None = None


class Follower(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A follower on the board: the tile square and the feature (spot) it stands on."""

    seat: int
    x: int
    y: int
    spot: int
    feature: str


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


class TileDrawn(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    seat: int
    tile: str


class TileDiscarded(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    """The drawn tile fits nowhere on the board; it leaves the game and ``seat`` draws again."""

    seat: int
    tile: str


class TilePlaced(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    seat: int
    tile: str
    x: int
    y: int
    rotation: int
    follower: int | None


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
)
Action = PlaceTile | SetScoringPreference | ChooseFigure | CarryOutMessage | TakeMessagePoints


class CarcassonneState(msgspec.Struct, tag_field="type"):
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
    pictures: int = 1
    """The tile pictures the match's events turn rotations from (``StackShuffled``)."""
    codes_pictures: int = 1
    """The tile pictures ``codes`` were made with: a state stored before pictures had versions
    is brought to today's as it is decoded (the rest of the fold does not depend on them)."""

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


# ---------------------------------------------------------------------------- setup


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """A given tile order must use base-game letters, no more of each than the box holds;
    the expansion's options follow ``carcassonne_messengers.validate_options``."""
    problem = messengers.validate_options(options, seats)
    if problem is not None:
        return problem
    order = options["tile_order"]
    if order is None:
        return options
    if len(order) < 2:
        return Rejection("bad_option", "tile_order needs the start tile and at least one more")
    unknown = sorted({letter for letter in order if letter not in TILE_INDEX})
    if unknown:
        return Rejection("bad_option", f"tile_order: unknown tile letter(s) {', '.join(unknown)}")
    for letter, count in zip(LETTERS, COUNTS, strict=True):
        if order.count(letter) > count:
            return Rejection("bad_option", f"tile_order: more than {count} tile(s) {letter}")
    return options


def setup(options: dict[str, Any], seats: int, rng: random.Random) -> list[Any]:
    """Shuffle the stack (or take ``tile_order``), lay the start tile and draw for seat 0;
    with The Messengers, shuffle the messages (or take ``message_order``) after the tiles."""
    order = options.get("tile_order")
    if order:
        start, stack = order[0], list(order[1:])
    else:
        stack = [
            letter for letter, count in zip(LETTERS, COUNTS, strict=True) for _ in range(count)
        ]
        stack.remove(START_TILE)
        rng.shuffle(stack)
        start = START_TILE
    started = StackShuffled(seats, start, stack, len(stack), PICTURES)
    state = evolve(None, started)
    if not options.get("messengers"):
        return [started, *_draw(state, 0, [])]
    shuffled = messengers.shuffled_messages(options, rng)
    state = evolve(state, shuffled)
    return [started, shuffled, *_draw(state, 0, [])]


# ---------------------------------------------------------------------------- evolve


def _place(state: CarcassonneState, square: int, code: int) -> int:
    """Lay a tile: new feature nodes, merges with the neighbours, new open squares."""
    tile = code >> 2
    ordinal = len(state.codes)
    base = ordinal << 3
    state.codes.append(code)
    state.squares.append(square)
    board = state.board
    board[square] = ordinal
    parent = state.parent
    try:
        parent += _NODES[ordinal]
    except IndexError:  # more tiles than the box holds: only a hand-made stack
        parent += range(base, base + _NODE_SLOTS)
    members = state.members
    members += _EMPTY_SLOTS
    open_ends = state.open_ends
    open_ends += _OPEN_TEMPLATE[tile]
    state.holders.extend(_EMPTY_SLOTS)
    del state.open[square]
    port_seg = PORT_SEG[code]
    closes = _CLOSES[tile]
    for _bits, port, node in state.links.pop(square):
        seg = port_seg[port]
        mine = parent[base + seg]
        theirs = parent[node]
        if mine == theirs:
            pass
        elif mine == base + seg and members[mine] is None:
            parent[mine] = theirs
            joined = members[theirs]
            if joined is None:
                members[theirs] = [theirs, mine]
            else:
                joined.append(mine)
            open_ends[theirs] += open_ends[mine]
            mine = theirs
        else:
            mine = _union(state, mine, theirs)
        open_ends[mine] -= closes[seg]
    open_squares = state.open
    all_links = state.links
    for step, keep, require, links in _SIDES[code]:
        neighbour = square + step
        key = open_squares.get(neighbour)
        if key is None and neighbour in board:
            continue
        if len(links) == 1:
            ((bits, port, seg),) = links
            fresh = [(bits, port, base + seg)]
        else:  # a road side: the road and the fields on either side of it
            (bits, port, seg), (bits1, port1, seg1), (bits2, port2, seg2) = links
            fresh = [
                (bits, port, base + seg),
                (bits1, port1, base + seg1),
                (bits2, port2, base + seg2),
            ]
        if key is None:
            open_squares[neighbour] = (OPEN_KEY & keep) | require
            all_links[neighbour] = fresh
        else:
            open_squares[neighbour] = (key & keep) | require
            known = all_links[neighbour]
            known += fresh
    return base


_EMPTY_SLOTS = (None,) * _NODE_SLOTS
_NODES = tuple(tuple(range(ordinal << 3, (ordinal + 1) << 3)) for ordinal in range(sum(COUNTS)))
"""Per tile ordinal, its union-find nodes (each its own root when laid)."""
_OPEN_TEMPLATE = tuple(sides + (0,) * (_NODE_SLOTS - len(sides)) for sides in SEG_SIDES)
_CLOSES = tuple(tuple(2 if kind <= ROAD else 0 for kind in kinds) for kinds in SEG_KIND)
"""Per tile and feature: open ends a matched side closes (both sides of a road or city)."""
_SIDES = tuple(
    tuple(
        (
            _STEPS[side],
            ~(3 << _FACING_SHIFT[side]) & OPEN_KEY,
            EDGES[code][side] << _FACING_SHIFT[side],
            OPEN_LINKS[code][side],
        )
        for side in range(4)
    )
    for code in range(len(EDGES))
)
"""Per code and side: square step, key mask and bits for the square beyond, and its links."""


def _union(state: CarcassonneState, a: int, b: int) -> int:
    """Merge two features; the smaller one's nodes point at the larger one's root."""
    members = state.members
    joined, moved = members[a], members[b]
    if (len(joined) if joined else 1) < (len(moved) if moved else 1):
        a, b, joined, moved = b, a, moved, joined
    parent = state.parent
    if moved is None:
        moved = [b]
    for node in moved:
        parent[node] = a
    if joined is None:
        members[a] = [a, *moved]
    else:
        joined += moved
    members[b] = None
    state.open_ends[a] += state.open_ends[b]
    holders = state.holders
    absorbed = holders[b]
    if absorbed:
        kept = holders[a]
        if not kept:
            holders[a] = absorbed
        else:
            kept += absorbed
        holders[b] = None
    return a


def _evolve_started(state: CarcassonneState | None, event: StackShuffled) -> CarcassonneState:
    origin = _square(0, 0)
    state = CarcassonneState(
        seats=event.seats,
        stack=[TILE_INDEX[letter] for letter in event.stack or ()],
        drawn=0,
        seat=0,
        tile=-1,
        finished=False,
        scores=[0] * event.seats,
        supply=[FOLLOWERS_PER_PLAYER] * event.seats,
        winners=[],
        board={},
        codes=[],
        squares=[],
        open={origin: OPEN_KEY},
        links={origin: []},
        parent=[],
        members=[],
        open_ends=[],
        holders=[],
        cloisters={},
        pictures=event.pictures,
        codes_pictures=PICTURES,
    )
    current_rotation(0, 0, event.pictures)  # a version never published is refused here
    _place(state, origin, TILE_INDEX[event.start_tile] << 2)
    return state


def _evolve_drawn(state: CarcassonneState, event: TileDrawn) -> CarcassonneState:
    if event.seat != state.seat:
        _turn_passed(state)
    state.drawn += 1
    state.seat = event.seat
    state.tile = TILE_INDEX[event.tile]
    return state


def _evolve_discarded(state: CarcassonneState, event: TileDiscarded) -> CarcassonneState:
    if event.seat != state.seat:
        _turn_passed(state)
    state.drawn += 1
    state.seat = event.seat
    return state


def _turn_passed(state: CarcassonneState) -> None:
    """Another seat draws (or play ends): an extra turn of message 4 is over, and message 4
    goes under the message stack only now, below every message drawn during that turn."""
    expansion = state.messengers
    if expansion is not None and expansion.held:
        expansion.stack.append(expansion.held)
        expansion.held = 0


def _evolve_placed(state: CarcassonneState, event: TilePlaced) -> CarcassonneState:
    square = ((event.x + 128) << 8) | (event.y + 128)
    tile = TILE_INDEX[event.tile]
    rotation = event.rotation
    if state.pictures != PICTURES:
        rotation = current_rotation(tile, rotation, state.pictures)
    base = _place(state, square, (tile << 2) + rotation)
    spot = event.follower
    if spot is not None:
        node = base + spot
        root = state.parent[node]
        holders = state.holders
        held = holders[root]
        if not held:
            holders[root] = [(node << 3) | event.seat]
        else:
            held.append((node << 3) | event.seat)
        state.supply[event.seat] -= 1
        if SEG_KIND[tile][spot] == CLOISTER:
            state.cloisters[square] = node
    state.tile = -1
    if state.messengers is not None:
        state.messengers.moved = 0
    return state


def _evolve_scored(state: CarcassonneState, event: FeatureScored) -> CarcassonneState:
    if not event.final:
        for follower in event.followers:
            square = _square(follower.x, follower.y)
            node = (state.board[square] << 3) + follower.spot
            state.holders[state.parent[node]] = None
            state.supply[follower.seat] += 1
            if follower.feature == "cloister":
                del state.cloisters[square]
    expansion = state.messengers
    if expansion is None or event.final:
        for seat in event.seats:
            _award(state, seat, event.points)
    elif state.seat in event.seats:
        expansion.pending.append((KIND_NAMES.index(event.feature), event.points))
    return state


def _award(state: CarcassonneState, seat: int, points: int, figure: int = 0) -> None:
    """Every point reaches a player's score here and nowhere else (``_score`` decides who
    scores what). With The Messengers the points of play arrive as ``FigureAdvanced`` events
    and also move that figure; the final scoring's go to the one figure left (figure 0)."""
    state.scores[seat] += points
    expansion = state.messengers
    if expansion is not None:
        expansion.figures[2 * seat + figure] += points


def _evolve_over(state: CarcassonneState, event: GameOver) -> CarcassonneState:
    state.finished = True
    state.tile = -1
    state.winners = list(event.winners)
    return state


def _expansion(state: CarcassonneState) -> MessengersState:
    """The Messengers' state, for code that only runs when the match plays them."""
    return state.messengers  # type: ignore[return-value]


def _evolve_messages_shuffled(state: CarcassonneState, event: MessagesShuffled) -> CarcassonneState:
    state.messengers = messengers.new_state(event, state.seats)
    return state


def _evolve_preference(state: CarcassonneState, event: PreferenceSet) -> CarcassonneState:
    preference = messengers.BEHIND if event.figure is None else event.figure
    _expansion(state).preferences[event.seat] = preference
    return state


def _evolve_advanced(state: CarcassonneState, event: FigureAdvanced) -> CarcassonneState:
    """Points to a figure; the active player's move pays the first pending scoring."""
    _award(state, event.seat, event.points, event.figure)
    expansion = _expansion(state)
    if event.seat == state.seat and expansion.pending:
        del expansion.pending[0]
        expansion.moved |= 1 << event.figure
    return state


def _evolve_message_drawn(state: CarcassonneState, event: MessageDrawn) -> CarcassonneState:
    expansion = _expansion(state)
    if expansion.stack:  # empty only in a fold of redacted events
        del expansion.stack[0]
    expansion.message = event.message
    return state


def _evolve_message_resolved(state: CarcassonneState, event: MessageResolved) -> CarcassonneState:
    """The message goes under the stack (message 4, carried out, once its extra turn is over:
    that turn is its action); message 8's follower goes home."""
    expansion = _expansion(state)
    if MESSAGES[event.message].effect == EXTRA_TURN and not event.took_points:
        expansion.held = event.message
    else:
        expansion.stack.append(event.message)
    expansion.message = 0
    returned = event.returned
    if returned is not None:
        square = _square(returned.x, returned.y)
        node = (state.board[square] << 3) + returned.spot
        root = state.parent[node]
        held = state.holders[root] or []
        held.remove((node << 3) | event.seat)
        if not held:
            state.holders[root] = None
        if state.cloisters.get(square) == node:
            del state.cloisters[square]
        state.supply[event.seat] += 1
    return state


def _evolve_summed(state: CarcassonneState, event: FiguresSummed) -> CarcassonneState:
    _turn_passed(state)  # play is over: an extra turn of message 4 too
    figures = _expansion(state).figures
    for seat, total in enumerate(event.totals):
        figures[2 * seat] = total
        figures[2 * seat + 1] = 0
    _expansion(state).summed = True
    return state


_EVOLVERS: dict[type, Any] = {
    StackShuffled: _evolve_started,
    TileDrawn: _evolve_drawn,
    TileDiscarded: _evolve_discarded,
    TilePlaced: _evolve_placed,
    FeatureScored: _evolve_scored,
    GameOver: _evolve_over,
    MessagesShuffled: _evolve_messages_shuffled,
    PreferenceSet: _evolve_preference,
    FigureAdvanced: _evolve_advanced,
    MessageDrawn: _evolve_message_drawn,
    MessageResolved: _evolve_message_resolved,
    FiguresSummed: _evolve_summed,
}


def evolve(state: CarcassonneState | None, event: Any) -> CarcassonneState:
    return _EVOLVERS[type(event)](state, event)


# ---------------------------------------------------------------------------- legal moves


_NO_FOLLOWER = 1 << 12
"""Flag in a picker key: the player has no follower left."""
_SPOT_CHOICES = _NODE_SLOTS + 1
"""Per rotation: no follower, or one of up to 8 spots."""
Picker = Callable[[list[PlaceTile]], Sequence[PlaceTile]]
_pickers: dict[int, Picker] = {}
_square_actions: dict[int, list[PlaceTile]] = {}


def _build_picker(tile: int, key: int, occupied: int) -> Picker | None:
    """Picks the legal actions of ``tile`` out of a square's ``_actions_at`` list, given the
    square's requirement ``key`` and its ``occupied`` ports (those leading to a feature that
    holds a follower); None where the tile does not fit."""
    picks = []
    for rotation in FITS[tile][key]:
        picks.append(rotation * _SPOT_CHOICES)
        if not occupied & _NO_FOLLOWER:
            masks = SEG_MASK[(tile << 2) + rotation]
            picks.extend(
                rotation * _SPOT_CHOICES + spot + 1
                for spot, mask in enumerate(masks)
                if not mask & occupied
            )
    if not picks:
        return None
    if len(picks) > 1:
        return itemgetter(*picks)
    return itemgetter(slice(picks[0], picks[0] + 1))


def _picker(tile: int, key: int, occupied: int) -> Picker:
    """``_build_picker`` memoised: the same patterns come back all game long."""
    cache_key = (tile << 21) | (key << 13) | occupied
    picker = _pickers.get(cache_key)
    if picker is None:
        picker = _pickers[cache_key] = _build_picker(tile, key, occupied)  # type: ignore[assignment]
    return picker


_FREE_PICKERS = tuple(
    tuple(_build_picker(tile, key, 0) for key in range(256)) for tile in range(len(LETTERS))
)
"""``_FREE_PICKERS[tile][key]``: the picker when no neighbouring feature holds a follower
(None: the tile does not fit)."""
_BARE_PICKERS = tuple(
    tuple(_build_picker(tile, key, _NO_FOLLOWER) for key in range(256))
    for tile in range(len(LETTERS))
)
"""``_BARE_PICKERS[tile][key]``: the picker for a player without followers left."""


def _actions_at(square: int) -> list[PlaceTile]:
    """All conceivable actions on a square (index ``rotation * 9 + spot + 1``, no follower at
    ``rotation * 9``), built once per process: actions are immutable, so legal action lists
    share them."""
    actions = _square_actions.get(square)
    if actions is None:
        x, y = _xy(square)
        actions = [
            PlaceTile(x, y, rotation, spot - 1 if spot else None)
            for rotation in range(4)
            for spot in range(_SPOT_CHOICES)
        ]
        _square_actions[square] = actions
    return actions


def _occupied_ports(state: CarcassonneState, square: int) -> int:
    """Ports of an empty square that would join a feature already holding a follower."""
    parent = state.parent
    holders = state.holders
    occupied = 0
    for bits, _port, node in state.links[square]:
        if holders[parent[node]]:
            occupied |= bits
    return occupied


def legal_actions(state: CarcassonneState, seat: int) -> list[Any]:
    """Every fitting (square, rotation), each without and with a follower on each free spot;
    with The Messengers, the actions of the turn's phase (``_messenger_actions``)."""
    if state.messengers is not None:
        return _messenger_actions(state, seat)
    if state.finished or seat != state.seat:
        return []
    return _placements(state, seat)


def _placements(state: CarcassonneState, seat: int) -> list[Any]:
    """The placements of the drawn tile, picked out of memoised per-square action lists."""
    tile = state.tile
    actions: list[PlaceTile] = []
    square_actions = _square_actions
    if not state.supply[seat]:
        bare = _BARE_PICKERS[tile]
        for square, key in state.open.items():
            picker = bare[key]
            if picker is not None:
                try:
                    actions += picker(square_actions[square])
                except KeyError:  # a square seen for the first time
                    actions += picker(_actions_at(square))
        return actions
    free = _FREE_PICKERS[tile]
    pickers = _pickers
    tile_key = tile << 21
    parent = state.parent
    holders = state.holders
    links = state.links
    for square, key in state.open.items():
        picker = free[key]
        if picker is None:
            continue
        occupied = 0
        for bits, _port, node in links[square]:
            if holders[parent[node]]:
                occupied |= bits
        if occupied:
            picker = pickers.get(tile_key | (key << 13) | occupied) or _picker(tile, key, occupied)
        try:
            actions += picker(square_actions[square])
        except KeyError:  # a square seen for the first time
            actions += picker(_actions_at(square))
    return actions


_PREFERENCES = tuple(SetScoringPreference(figure) for figure in (None, *FIGURES))
_FIGURE_CHOICES = tuple(ChooseFigure(figure) for figure in FIGURES)
_MESSAGE_POINTS = tuple(TakeMessagePoints(figure) for figure in FIGURES)
_CARRY_OUT = tuple(CarryOutMessage(figure) for figure in FIGURES)


def _messenger_actions(state: CarcassonneState, seat: int) -> list[Any]:
    """Any seat may change its standing preference at any time; the active player also has
    the phase's actions: a figure for the first pending scoring, the drawn message's
    choices, or else the placement."""
    if state.finished or not 0 <= seat < state.seats:
        return []
    expansion = _expansion(state)
    preference = expansion.preferences[seat]
    current = None if preference == messengers.BEHIND else preference
    changes = [action for action in _PREFERENCES if action.figure != current]
    if seat != state.seat:
        return changes
    if expansion.pending:
        return [*_FIGURE_CHOICES, *changes]
    if expansion.message:
        return _message_actions(state, seat) + changes
    return _placements(state, seat) + changes


def _message_actions(state: CarcassonneState, seat: int) -> list[Any]:
    message = MESSAGES[_expansion(state).message]
    actions: list[Any] = list(_MESSAGE_POINTS)
    followers = _own_followers(state, seat)
    if not messengers.can_carry_out(message, followers, len(state.stack) - state.drawn):
        return actions
    if message.effect == EXTRA_TURN:
        actions.append(CarryOutMessage())
    elif message.effect == SCORE_FOLLOWER:
        actions += [
            CarryOutMessage(figure, follower.spot) for follower in followers for figure in FIGURES
        ]
    else:
        actions += _CARRY_OUT
    return actions


def to_move(state: CarcassonneState) -> list[int]:
    return [] if state.finished else [state.seat]


# ---------------------------------------------------------------------------- decide


def decide(state: CarcassonneState, seat: int, action: Any) -> list[Any] | Rejection:
    if state.finished:
        return Rejection("game_over", "the match is over")
    if state.messengers is not None:
        return _decide_messengers(state, seat, action)
    if seat != state.seat:
        return Rejection("not_your_turn", f"seat {state.seat} is to move")
    if type(action) is not PlaceTile:
        return Rejection("unknown_action", "the only action is PlaceTile")
    placed = _placement(state, seat, action)
    if isinstance(placed, Rejection):
        return placed
    events, square, code = placed
    return _end_turn(state, seat, events, square, code)


def _placement(
    state: CarcassonneState, seat: int, action: PlaceTile
) -> tuple[list[Any], int, int] | Rejection:
    """The checked placement: ``TilePlaced`` and the scorings it causes, with the tile's
    square and code (the state does not hold them yet)."""
    x, y, rotation, spot = action.x, action.y, action.rotation, action.follower
    square = ((x + 128) << 8) | (y + 128)
    key = state.open.get(square) if -_BOUND <= x <= _BOUND and -_BOUND <= y <= _BOUND else None
    if key is None:
        return Rejection("bad_square", f"({x}, {y}) is not an empty square next to the board")
    tile = state.tile
    if rotation not in FITS[tile][key]:
        if rotation not in _ROTATIONS:
            return Rejection("bad_rotation", "rotation is 0, 1, 2 or 3 clockwise quarter turns")
        return Rejection("edges_do_not_match", "every touching edge must match its neighbour")
    code = (tile << 2) + rotation
    if spot is not None:
        if not 0 <= spot < len(SEG_KIND[tile]):
            return Rejection("bad_spot", f"tile {LETTERS[tile]} has no feature {spot}")
        if not state.supply[seat]:
            return Rejection("no_followers", "all your followers are on the board")
        if SEG_MASK[code][spot] & _occupied_ports(state, square):
            return Rejection("feature_occupied", "that feature already holds a follower")
    if state.pictures != PICTURES:  # a match begun before the pictures changed keeps its own
        rotation = rotation_in(tile, rotation, state.pictures)
    events: list[Any] = [TilePlaced(seat, LETTERS[tile], x, y, rotation, spot)]
    _add_completions(events, state, seat, square, code, spot)
    return events, square, code


def _end_turn(
    state: CarcassonneState, seat: int, events: list[Any], square: int = -1, code: int = 0
) -> list[Any]:
    """``events`` followed by the next seat's draw (or the end of the match); ``code`` on
    ``square`` is a placement among ``events`` that the state does not hold yet."""
    following = (seat + 1) % state.seats
    drawn = state.drawn
    stack = state.stack
    if drawn < len(stack) and _fits_somewhere(state, stack[drawn], square, code):
        events.append(TileDrawn(following, LETTERS[stack[drawn]]))
    else:
        events += _draw(state, following, events, square, code)
    return events


_ACTION_TYPES = frozenset(
    (PlaceTile, SetScoringPreference, ChooseFigure, CarryOutMessage, TakeMessagePoints)
)


def _decide_messengers(state: CarcassonneState, seat: int, action: Any) -> list[Any] | Rejection:
    """A turn's actions in order: place, a figure per pending scoring, the drawn message;
    preferences from anyone at any time."""
    kind = type(action)
    if kind not in _ACTION_TYPES:
        return Rejection("unknown_action", f"{kind.__name__} is no Carcassonne action")
    expansion = _expansion(state)
    if not 0 <= seat < state.seats:
        return Rejection("bad_seat", f"seats are 0-{state.seats - 1}")
    if kind is SetScoringPreference:
        return _set_preference(expansion, seat, action)
    if seat != state.seat:
        return Rejection("not_your_turn", f"seat {state.seat} is to move")
    if expansion.pending:
        if kind is not ChooseFigure:
            return Rejection("wrong_phase", "first choose the figure for your pending points")
        return _choose_figure(state, seat, action.figure)
    if expansion.message:
        if kind is not CarryOutMessage and kind is not TakeMessagePoints:
            return Rejection("wrong_phase", "first resolve the message you drew")
        return _resolve_message(state, seat, action)
    if kind is not PlaceTile:
        return Rejection("wrong_phase", "place the drawn tile")
    placed = _placement(state, seat, action)
    if isinstance(placed, Rejection):
        return placed
    events, square, code = placed
    routed = [events[0]]
    figures = list(expansion.figures)
    preferences = expansion.preferences
    chooses = False
    for scored in events[1:]:
        routed.append(scored)
        for other in scored.seats:
            if other == seat:
                chooses = True
                continue
            figure = messengers.preferred_figure(figures, preferences, other)
            figures[2 * other + figure] += scored.points
            routed.append(FigureAdvanced(other, figure, scored.points))
    if chooses:
        return routed
    return _end_turn(state, seat, routed, square, code)


def _set_preference(
    expansion: MessengersState, seat: int, action: SetScoringPreference
) -> list[Any] | Rejection:
    figure = action.figure
    if figure is not None and figure not in FIGURES:
        return Rejection("bad_figure", "figure is 0 (scoring figure), 1 (messenger) or null")
    stored = messengers.BEHIND if figure is None else figure
    if expansion.preferences[seat] == stored:
        return Rejection("preference_unchanged", "that is already your preference")
    return [PreferenceSet(seat, figure)]


def _choose_figure(state: CarcassonneState, seat: int, figure: int) -> list[Any] | Rejection:
    """Pay the first pending scoring; after the last, a message if a moved figure stopped on
    a dark space, else the next seat's draw."""
    if figure not in FIGURES:
        return Rejection("bad_figure", "figure is 0 (scoring figure) or 1 (messenger)")
    expansion = _expansion(state)
    points = expansion.pending[0][1]
    events: list[Any] = [FigureAdvanced(seat, figure, points)]
    if len(expansion.pending) > 1:
        return events
    figures = list(expansion.figures)
    figures[2 * seat + figure] += points
    if messengers.draws_message(expansion, figures, seat, expansion.moved | 1 << figure):
        events.append(MessageDrawn(seat, expansion.stack[0]))
        return events
    return _end_turn(state, seat, events)


def _resolve_message(
    state: CarcassonneState, seat: int, action: CarryOutMessage | TakeMessagePoints
) -> list[Any] | Rejection:
    """The message's action or its 2 points; points that land the figure on a dark space
    draw the next message, message 4 starts the extra turn, else the next seat draws."""
    expansion = _expansion(state)
    message = MESSAGES[expansion.message]
    figure = action.figure
    returned = None
    took_points = isinstance(action, TakeMessagePoints)
    if isinstance(action, TakeMessagePoints):
        points = message.instead_points
    else:
        followers = _own_followers(state, seat)
        if not messengers.can_carry_out(message, followers, len(state.stack) - state.drawn):
            return Rejection("cannot_carry_out", f"message {message.number} cannot be done now")
        if message.effect == EXTRA_TURN:
            if figure is not None or action.follower is not None:
                return Rejection("bad_figure", "message 4 gives a turn, not points: no figure")
            events: list[Any] = [MessageResolved(seat, message.number, False, 0)]
            return events + _draw(state, seat, events)
        chosen = None
        if message.effect == SCORE_FOLLOWER:
            chosen = next((f for f in followers if f.spot == action.follower), None)
            if chosen is None:
                return Rejection("bad_follower", "name one of your followers on the board")
            returned = chosen.spot
        elif action.follower is not None:
            return Rejection("bad_follower", "only message 8 names a follower")
        points = messengers.message_points(message, followers, chosen)
    if figure not in FIGURES:
        return Rejection("bad_figure", "figure is 0 (scoring figure) or 1 (messenger)")
    events = [MessageResolved(seat, message.number, took_points, points, returned)]
    if points:
        events.append(FigureAdvanced(seat, figure, points))
        figures = list(expansion.figures)
        figures[2 * seat + figure] += points
        if messengers.draws_message(expansion, figures, seat, 1 << figure):
            events.append(MessageDrawn(seat, expansion.stack[0]))
            return events
    return _end_turn(state, seat, events)


def _own_followers(state: CarcassonneState, seat: int) -> list[OwnFollower]:
    """``seat``'s followers on the board with what the messages need of their features."""
    followers = []
    codes = state.codes
    holders = state.holders
    for root in compress(range(len(holders)), holders):
        held: list[int] = holders[root]  # type: ignore[assignment]
        if all(holder & 7 != seat for holder in held):
            continue
        kind = SEG_KIND[codes[root >> 3] >> 2][root & 7]
        counts = [0] * state.seats
        for holder in held:
            counts[holder & 7] += 1
        majority = counts[seat] == max(counts)
        points = _unfinished_points(state, root, kind)
        nodes = state.members[root] or (root,)
        pennants = sum(SEG_PENNANT[codes[node >> 3] >> 2][node & 7] for node in nodes)
        for holder in sorted(held):
            if holder & 7 == seat:
                node = holder >> 3
                x, y = _xy(state.squares[node >> 3])
                spot = Spot(x, y, node & 7)
                followers.append(OwnFollower(spot, kind, root, points, majority, pennants))
    return followers


def _add_completions(
    events: list[Any],
    state: CarcassonneState,
    seat: int,
    square: int,
    code: int,
    spot: int | None,
) -> None:
    """Append the scorings of the roads, cities and cloisters that the placement completes,
    read without mutating."""
    tile = code >> 2
    kinds = SEG_KIND[tile]
    port_seg = PORT_SEG[code]
    parent = state.parent
    ordinal = len(state.codes)
    closes = _CLOSES[tile]
    joined: dict[int, list[int]] | None = None
    for _bits, port, node in state.links[square]:
        seg = port_seg[port]
        if closes[seg]:
            if joined is None:
                joined = {seg: [parent[node]]}
            elif seg in joined:
                joined[seg].append(parent[node])
            else:
                joined[seg] = [parent[node]]
    if joined is not None:
        holders = state.holders
        for segs, roots in _closed(joined, SEG_SIDES[tile], state.open_ends):
            held = [holder for root in roots for holder in holders[root] or ()]
            if spot in segs:
                held.append((((ordinal << 3) + spot) << 3) | seat)
            if held:
                members = state.members
                nodes = [member for root in roots for member in members[root] or (root,)]
                nodes.extend((ordinal << 3) + seg for seg in segs)
                points = _feature_points(state, kinds[segs[0]], nodes, True, tile)
                events.append(_score(state, kinds[segs[0]], points, held, square, False))
    board = state.board
    if spot is not None and kinds[spot] == CLOISTER:
        if all(square + offset in board for offset in _AROUND):
            holder = (((ordinal << 3) + spot) << 3) | seat
            events.append(
                _score(state, CLOISTER, CLOISTER_COMPLETE_POINTS, [holder], square, False)
            )
    cloisters = state.cloisters
    if cloisters:
        monk_at = cloisters.get
        for offset in _AROUND:
            monk = monk_at(square + offset)
            if monk is not None and _neighbours(board, square + offset) == 7:
                held = list(state.holders[monk] or ())
                events.append(
                    _score(state, CLOISTER, CLOISTER_COMPLETE_POINTS, held, square, False)
                )


def _closed(
    joined: dict[int, list[int]], sides: tuple[int, ...], open_ends: list[int]
) -> list[tuple[list[int], Collection[int]]]:
    """The resulting features that the placement closes, as ``(features of the new tile,
    neighbour roots)``: every open end of theirs and of the tile's features is matched."""
    if len(joined) == 1:
        [(seg, roots)] = joined.items()
        groups = [([seg], roots if len(roots) == 1 else set(roots), len(roots))]
    else:
        groups = _join_groups(joined)
    closed = []
    for segs, distinct, links in groups:
        ends = 0
        for root in distinct:
            ends += open_ends[root]
        for seg in segs:
            ends += sides[seg]
        if ends == 2 * links:
            closed.append((segs, distinct))
    return closed


def _join_groups(joined: dict[int, list[int]]) -> list[tuple[list[int], set[int], int]]:
    """Group the new tile's road/city features that become one feature (a loop through the
    tile): ``(features, neighbour roots, links)`` per resulting feature."""
    groups: list[tuple[list[int], set[int], int]] = []
    for seg, roots in joined.items():
        segs, distinct, links = [seg], set(roots), len(roots)
        for group in [group for group in groups if group[1] & distinct]:
            groups.remove(group)
            segs += group[0]
            distinct |= group[1]
            links += group[2]
        groups.append((segs, distinct, links))
    return groups


def _neighbours(board: dict[int, int], square: int) -> int:
    return sum(1 for offset in _AROUND if square + offset in board)


def _feature_points(
    state: CarcassonneState, kind: int, nodes: Sequence[int], complete: bool, new_tile: int = -1
) -> int:
    """Road: 1 per tile. City: 2 per tile and pennant when complete, else 1. A tile counts once
    even when the feature passes it twice. ``new_tile`` is the tile not yet on the board."""
    tiles = len({node >> 3 for node in nodes})
    if kind == ROAD:
        return tiles
    codes = state.codes
    known = len(codes)
    pennants = sum(
        SEG_PENNANT[codes[node >> 3] >> 2 if node >> 3 < known else new_tile][node & 7]
        for node in nodes
    )
    return 2 * (tiles + pennants) if complete else tiles + pennants


def _score(
    state: CarcassonneState, kind: int, points: int, held: list[int], square: int, final: bool
) -> FeatureScored:
    """The one place a scoring is decided: the seats with the most followers on the feature
    (all tied seats) score ``points``. ``square`` locates a follower on the tile not yet
    placed."""
    counts = [0] * state.seats
    for holder in held:
        counts[holder & 7] += 1
    most = max(counts)
    seats = [seat for seat, count in enumerate(counts) if count == most]
    squares = state.squares
    followers = []
    for holder in sorted(held):
        node = holder >> 3
        ordinal = node >> 3
        x, y = _xy(squares[ordinal] if ordinal < len(squares) else square)
        followers.append(Follower(holder & 7, x, y, node & 7, KIND_NAMES[kind]))
    return FeatureScored(KIND_NAMES[kind], points, seats, followers, final)


def _fits_somewhere(state: CarcassonneState, tile: int, square: int, code: int) -> bool:
    """Whether ``tile`` fits the board once ``code`` lies on ``square`` (``square`` < 0: the
    board as it is)."""
    fits = FITS[tile]
    if square < 0:
        return any(fits[key] for key in state.open.values())
    for other, key in state.open.items():
        if fits[key] and other - square not in _CHANGED:
            return True
    board = state.board
    open_squares = state.open
    for step, keep, require, _links in _SIDES[code]:
        neighbour = square + step
        if neighbour in board:
            continue
        if fits[(open_squares.get(neighbour, OPEN_KEY) & keep) | require]:
            return True
    return False


_CHANGED = frozenset((0, *_STEPS))
"""Offsets of the squares whose requirement a placement changes (itself and its sides)."""


def _draw(
    state: CarcassonneState, seat: int, pending: list[Any], square: int = -1, code: int = 0
) -> list[Any]:
    """Draw for ``seat`` after the ``pending`` events (placing ``code`` on ``square``),
    discarding tiles that fit nowhere; with the stack empty, score the end."""
    events: list[Any] = []
    stack = state.stack
    for index in range(state.drawn, len(stack)):
        tile = stack[index]
        if _fits_somewhere(state, tile, square, code):
            events.append(TileDrawn(seat, LETTERS[tile]))
            return events
        events.append(TileDiscarded(seat, LETTERS[tile]))
    return events + _game_over(state, [*pending, *events])


def _clone(state: CarcassonneState) -> CarcassonneState:
    """A copy that evolving leaves ``state`` untouched (every mutable part copied)."""
    return msgspec.structs.replace(
        state,
        stack=list(state.stack),
        scores=list(state.scores),
        supply=list(state.supply),
        winners=list(state.winners),
        board=dict(state.board),
        codes=list(state.codes),
        squares=list(state.squares),
        open=dict(state.open),
        links={square: list(links) for square, links in state.links.items()},
        parent=list(state.parent),
        members=_copy_lists(state.members),
        open_ends=list(state.open_ends),
        holders=_copy_lists(state.holders),
        cloisters=dict(state.cloisters),
        messengers=None if state.messengers is None else messengers.copy_state(state.messengers),
    )


def _copy_lists(lists: list[list[int] | None]) -> list[list[int] | None]:
    """A copy whose inner lists are copies too (an empty one, never stored, is shared)."""
    copied = list(lists)
    for index in compress(range(len(copied)), copied):
        copied[index] = copied[index][:]  # type: ignore[index]
    return copied


def _game_over(state: CarcassonneState, pending: list[Any]) -> list[Any]:
    """Final scoring, computed on a scratch copy with the ``pending`` events applied; with
    The Messengers each player's figures are summed first."""
    scratch = _clone(state)
    for event in pending:
        scratch = evolve(scratch, event)
    events: list[Any] = []
    if scratch.messengers is not None:
        summed = FiguresSummed(list(scratch.scores))
        scratch = evolve(scratch, summed)
        events.append(summed)
    finals = _final_scoring(scratch)
    for event in finals:
        scratch = evolve(scratch, event)
    events += finals
    best = max(scratch.scores)
    winners = [seat for seat, score in enumerate(scratch.scores) if score == best]
    events.append(GameOver(list(scratch.scores), winners))
    return events


def _final_scoring(state: CarcassonneState) -> list[FeatureScored]:
    """Every feature still holding followers: unfinished roads, cities and cloisters, farms."""
    events = []
    codes = state.codes
    holders = state.holders
    for root in compress(range(len(holders)), holders):
        kind = SEG_KIND[codes[root >> 3] >> 2][root & 7]
        points = _unfinished_points(state, root, kind)
        events.append(_score(state, kind, points, list(holders[root]), -1, True))  # type: ignore[arg-type]
    return events


def _unfinished_points(state: CarcassonneState, root: int, kind: int) -> int:
    """A feature's points as at final scoring (also what messages 1-3 and 8 score)."""
    if kind == CLOISTER:
        return 1 + _neighbours(state.board, state.squares[root >> 3])
    if kind == FIELD:
        return FARM_POINTS_PER_CITY * len(_completed_cities(state, root))
    return _feature_points(state, kind, state.members[root] or [root], False)


def _completed_cities(state: CarcassonneState, field_root: int) -> set[int]:
    """Roots of the completed cities a farm touches (each city once)."""
    parent = state.parent
    codes = state.codes
    open_ends = state.open_ends
    cities = set()
    for node in state.members[field_root] or (field_root,):
        tile_base = node & ~7
        for city in SEG_CITIES[codes[node >> 3] >> 2][node & 7]:
            root = parent[tile_base + city]
            if not open_ends[root]:
                cities.add(root)
    return cities


# ---------------------------------------------------------------------------- views


def view(state: CarcassonneState, seat: int | None) -> CarcassonneView:
    """The same for every seat and spectators: nothing in Carcassonne is private but the
    order of the stacks (land tiles, messages), which no view shows."""
    board = []
    for code, square in zip(state.codes, state.squares, strict=True):
        x, y = _xy(square)
        board.append(PlacedTile(LETTERS[code >> 2], x, y, code & 3))
    return CarcassonneView(
        seats=state.seats,
        to_move=to_move(state),
        tile=None if state.tile < 0 else LETTERS[state.tile],
        tiles_left=len(state.stack) - state.drawn,
        scores=list(state.scores),
        supply=list(state.supply),
        board=board,
        followers=_followers_on_board(state),
        finished=state.finished,
        winners=list(state.winners),
        messengers=None if state.messengers is None else _messengers_view(state),
    )


def _messengers_view(state: CarcassonneState) -> MessengersView:
    expansion = _expansion(state)
    if state.finished:
        phase = "finished"
    elif expansion.pending:
        phase = "choose_figure"
    elif expansion.message:
        phase = "resolve_message"
    else:
        phase = "place_tile"
    return messengers.message_view(expansion, state.seats, phase)


def _followers_on_board(state: CarcassonneState) -> list[Follower]:
    followers = []
    for held in filter(None, state.holders):
        for holder in held:
            node = holder >> 3
            x, y = _xy(state.squares[node >> 3])
            kind = SEG_KIND[state.codes[node >> 3] >> 2][node & 7]
            followers.append(Follower(holder & 7, x, y, node & 7, KIND_NAMES[kind]))
    followers.sort(key=lambda follower: (follower.x, follower.y, follower.spot))
    return followers


def redact(event: Any, seat: int | None) -> Any:
    """Only the setup events hide something: the order of the stacks. A drawn message is
    public."""
    if type(event) is StackShuffled:
        return StackShuffled(event.seats, event.start_tile, None, event.stack_size)
    if type(event) is MessagesShuffled:
        return msgspec.structs.replace(event, order=None)
    return event


def result(state: CarcassonneState) -> Outcome | None:
    if not state.finished:
        return None
    return Outcome(list(state.scores), list(state.winners))


REFUSALS = {
    "bad_square": (
        "The tile's square is taken or touches no placed tile: place it on an empty square next "
        "to the board."
    ),
    "bad_rotation": "The rotation is not 0, 1, 2 or 3 clockwise quarter turns: give one of those.",
    "edges_do_not_match": (
        "An edge of the turned tile does not match the neighbouring tile's edge: turn the tile "
        "or choose another square."
    ),
    "bad_spot": (
        "The follower's feature is not one of the tile's: give an index into the tile's feature "
        "list, or no follower."
    ),
    "no_followers": "All your followers are on the board: place the tile without a follower.",
    "feature_occupied": (
        "The feature the follower would stand on, over all its tiles, already holds a follower: "
        "choose another feature or no follower."
    ),
    "bad_seat": (
        "With The Messengers, the acting seat is not a seat of the match: act as one of its seats."
    ),
    "wrong_phase": (
        "With The Messengers, the action does not fit this step of the turn: first choose a "
        "figure for each pending scoring, then resolve the drawn message, else place the tile."
    ),
    "bad_figure": (
        "The figure is not 0 (scoring figure) or 1 (messenger), or message 4, which gives a "
        "turn and no points, names a figure or follower: name 0 or 1, or none for message 4."
    ),
    "preference_unchanged": (
        "The scoring preference sent is already yours: send one only to change it."
    ),
    "cannot_carry_out": (
        "The drawn message cannot be done now (no follower of yours it could score, or no tile "
        "left for message 4's extra turn): take its points instead (TakeMessagePoints)."
    ),
    "bad_follower": (
        "Message 8 names no follower of yours on the board, or another message names one: name "
        "one of your followers for message 8 only."
    ),
}
"""When the rules of Carcassonne refuse a move, beyond ``COMMON_REFUSALS`` (see
``Game.refusals``)."""


GAME = Game(
    name="carcassonne",
    title="Carcassonne",
    min_players=2,
    max_players=messengers.SIX_PLAYERS,
    options=(
        OptionSpec(
            name="tile_order",
            type="list[str]",
            default=None,
            description=(
                "Replay a known game: the start tile, then the stack in draw order, as tile "
                "letters A-X (no more of each than the box holds). Default: the 72 base tiles, "
                "start tile D, the rest shuffled."
            ),
            secret=True,
        ),
        OptionSpec(
            name="messengers",
            type="bool",
            default=False,
            description=(
                "Play with the mini expansion The Messengers: two scoring figures per player, "
                "8 messages drawn on dark spaces of the scoring track; allows a 6th player."
            ),
        ),
        OptionSpec(
            name="messengers_edition",
            type="enum",
            default="C3",
            choices=list(messengers.EDITIONS),
            description=(
                "Edition of The Messengers (needs messengers). The HiG rules are the same in "
                "both; only C2 admits zmg_alone_rule, the ZMG translation's extra condition."
            ),
        ),
        OptionSpec(
            name="zmg_alone_rule",
            type="bool",
            default=False,
            description=(
                "C2 only, the ZMG rules' reading: draw a message only if your figure stands "
                "alone on its dark space (no other player's figure on that space)."
            ),
        ),
        OptionSpec(
            name="message_order",
            type="list[int]",
            default=None,
            description=(
                "Replay a known game: the message stack top first, each of the messages 1-8 "
                "once (needs messengers). Default: shuffled."
            ),
            secret=True,
        ),
    ),
    action_type=Action,
    event_type=Event,
    redacted_event_type=Event,
    state_type=CarcassonneState,
    view_type=CarcassonneView,
    setup=setup,
    decide=decide,
    evolve=evolve,
    legal_actions=legal_actions,
    to_move=to_move,
    view=view,
    redact=redact,
    result=result,
    refusals=REFUSALS,
    validate_options=validate_options,
    description=(
        "Base game, 2nd edition: 72 land tiles, 7 followers each, roads, cities, cloisters and "
        "farms. One action per turn: place the drawn tile, optionally with a follower. With "
        "The Messengers, choose a figure for each of your scorings and resolve the messages "
        "you draw."
    ),
    sample_tables=((2, {"tile_order": ["C", "U", "E", "E"]}),),  # U fits nowhere beside C
)
