"""Carcassonne's rules of play: the legal actions, who moves, and ``decide``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from services.rules.games.carcassonne import messengers
from services.rules.games.carcassonne.evolve import extends_builder, messengers_of
from services.rules.games.carcassonne.expansions import (
    BUILDER,
    FOLLOWER,
    IN_SUPPLY,
    LARGE,
    PIG,
    BuilderTurn,
    piece_problem,
)
from services.rules.games.carcassonne.messengers import (
    EXTRA_TURN,
    FIGURES,
    MESSAGES,
    SCORE_FOLLOWER,
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    MessageDrawn,
    MessageResolved,
    MessengersState,
    PreferenceSet,
    SetScoringPreference,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.scoring import (
    add_completions,
    draw,
    fits_somewhere,
    own_followers,
    pieces_left_alone,
)
from services.rules.games.carcassonne.state import (
    BOUND,
    NODE_SLOTS,
    ROTATIONS,
    CarcassonneState,
    FeatureScored,
    PlaceTile,
    TileDrawn,
    TilePlaced,
    square_of,
    xy_of,
)
from services.rules.games.carcassonne.tiles import (
    CITY,
    FIELD,
    FITS,
    LETTERS,
    PICTURES,
    ROAD,
    SEG_KIND,
    SEG_MASK,
    rotation_in,
)
from services.rules.games.contract import Rejection

_NO_FOLLOWER = 1 << 12
"""Flag in a picker key: the player has no follower left."""
_SPOT_CHOICES = NODE_SLOTS + 1
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
        x, y = xy_of(square)
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
    """The placements of the drawn tile, picked out of memoised per-square action lists; with
    Inns & Cathedrals or Traders & Builders also those with their pieces."""
    extras = state.extras
    if extras is None:
        return _tile_actions(state, not state.supply[seat])
    large = extras.inns_cathedrals and extras.large[seat] == IN_SUPPLY
    bare = not state.supply[seat] and not large
    builder = extras.traders_builders and extras.builders[seat] == IN_SUPPLY
    pig = extras.traders_builders and extras.pigs[seat] == IN_SUPPLY
    busy: list[int] | None = [] if (builder or pig) and not bare else None
    actions = _tile_actions(state, bare, busy)
    if large:
        twin = _twins.get
        twins = [
            twin(action) or _large_twin(action) for action in actions if action.follower is not None
        ]
        if not state.supply[seat]:
            actions = [action for action in actions if action.follower is None]
        actions += twins
    if builder or pig:
        squares = list(state.open) if busy is None else busy
        actions += _builder_pig_actions(state, seat, builder, pig, squares)
    return actions


_twins: dict[PlaceTile, PlaceTile] = {}


def _large_twin(action: PlaceTile) -> PlaceTile:
    """The same placement with the large follower (memoised, as actions are immutable)."""
    twin = _twins.get(action)
    if twin is None:
        twin = _twins[action] = PlaceTile(
            action.x, action.y, action.rotation, action.follower, LARGE
        )
    return twin


def _own_ports(state: CarcassonneState, square: int, seat: int) -> int:
    """Ports of an empty square that would join a feature holding a follower of ``seat``."""
    parent = state.parent
    holders = state.holders
    bits = 0
    for port_bits, _port, node in state.links[square]:
        held = holders[parent[node]]
        if held and any(holder & 7 == seat for holder in held):
            bits |= port_bits
    return bits


def _builder_pig_actions(
    state: CarcassonneState, seat: int, builder: bool, pig: bool, squares: list[int]
) -> list[PlaceTile]:
    """Placements with the builder (a road or city of the tile joining one where ``seat``
    has a follower) or the pig (a field joining one where it has a farmer), on ``squares``
    (those next to a feature holding followers, or all)."""
    tile = state.tile
    fits = FITS[tile]
    kinds = SEG_KIND[tile]
    holders = state.holders
    parent = state.parent
    links = state.links
    open_squares = state.open
    actions = []
    for square in squares:
        rotations = fits[open_squares[square]]
        if not rotations:
            continue
        bits = 0
        for port_bits, _port, node in links[square]:
            held = holders[parent[node]]
            if held and any(holder & 7 == seat for holder in held):
                bits |= port_bits
        if not bits:
            continue
        x, y = xy_of(square)
        for rotation in rotations:
            for spot, mask in enumerate(SEG_MASK[(tile << 2) + rotation]):
                if mask & bits:
                    if kinds[spot] == FIELD:
                        if pig:
                            actions.append(PlaceTile(x, y, rotation, spot, PIG))
                    elif builder:
                        actions.append(PlaceTile(x, y, rotation, spot, BUILDER))
    return actions


def _tile_actions(state: CarcassonneState, bare: bool, busy: list[int] | None = None) -> list[Any]:
    """The placements of the drawn tile (``bare``: none with a follower); the squares where
    it fits next to a feature holding followers go to ``busy`` (unless ``bare``)."""
    tile = state.tile
    actions: list[PlaceTile] = []
    square_actions = _square_actions
    if bare:
        bare_pickers = _BARE_PICKERS[tile]
        for square, key in state.open.items():
            picker = bare_pickers[key]
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
            if busy is not None:
                busy.append(square)
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
    expansion = messengers_of(state)
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
    message = MESSAGES[messengers_of(state).message]
    actions: list[Any] = list(_MESSAGE_POINTS)
    followers = own_followers(state, seat)
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
    events, square, code, earned = placed
    return _end_turn(state, seat, events, square, code, earned)


def _placement(
    state: CarcassonneState, seat: int, action: PlaceTile
) -> tuple[list[Any], int, int, bool] | Rejection:
    """The checked placement: ``TilePlaced`` and the scorings it causes, with the tile's
    square and code (the state does not hold them yet) and whether it earns a builder
    turn."""
    x, y, rotation, spot = action.x, action.y, action.rotation, action.follower
    piece = action.piece
    square = ((x + 128) << 8) | (y + 128)
    key = state.open.get(square) if -BOUND <= x <= BOUND and -BOUND <= y <= BOUND else None
    if key is None:
        return Rejection("bad_square", f"({x}, {y}) is not an empty square next to the board")
    tile = state.tile
    if rotation not in FITS[tile][key]:
        if rotation not in ROTATIONS:
            return Rejection("bad_rotation", "rotation is 0, 1, 2 or 3 clockwise quarter turns")
        return Rejection("edges_do_not_match", "every touching edge must match its neighbour")
    code = (tile << 2) + rotation
    if spot is not None:
        if not 0 <= spot < len(SEG_KIND[tile]):
            return Rejection("bad_spot", f"tile {LETTERS[tile]} has no feature {spot}")
        problem = _spot_problem(state, seat, piece, square, code, spot)
        if problem is not None:
            return problem
    elif piece != FOLLOWER:
        return Rejection("bad_piece", f"say on which feature the {piece} stands")
    if state.pictures != PICTURES:  # a match begun before the pictures changed keeps its own
        rotation = rotation_in(tile, rotation, state.pictures)
    events: list[Any] = [TilePlaced(seat, LETTERS[tile], x, y, rotation, spot, piece)]
    earned = state.extras is not None and extends_builder(state, seat, square)
    add_completions(events, state, seat, square, code, spot, piece)
    return events, square, code, earned


def _spot_problem(
    state: CarcassonneState, seat: int, piece: str, square: int, code: int, spot: int
) -> Rejection | None:
    """Why ``piece`` may not stand on feature ``spot`` of the tile ``code`` on ``square``."""
    problem = piece_problem(state.extras, seat, piece)
    if problem is not None:
        return problem
    mask = SEG_MASK[code][spot]
    if piece == FOLLOWER or piece == LARGE:
        if piece == FOLLOWER and not state.supply[seat]:
            return Rejection("no_followers", "all your followers are on the board")
        if mask & _occupied_ports(state, square):
            return Rejection("feature_occupied", "that feature already holds a follower")
        return None
    kind = SEG_KIND[code >> 2][spot]
    if (kind == FIELD) != (piece == PIG) or kind not in (CITY, ROAD, FIELD):
        where = "a field" if piece == PIG else "a road or city"
        return Rejection("bad_spot", f"the {piece} stands on {where}")
    if not mask & _own_ports(state, square, seat):
        return Rejection(
            "no_own_follower", f"the {piece} joins a feature holding a follower of yours"
        )
    return None


def _end_turn(
    state: CarcassonneState,
    seat: int,
    events: list[Any],
    square: int = -1,
    code: int = 0,
    earned: bool = False,
) -> list[Any]:
    """``events`` followed by the next seat's draw (or the end of the match); ``code`` on
    ``square`` is a placement among ``events`` that the state does not hold yet (``earned``:
    it earned a builder turn). A seat owed a builder turn draws again instead."""
    extras = state.extras
    if extras is not None and (extras.owed or earned) and state.drawn < len(state.stack):
        events.append(BuilderTurn(seat))
        events += draw(state, seat, events, square, code)
        return events
    following = (seat + 1) % state.seats
    drawn = state.drawn
    stack = state.stack
    if drawn < len(stack) and fits_somewhere(state, stack[drawn], square, code):
        events.append(TileDrawn(following, LETTERS[stack[drawn]]))
    else:
        events += draw(state, following, events, square, code)
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
    expansion = messengers_of(state)
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
    events, square, code, earned = placed
    routed = [events[0]]
    figures = list(expansion.figures)
    preferences = expansion.preferences
    chooses = False
    for scored in events[1:]:
        routed.append(scored)
        if type(scored) is not FeatureScored:
            continue
        for other in scored.seats:
            if other == seat:
                chooses = True
                continue
            figure = messengers.preferred_figure(figures, preferences, other)
            figures[2 * other + figure] += scored.points
            routed.append(FigureAdvanced(other, figure, scored.points))
    if chooses:
        return routed
    return _end_turn(state, seat, routed, square, code, earned)


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
    expansion = messengers_of(state)
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
    expansion = messengers_of(state)
    message = MESSAGES[expansion.message]
    figure = action.figure
    returned = None
    took_points = isinstance(action, TakeMessagePoints)
    if isinstance(action, TakeMessagePoints):
        points = message.instead_points
    else:
        followers = own_followers(state, seat)
        if not messengers.can_carry_out(message, followers, len(state.stack) - state.drawn):
            return Rejection("cannot_carry_out", f"message {message.number} cannot be done now")
        if message.effect == EXTRA_TURN:
            if figure is not None or action.follower is not None:
                return Rejection("bad_figure", "message 4 gives a turn, not points: no figure")
            events: list[Any] = [MessageResolved(seat, message.number, False, 0)]
            return events + draw(state, seat, events)
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
    if returned is not None:
        node = (state.board[square_of(returned.x, returned.y)] << 3) + returned.spot
        events += pieces_left_alone(state, seat, node)
    if points:
        events.append(FigureAdvanced(seat, figure, points))
        figures = list(expansion.figures)
        figures[2 * seat + figure] += points
        if messengers.draws_message(expansion, figures, seat, 1 << figure):
            events.append(MessageDrawn(seat, expansion.stack[0]))
            return events
    return _end_turn(state, seat, events)
