"""Scenario tests for the thin spots of random play: cloisters completed by their last
neighbour, discards in mid-game and at the very end, messages drawn during message 4's extra
turn, message chains.

Boards are built move by move from a fixed ``tile_order`` (and ``message_order``) with the
helpers of ``test_carcassonne_rules`` and ``test_carcassonne_messengers``, which assert every
move is in ``GAME.legal_actions``. Where a board has many tiles, the rotations are searched
among the legal ones (``legal_rotations``) with the edges the scenario needs, read from
``tiles.json`` here, so the tests name what must face where instead of quarter turns.
"""

from __future__ import annotations

import json

import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.messengers import (
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    MessageDrawn,
    MessageResolved,
    Spot,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.state import (
    FeatureScored,
    GameOver,
    PlaceTile,
    TileDiscarded,
    TileDrawn,
    TilePlaced,
)
from services.rules.games.contract import SEEDS_DIR
from tests.unit.services.rules.games.carcassonne.messengers_boards import (
    IN_ORDER,
    act,
    figures,
    of_type,
    put_figures,
)
from tests.unit.services.rules.games.carcassonne.messengers_boards import play as play_actions
from tests.unit.services.rules.games.carcassonne.messengers_boards import start as start_messengers
from tests.unit.services.rules.games.carcassonne.test_rules import play, scorings

# ---------------------------------------------------------------------------- tile edges

SIDES = "NESW"
OPPOSITE = {"N": "S", "E": "W", "S": "N", "W": "E"}
STEP = {"N": (0, 1), "E": (1, 0), "S": (0, -1), "W": (-1, 0)}


def _picture_edges() -> dict[str, tuple[str, ...]]:
    """Per letter, the kind of its N, E, S, W edge in the published picture: the kind of the
    feature owning the side's centre port (README "Ports")."""
    data = json.loads((SEEDS_DIR / "carcassonne" / "tiles.json").read_text(encoding="utf-8"))
    edges = {}
    for tile in data["tiles"]:
        owner = {port: f["kind"] for f in tile["features"] for port in f.get("ports") or ()}
        edges[tile["letter"]] = tuple(owner[side] for side in SIDES)
    return edges


PICTURE_EDGES = _picture_edges()


def edges(letter: str, rotation: int) -> dict[str, str]:
    """The edge kind on each board side once the tile is turned ``rotation`` clockwise
    quarter turns: the picture's side s lands on side s + rotation."""
    return {SIDES[(side + rotation) % 4]: PICTURE_EDGES[letter][side] for side in range(4)}


def legal_rotations(state, x: int, y: int, follower: int | None = None, **faces: str) -> list:
    """The rotations of the drawn tile that ``GAME.legal_actions`` allows at (x, y) with
    ``follower`` and whose edges show the given ``faces`` (e.g. ``S="city"``)."""
    letter = GAME.view(state, None).tile
    legal = GAME.legal_actions(state, GAME.to_move(state)[0])
    return [
        rotation
        for rotation in range(4)
        if PlaceTile(x, y, rotation, follower) in legal
        and all(edges(letter, rotation)[side] == kind for side, kind in faces.items())
    ]


def fits_somewhere(view, letter: str) -> bool:
    """Whether ``letter`` fits any empty square next to the board in some rotation, by the
    placement rule alone (every touching edge of the same kind)."""
    board = {(tile.x, tile.y): edges(tile.tile, tile.rotation) for tile in view.board}
    squares = {(x + dx, y + dy) for x, y in board for dx, dy in STEP.values()} - board.keys()
    for x, y in squares:
        for rotation in range(4):
            mine = edges(letter, rotation)
            touching = [
                (side, board[(x + dx, y + dy)])
                for side, (dx, dy) in STEP.items()
                if (x + dx, y + dy) in board
            ]
            if all(mine[side] == theirs[OPPOSITE[side]] for side, theirs in touching):
                return True
    return False


# ---------------------------------------------------------------------------- 1. cloisters

CLOISTER = (0, -2)
RING = {
    "N": (0, -1),
    "NE": (1, -1),
    "E": (1, -2),
    "SE": (1, -3),
    "S": (0, -3),
    "SW": (-1, -3),
    "W": (-1, -2),
    "NW": (-1, -1),
}
FILLERS = {"N": "B", "NE": "V", "E": "E", "SE": "V", "S": "E", "SW": "V", "W": "E", "NW": "V"}
"""Neighbours whose edges facing the cloister are fields (cities and roads can face out)."""
CONNECTOR = (1, 0)
"""With the square north of the cloister left for last, the ring is reached from the east of
the start tile (its road)."""


def cloister_plan(target: str, letter: str, cells: dict):
    """The tile order and the placements ``(x, y, follower, faces)``: a monk (B, spot 0) at
    ``CLOISTER`` two squares south of the start tile, its neighbours but ``target``, each laid
    next to the board, then ``letter`` on ``target``. ``cells`` overrides a neighbour's
    ``(letter, follower, faces)``; returns the order, the placements and the square names."""
    squares = {name: (FILLERS[name], None, {}) for name in RING}
    squares.update(cells)
    priority = (["connector"] if target == "N" else []) + ["N", "cloister", *list(RING)[1:]]
    where = {**RING, "cloister": CLOISTER, "connector": CONNECTOR}
    spec = {**squares, "cloister": ("B", 0, {}), "connector": ("V", None, {"W": "road"})}
    placed, names = {(0, 0)}, []
    while len(names) < len(priority) - 1:
        for name in priority:
            if name in names or name == target:
                continue
            x, y = where[name]
            if any((x + dx, y + dy) in placed for dx, dy in STEP.values()):
                names.append(name)
                placed.add((x, y))
                break
        else:
            raise AssertionError("no square left next to the board")
    order = ["D", *(spec[name][0] for name in names), letter, "U"]
    placements = [(*where[name], spec[name][1], spec[name][2]) for name in names]
    return order, placements, names


def search_moves(order: list[str], placements: list, target: tuple[int, int]) -> list[PlaceTile]:
    """The first sequence of legal rotations laying every placement in turn (depth first over
    ``legal_rotations``) where nothing scores on the way and the next tile can then be laid on
    ``target``."""

    def extend(moves: list[PlaceTile]) -> list[PlaceTile] | None:
        state, events = play(order, moves)
        assert not scorings(events), "a filler scored"
        if len(moves) == len(placements):
            return moves if legal_rotations(state, *target) else None
        x, y, follower, faces = placements[len(moves)]
        for rotation in legal_rotations(state, x, y, follower, **faces):
            move = PlaceTile(x, y, rotation, follower)
            if scorings(play(order, [*moves, move])[1]):
                continue
            found = extend([*moves, move])
            if found is not None:
                return found
        return None

    found = extend([])
    assert found is not None, "no legal way to lay the neighbours"
    return found


CLOISTER_CASES = [
    # target, its tile, neighbour overrides, other features the 8th tile completes
    pytest.param(
        "N",
        "U",
        {"NW": ("A", 1, {"E": "road"}), "NE": ("W", None, {"W": "road"})},
        [("road", 3, "NW")],  # A's dead end, U, W's junction: 1 per tile
        id="N-road-closes-a-road",
    ),
    pytest.param("NE", "E", {}, [], id="NE-city"),
    pytest.param(
        "E",
        "E",
        {"NE": ("E", 0, {"S": "city"})},
        [("city", 4, "NE")],  # two city tiles, complete: 2 per tile
        id="E-city-closes-a-city",
    ),
    pytest.param("SE", "V", {}, [], id="SE-road"),
    pytest.param(
        "S",
        "W",
        {"SW": ("A", 1, {"E": "road"})},
        [("road", 2, "SW")],
        id="S-road-closes-a-road",
    ),
    pytest.param("SW", "K", {}, [], id="SW-city-and-road"),
    pytest.param(
        "W",
        "D",
        {"NW": ("A", 1, {"S": "road"}), "SW": ("A", None, {"N": "road"})},
        [("road", 3, "NW")],
        id="W-city-and-road-closes-a-road",
    ),
    pytest.param("NW", "J", {}, [], id="NW-city-and-road"),
]


@pytest.mark.parametrize(("target", "letter", "cells", "also"), CLOISTER_CASES)
def test_cloister_scores_9_when_its_eighth_neighbour_is_laid(target, letter, cells, also):
    order, placements, names = cloister_plan(target, letter, cells)
    moves = search_moves(order, placements, RING[target])
    seat_of = {name: index % 2 for index, name in enumerate(names)}
    monk = seat_of["cloister"]
    state, events = play(order, moves)
    # seven neighbours: the cloister has not scored, the monk is still on it
    laid = {(tile.x, tile.y) for tile in GAME.view(state, None).board}
    around = {(CLOISTER[0] + dx, CLOISTER[1] + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)}
    assert around - laid == {RING[target]} and CLOISTER in laid
    assert scorings(events) == []
    followers = GAME.view(state, None).followers
    assert (monk, *CLOISTER, 0, "cloister") in [
        (f.seat, f.x, f.y, f.spot, f.feature) for f in followers
    ]
    assert GAME.view(state, None).tile == letter
    seat = GAME.to_move(state)[0]
    rotations = legal_rotations(state, *RING[target])
    assert rotations, f"{letter} fits nowhere at {target}"
    expected = sorted(
        [("cloister", 9, [monk]), *((kind, points, [seat_of[who]]) for kind, points, who in also)]
    )
    for rotation in rotations:  # however the 8th neighbour is turned
        move = PlaceTile(*RING[target], rotation, None)
        assert move in GAME.legal_actions(state, seat)
        placed = GAME.decide(state, seat, move)
        assert isinstance(placed[0], TilePlaced) and placed[-1] == TileDrawn(1 - seat, "U")
        assert sorted(scorings(placed)) == expected, rotation
        after, _ = play(order, [*moves, move])
        assert after.supply == [7, 7] and after.cloisters == {}
        gained = [0, 0]
        for _, points, seats in expected:
            for scorer in seats:
                gained[scorer] += points
        assert after.scores == gained


def test_one_tile_completes_two_cloisters_at_once():
    """Two monks side by side (B at (0, -2) and (1, -2), both of seat 1): the tile on
    (0, -3), the last square neighbouring either, completes both in the same move."""
    squares = [
        (0, -1),  # N of the west cloister
        (0, -2),  # west cloister (seat 1)
        (1, -1),
        (1, -2),  # east cloister (seat 1)
        (2, -1),
        (2, -2),
        (2, -3),
        (1, -3),
        (-1, -1),
        (-1, -2),
        (-1, -3),
    ]
    letters = ["B", "B", "E", "B", "V", "E", "V", "E", "V", "E", "V"]
    followers = {(0, -2): 0, (1, -2): 0}
    placements = [(x, y, followers.get((x, y)), {}) for x, y in squares]
    order = ["D", *letters, "E", "U"]
    moves = search_moves(order, placements, (0, -3))
    state, events = play(order, moves)
    assert scorings(events) == [] and state.supply == [7, 5]
    seat = GAME.to_move(state)[0]
    rotations = legal_rotations(state, 0, -3)
    assert rotations
    for rotation in rotations:
        placed = GAME.decide(state, seat, PlaceTile(0, -3, rotation, None))
        assert scorings(placed) == [("cloister", 9, [1]), ("cloister", 9, [1])]


# ---------------------------------------------------------------------------- 2. discards

WALLED = ["C", "R", "R", "N"]
"""A 2x2 block round the all-city start tile C whose outer edges are all city: afterwards
every empty square next to the board touches a city edge, so no tile without a city (A, B,
U, V, W, X) fits anywhere."""
WALLED_MOVES = [
    PlaceTile(1, 0, 0, 0),  # R east of C: city N, E, W (joins C), field S; knight (seat 0)
    PlaceTile(0, -1, 3, 1),  # R south of C: city N (joins C), S, W, field E; farmer (seat 1)
    PlaceTile(1, -1, 1, 0),  # N: its own city east and south, fields to the block; knight (0)
]


def test_discards_in_a_row_mid_game_and_as_the_last_tiles_before_final_scoring():
    order = [*WALLED, "U", "V", "Q", "X", "W"]
    state, events = play(order, WALLED_MOVES)
    view = GAME.view(state, None)
    assert not fits_somewhere(view, "U") and not fits_somewhere(view, "V")
    assert fits_somewhere(view, "Q")
    # seat 0's N is followed by two discards for seat 1, which then draws Q and plays on
    assert events[-4:] == [
        TilePlaced(0, "N", 1, -1, 1, 0),
        TileDiscarded(1, "U"),
        TileDiscarded(1, "V"),
        TileDrawn(1, "Q"),
    ]
    assert GAME.to_move(state) == [1] and view.tile == "Q" and view.tiles_left == 2
    assert state.supply == [5, 6] and scorings(events) == []
    # Q west of C keeps every open square touching a city: X and W, the last two, fit nowhere
    last = PlaceTile(-1, 0, 0, None)  # Q: city N, E (joins C), W; field S
    state, events = play(order, [*WALLED_MOVES, last])
    assert not fits_somewhere(GAME.view(state, None), "X")
    assert not fits_somewhere(GAME.view(state, None), "W")
    placed = events.index(TilePlaced(1, "Q", -1, 0, 0, None))
    tail = events[placed + 1 :]
    assert tail[:2] == [TileDiscarded(0, "X"), TileDiscarded(0, "W")]
    finals = tail[2:-1]
    assert all(isinstance(event, FeatureScored) and event.final for event in finals)
    # the final scoring comes after the discards and scores what is on the board: the city of
    # C, R, R, Q (4 tiles + the pennants of C and Q), N's own city (1 tile), and the farm
    # inside the block, which touches no completed city
    assert sorted(
        (e.feature, e.points, e.seats, [(f.seat, f.x, f.y, f.spot) for f in e.followers])
        for e in finals
    ) == [
        ("city", 1, [0], [(0, 1, -1, 0)]),
        ("city", 4 + 2, [0], [(0, 1, 0, 0)]),
        ("field", 0, [1], [(1, 0, -1, 1)]),
    ]
    assert tail[-1] == GameOver(scores=[7, 0], winners=[0])
    assert state.finished and GAME.result(state).scores == [7, 0]
    assert state.supply == [5, 6], "followers stay on the board in the final scoring"


# ---------------------------------------------------------------------------- 3. message 4


def messengers_board(messages: list[int], monk_neighbours: int = 5):
    """Seat 0 has a farmer north of the start road, a thief on that road (3 tiles, open at
    both ends), a monk on B south of the start tile with ``monk_neighbours`` (5 or 4)
    neighbours and a knight on M, a one-tile city with a pennant, open. Seat 1 has laid E at
    (-1, 1), a one-tile city open to the north, without a follower. Seat 0 is to move with
    the E of ``CLOSE_START_CITY``; the next tiles are E (``CLOSE_WEST_CITY``) and U."""
    sixth = "V" if monk_neighbours == 5 else "U"
    order = ["D", "U", "V", "U", "E", "B", sixth, "M", "V", "E", "E", "U"]
    moves = [
        PlaceTile(1, 0, 1, 2),  # U: the start road goes east; farmer north of it (seat 0)
        PlaceTile(1, -1, 3, None),  # V: road east-south, fields to the west and north
        PlaceTile(-1, 0, 1, 0),  # U: the start road goes west; thief (seat 0)
        PlaceTile(-1, 1, 0, None),  # E: a city facing north, open (seat 1)
        PlaceTile(0, -1, 0, 0),  # B: monk (seat 0); neighbours so far: 3 U/D/U and the V
        # V south-west of the monk (its 5th neighbour), or U west of seat 1's E (no neighbour)
        PlaceTile(-1, -1, 0, None) if monk_neighbours == 5 else PlaceTile(-2, 1, 0, None),
        PlaceTile(1, 1, 0, 0),  # M: city north and east with a pennant; knight (seat 0)
        PlaceTile(2, -1, 0, None),  # V, away from everything seat 0 holds
    ]
    state, _ = play_actions(start_messengers(order, messages), *moves)
    assert GAME.to_move(state) == [0] and GAME.view(state, None).tile == "E"
    assert state.supply == [3, 7]
    return state


CLOSE_START_CITY = PlaceTile(0, 1, 2, 0)
"""E on the start city (2 tiles, 4 points) with a knight of seat 0, which comes home."""
CLOSE_WEST_CITY = PlaceTile(-1, 2, 2, 0)
"""E on seat 1's open city at (-1, 1) (2 tiles, 4 points) with a knight of seat 0."""
FARMER = Spot(1, 0, 2)

EXTRA_TURN_MESSAGES = {
    # message: (points carried out, follower named), read from the board after the extra turn
    1: (3, None),  # the thief's road: 3 tiles, open, 1 each
    2: (2, None),  # M: 1 tile + 1 pennant, open
    3: (1 + 5, None),  # the monk: 1 + 5 neighbours
    5: (2 * 1, None),  # M's one pennant
    6: (2 * 1, None),  # one knight (the two that closed cities came home)
    7: (2 * 1, None),  # one farmer
    8: (3 * 2, FARMER),  # the farm: start city and west city, both complete; M's is open
}


def scored(events) -> list[tuple[str, int, list[int]]]:
    return [(e.feature, e.points, e.seats) for e in of_type(events, FeatureScored)]


def into_extra_turn(messages: list[int]):
    """Seat 0 closes the start city (figure 0: 1 -> 5), draws message 4, carries it out and
    in the extra turn closes the west city (figure 1: 1 -> 5), drawing the next message."""
    state = messengers_board(messages)
    put_figures(state, 0, 1, 1)
    state, events = act(state, CLOSE_START_CITY)
    assert scored(events) == [("city", 4, [0])]
    state, events = act(state, ChooseFigure(0))
    assert events == [FigureAdvanced(0, 0, 4), MessageDrawn(0, 4)]
    state, events = act(state, CarryOutMessage())
    assert events == [MessageResolved(0, 4, False, 0), TileDrawn(0, "E")]
    assert GAME.to_move(state) == [0] and state.messengers.held == 4
    assert 4 not in state.messengers.stack
    state, events = act(state, CLOSE_WEST_CITY)
    assert scored(events) == [("city", 4, [0])] and state.supply[0] == 3
    state, events = act(state, ChooseFigure(1))
    assert events == [FigureAdvanced(0, 1, 4), MessageDrawn(0, messages[1])]
    assert figures(state, 0) == [5, 5] and state.messengers.held == 4
    return state


@pytest.mark.parametrize("message", sorted(EXTRA_TURN_MESSAGES))
def test_each_message_drawn_in_message_4s_extra_turn_then_4_goes_under_it(message):
    rest = [m for m in IN_ORDER if m not in (4, message)]
    state = into_extra_turn([4, message, *rest])
    assert state.messengers.stack == rest
    points, follower = EXTRA_TURN_MESSAGES[message]
    action = CarryOutMessage(0, follower)
    assert action in GAME.legal_actions(state, 0)
    supply = state.supply[0]
    events = GAME.decide(state, 0, action)
    # resolved; 5 + points is no dark space, so no further message; then seat 1 draws
    assert events == [
        MessageResolved(0, message, False, points, follower),
        FigureAdvanced(0, 0, points),
        TileDrawn(1, "U"),
    ]
    during = GAME.fold(events[:-1], state)
    assert during.messengers.stack == [*rest, message] and during.messengers.held == 4
    assert figures(during, 0) == [5 + points, 5]
    assert during.supply[0] == supply + (follower is not None), "only message 8 returns one"
    after = GAME.fold(events[-1:], during)
    assert after.messengers.stack == [*rest, message, 4] and after.messengers.held == 0
    assert GAME.to_move(after) == [1] and GAME.view(after, None).messengers.phase == "place_tile"
    assert after.scores == [1 + 1 + 4 + 4 + points, 0]


def test_message_4_is_never_drawn_during_its_own_extra_turn():
    """A chain in the extra turn draws every other message (each 2 points landing on a dark
    space, the figure put 2 short of one first); the next draw is the first of them again,
    not message 4, which is out of the stack until the extra turn is over."""
    others = [1, 2, 3, 5, 6, 7, 8]
    state = into_extra_turn([4, *others])
    drawn = [1]
    for _ in others:
        put_figures(state, 0, 3, 5)
        state, events = act(state, TakeMessagePoints(0))
        assert events[:2] == [MessageResolved(0, drawn[-1], True, 2), FigureAdvanced(0, 0, 2)]
        [next_draw] = of_type(events, MessageDrawn)
        drawn.append(next_draw.message)
        assert state.messengers.held == 4 and 4 not in state.messengers.stack
    assert drawn == [*others, 1]
    state, events = act(state, TakeMessagePoints(1))  # messenger 5 -> 7: the chain ends
    assert events == [MessageResolved(0, 1, True, 2), FigureAdvanced(0, 1, 2), TileDrawn(1, "U")]
    assert state.messengers.stack == [2, 3, 5, 6, 7, 8, 1, 4]


def test_message_4_taken_as_points_gives_no_extra_turn():
    state = messengers_board([4, *[m for m in IN_ORDER if m != 4]])
    put_figures(state, 0, 1, 1)
    state, _ = act(state, CLOSE_START_CITY)
    state, _ = act(state, ChooseFigure(0))
    state, events = act(state, TakeMessagePoints(1))
    assert events == [MessageResolved(0, 4, True, 2), FigureAdvanced(0, 1, 2), TileDrawn(1, "E")]
    assert state.messengers.stack[-1] == 4 and state.messengers.held == 0


# ---------------------------------------------------------------------------- 4. chains


def test_chain_of_three_messages_ends_when_points_miss_a_dark_space():
    """Closing the start city takes figure 0 from 1 to 5: message 3 (the monk: 1 + 4
    neighbours) takes it to 10: message 1, taken as 2 points on the messenger (3 -> 5):
    message 2 (M: 1 tile + 1 pennant) takes the messenger to 7, no dark space: the end."""
    state = messengers_board([3, 1, 2, 4, 5, 6, 7, 8], monk_neighbours=4)
    put_figures(state, 0, 1, 3)
    state, _ = act(state, CLOSE_START_CITY)
    state, events = act(state, ChooseFigure(0))
    chain = list(events)
    for action in (CarryOutMessage(0), TakeMessagePoints(1), CarryOutMessage(1)):
        state, events = act(state, action)
        chain += events
    assert chain == [
        FigureAdvanced(0, 0, 4),
        MessageDrawn(0, 3),
        MessageResolved(0, 3, False, 5),
        FigureAdvanced(0, 0, 5),
        MessageDrawn(0, 1),
        MessageResolved(0, 1, True, 2),
        FigureAdvanced(0, 1, 2),
        MessageDrawn(0, 2),
        MessageResolved(0, 2, False, 2),
        FigureAdvanced(0, 1, 2),
        TileDrawn(1, "E"),
    ]
    assert figures(state, 0) == [10, 7] and state.scores == [17, 0]
    assert state.messengers.stack == [4, 5, 6, 7, 8, 3, 1, 2]
    assert state.supply == [3, 7], "messages 1-3 leave the followers where they are"
    assert GAME.to_move(state) == [1]


# ---------------------------------------------------------------------------- 5. message 8


def test_message_8_farm_counts_a_city_it_touches_twice_once_and_no_open_city():
    """Before the extra turn the farm touches the start city through the start tile and
    through the E that closed it (one city, 3 points), seat 1's open city and M (open): 3."""
    state = messengers_board([8, *[m for m in IN_ORDER if m != 8]])
    put_figures(state, 0, 1, 0)
    state, _ = act(state, CLOSE_START_CITY)
    state, events = act(state, ChooseFigure(0))
    assert events[-1] == MessageDrawn(0, 8)
    state, events = act(state, CarryOutMessage(1, FARMER))
    assert events == [
        MessageResolved(0, 8, False, 3, FARMER),
        FigureAdvanced(0, 1, 3),
        TileDrawn(1, "E"),
    ]
    assert state.supply == [4, 7]
