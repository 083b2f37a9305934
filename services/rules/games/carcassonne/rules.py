"""Carcassonne's rules of play: the legal actions, who moves, and ``decide``."""

from __future__ import annotations

from typing import Any

from services.rules.games.carcassonne import messengers
from services.rules.games.carcassonne.evolve import extends_builder, messengers_of
from services.rules.games.carcassonne.expansions import (
    FOLLOWER,
    BuilderTurn,
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
from services.rules.games.carcassonne.placements import placements, spot_problem
from services.rules.games.carcassonne.scoring import (
    add_completions,
    draw,
    fits_somewhere,
    own_followers,
    pieces_left_alone,
)
from services.rules.games.carcassonne.state import (
    BOUND,
    ROTATIONS,
    CarcassonneState,
    FeatureScored,
    PlaceTile,
    TileDrawn,
    TilePlaced,
    square_of,
)
from services.rules.games.carcassonne.tiles import (
    FITS,
    LETTERS,
    PICTURES,
    SEG_KIND,
    rotation_in,
)
from services.rules.games.contract import Rejection


def legal_actions(state: CarcassonneState, seat: int) -> list[Any]:
    """Every fitting (square, rotation), each without and with a follower on each free spot;
    with The Messengers, the actions of the turn's phase (``_messenger_actions``)."""
    if state.messengers is not None:
        return _messenger_actions(state, seat)
    if state.finished or seat != state.seat:
        return []
    return placements(state, seat)


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
    return placements(state, seat) + changes


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
        problem = spot_problem(state, seat, piece, square, code, spot)
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
