"""Carcassonne heuristic bot: a greedy one-move scorer over the seat's view.

Each call rebuilds a light board model from the view (tiles with rotations, features joined
through their ports in a union-find, open ends, followers, farms' cities) using the tile data
the game publishes (``services.rules.games.carcassonne.public``); the stack is hidden, but what
is left of it is the box less the placed tiles and the drawn one, so the bot knows how many
remaining tiles fit each empty square.

Every legal placement ``(x, y, rotation)`` is evaluated once, then each follower choice on it:
the value is the change, over the features the tile touches, of an *expected* worth

- road / city: ``p * complete + (1 - p) * unfinished`` points to the seats with the majority,
  where ``p`` is the estimated chance that the feature completes: per empty square it needs, the
  chance that one of the remaining tiles fits there within its share of the draws left (the
  squares share them; 0 for a hole no remaining tile fits, and when fewer tiles are left than
  it needs squares), multiplied over its squares; completed now means its points now (with
  Inns & Cathedrals, a road with an inn or a city with a cathedral: 2 or 3 completed, nothing
  unfinished);
- cloister: 1 + neighbours + the expected neighbours to come; farm: 3 per completed city it
  touches, 4 with the pig of a seat with the majority (an unfinished one counts its ``p``,
  discounted);

counted plus for this seat and minus for the others (so joining an opponent's feature to give
them points is a loss, sharing one in a two-player game is neutral), less a cost for each of
this seat's followers that the feature ties up (``follower_worth`` per follower, scaled by how
many turns are left against how many followers remain, times the chance it never comes back).

With Inns & Cathedrals and Traders & Builders every piece a placement may carry is valued
(``carcassonne_pieces``): the large follower counts two followers and is used where a feature's
expected points outweigh keeping it, the builder where a second tile is likely, the pig where
the bot holds a farm with cities; a completed city's goods count for the seat completing it.

With The Messengers: ``ChooseFigure`` picks the figure(s) that make a moved figure stop on a
dark space (a multiple of 5, so a message is drawn), else the one behind; a message is carried
out when that is worth at least the 2 points of ``TakeMessagePoints`` (message 4, an extra turn,
always; message 8 scores a farm with our pig at 4 per city, as the engine does);
``SetScoringPreference`` is never sent, since points outside one's turn draw nothing.

The board model is ``carcassonne_board`` (its features ``carcassonne_feature``), the figures
on the scoring track ``carcassonne_track``.
"""

from __future__ import annotations

import random

from services.bots.policies.carcassonne_board import (
    AROUND,
    MESSAGE_WORTH,
    Action,
    Board,
    View,
    square_of,
)
from services.bots.policies.carcassonne_feature import feature_points
from services.bots.policies.carcassonne_pieces import FOLLOWER, farm_points
from services.bots.policies.carcassonne_track import best_assignment, points_figure
from services.rules.games.carcassonne.public import (
    CITY,
    CLOISTER,
    FIELD,
    ROAD,
    TILE_INDEX,
)


def _place(view: View, placements: list[Action], me: int, rng: random.Random) -> Action:
    board = Board(view, me)
    expansion = view.get("messengers")
    if expansion:
        board.messengers = list(expansion["figures"][me])
    tile = TILE_INDEX[view["tile"]]
    by_square: dict[tuple[int, int, int], list[Action]] = {}
    for action in placements:
        by_square.setdefault((action["x"], action["y"], action["rotation"]), []).append(action)
    best: Action = placements[0]
    best_value = float("-inf")
    for (x, y, rotation), group in by_square.items():
        choices: dict[int, tuple[str, ...]] = {}
        for action in group:
            spot = action["follower"]
            if spot is not None:
                choices[spot] = (*choices.get(spot, ()), _piece(action))
        values = board.evaluate(square_of(x, y), (tile << 2) + rotation, choices)
        for action in group:
            value = values[action["follower"], _piece(action)] + rng.random() * 1e-6
            if value > best_value:
                best, best_value = action, value
    return best


def _piece(action: Action) -> str:
    return action.get("piece") or FOLLOWER


def _choose_figure(view: View, choices: list[Action], me: int) -> Action:
    expansion = view["messengers"]
    figures = list(expansion["figures"][me])
    points = [pending["points"] for pending in expansion["pending"]]
    if not points:
        return choices[0]
    _dark, assignment = best_assignment(figures, points)
    wanted = assignment[0]
    for action in choices:
        if action["figure"] == wanted:
            return action
    return choices[0]


def _resolve_message(view: View, actions: list[Action], me: int) -> Action:
    expansion = view["messengers"]
    figures = list(expansion["figures"][me])
    number = expansion["message"]
    carry = [action for action in actions if action["type"] == "CarryOutMessage"]
    take = [action for action in actions if action["type"] == "TakeMessagePoints"]
    instead = 2.0
    best: Action | None = None
    best_worth = float("-inf")
    if carry:
        if number == 4:
            return carry[0]
        board = Board(view, me)
        for action in carry:
            worth, points = _message_worth(board, number, action)
            if action.get("figure") is not None:
                if action["figure"] != points_figure(figures, points):
                    worth -= 0.01
                elif points and (figures[action["figure"]] + points) % 5 == 0:
                    worth += MESSAGE_WORTH
            if worth > best_worth:
                best, best_worth = action, worth
    if take:
        figure = points_figure(figures, 2)
        taken = next((action for action in take if action["figure"] == figure), take[0])
        bonus = MESSAGE_WORTH if (figures[taken["figure"]] + 2) % 5 == 0 else 0.0
        if best is None or best_worth < instead + bonus:
            return taken
    return best if best is not None else actions[0]


def _message_worth(board: Board, number: int, action: Action) -> tuple[float, int]:
    """What carrying out message ``number`` as ``action`` is worth, and its points."""
    feats = board.feats
    mine = board.mine
    if number in (1, 2, 3):
        kind = (ROAD, CITY, CLOISTER)[number - 1]
        options = [_final_points(board, top) for top, follower in mine if feats[top].kind == kind]
        points = min(options) if options else 0
        return float(points), points
    if number == 5:
        cities = {top for top, _follower in mine if feats[top].kind == CITY}
        points = 2 * sum(feats[top].pennants for top in cities)
        return float(points), points
    if number == 6:
        points = 2 * sum(1 for top, _follower in mine if feats[top].kind == CITY)
        return float(points), points
    if number == 7:
        points = 2 * sum(1 for top, _follower in mine if feats[top].kind == FIELD)
        return float(points), points
    if number == 8:
        spot = action.get("follower")
        for top, follower in mine:
            if spot and (follower["x"], follower["y"], follower["spot"]) == (
                spot["x"],
                spot["y"],
                spot["spot"],
            ):
                feature = feats[top]
                owners = feature.owners
                points = _final_points(board, top) if owners[board.me] == max(owners) else 0
                keep = board.before.get(top, 0.0)
                # the follower comes home and the feature leaves our hands (if it was our
                # only follower there)
                if owners[board.me] - feature.large == 1:
                    left = list(owners)
                    left[board.me] = 0
                    lost = keep - _without(board, top, left)
                else:
                    lost = 0.0
                return points - lost + board.follower_worth * 0.5, points
        return 0.0, 0
    return 0.0, 0


def _without(board: Board, top: int, owners: list[int]) -> float:
    """A feature's current worth with other owners."""
    feature = board.feats[top]
    saved, large = feature.owners, feature.large
    feature.owners = owners
    feature.large = large if owners[board.me] else 0
    try:
        return board._current_value(top, feature)
    finally:
        feature.owners, feature.large = saved, large


def _final_points(board: Board, top: int) -> int:
    """A feature's points for this seat as at final scoring (a road with an inn, a city with a
    cathedral: nothing; a farm with this seat's pig: 4 per completed city)."""
    feature = board.feats[top]
    kind = feature.kind
    if kind in (ROAD, CITY):
        return feature_points(kind, len(feature.tiles), feature.pennants, feature.special)[0]
    if kind == CLOISTER:
        square = board.order[top >> 3][0]
        return 1 + sum(1 for step in AROUND if square + step in board.codes)
    cities = sum(1 for town in feature.links if not board.feats[town].ends)
    return farm_points(cities, board.me in feature.pigs)


def heuristic(view: View, actions: list[Action], rng: random.Random) -> Action:
    """The greedy scorer's choice among ``actions`` for the seat to move in ``view``."""
    if not actions:
        raise ValueError("no legal action to choose from")
    me = view["to_move"][0] if view.get("to_move") else 0
    placements = [action for action in actions if action["type"] == "PlaceTile"]
    if placements:
        return _place(view, placements, me, rng)
    choices = [action for action in actions if action["type"] == "ChooseFigure"]
    if choices:
        return _choose_figure(view, choices, me)
    messages = [
        action for action in actions if action["type"] in ("CarryOutMessage", "TakeMessagePoints")
    ]
    if messages:
        return _resolve_message(view, messages, me)
    return actions[0]
