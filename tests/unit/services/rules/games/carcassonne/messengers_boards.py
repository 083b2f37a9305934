"""The Messengers' hand-built boards and moves for the Carcassonne tests: a match started on a
fixed ``tile_order`` and ``message_order``, legal actions played and their events, figures
set where a scenario needs them (``put_figures``, as the base tests set a supply), and the
boards that score a feature and draw a message."""

from __future__ import annotations

import random

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.messengers import ChooseFigure, MessageDrawn
from services.rules.games.carcassonne.state import PlaceTile
from services.rules.games.carcassonne.tiles import CITY, ROAD
from services.rules.games.contract import Rejection

IN_ORDER = [1, 2, 3, 4, 5, 6, 7, 8]


def start(order: list[str], messages: list[int] | None = None, seats: int = 2, **options):
    given = {"tile_order": order, "messengers": True, "message_order": messages or IN_ORDER}
    resolved = GAME.resolve_options({**given, **options}, seats)
    assert not isinstance(resolved, Rejection), resolved
    return GAME.fold(GAME.setup(resolved, seats, random.Random(0)))


def act(state, action, seat: int | None = None):
    """One legal action (by the seat to move unless given); returns the state and events."""
    seat = GAME.to_move(state)[0] if seat is None else seat
    assert action in GAME.legal_actions(state, seat), action
    events = GAME.decide(state, seat, action)
    assert isinstance(events, list), events
    return GAME.fold(events, state), events


def play(state, *actions):
    for action in actions:
        state, events = act(state, action)
    return state, events


def put_figures(state, seat: int, scoring: int, messenger: int) -> None:
    figures = state.messengers.figures
    state.scores[seat] += scoring + messenger - figures[2 * seat] - figures[2 * seat + 1]
    figures[2 * seat], figures[2 * seat + 1] = scoring, messenger


def figures(state, seat: int) -> list[int]:
    return state.messengers.figures[2 * seat : 2 * seat + 2]


def of_type(events, kind) -> list:
    return [event for event in events if isinstance(event, kind)]


# ---------------------------------------------------------------------------- boards


def two_cities(trigger="E", messages=None, seat_one_knight=False, after=("H", "U", "U"), **options):
    """Two one-tile cities south-east and south-west of the start tile, with knights of seat
    0 (or the west one of seat 1); seat 0 is to move with ``trigger``: an E closes the start
    city with a new knight (4 points), an H at (0, -1) closes both cities (4 + 4). The
    ``after`` tiles follow in the stack."""
    middle = ["E", "E", "U", "U"] if seat_one_knight else ["E", "U", "E", "U"]
    order = ["D", "U", "U", *middle, trigger, *after]
    moves = [
        PlaceTile(1, 0, 1, None),
        PlaceTile(-1, 0, 1, None),
        PlaceTile(1, -1, 3, 0),  # E, city facing west, knight of seat 0
    ]
    if seat_one_knight:
        moves += [PlaceTile(-1, -1, 1, 0), PlaceTile(2, 0, 1, None), PlaceTile(-2, 0, 1, None)]
    else:
        moves += [PlaceTile(2, 0, 1, None), PlaceTile(-1, -1, 1, 0), PlaceTile(-2, 0, 1, None)]
    state, _ = play(start(order, messages, **options), *moves)
    assert GAME.to_move(state) == [0] and GAME.view(state, None).tile == trigger
    return state


CLOSE_START_CITY = PlaceTile(0, 1, 2, 0)
CLOSE_BOTH_CITIES = PlaceTile(0, -1, 1, None)


def shared_city(messages=None):
    """Seat 0: a knight in an open 5-tile city with 2 pennants where seat 1 has two knights,
    and a thief on a road that seat 0 closes next with a cloister (monk on it, 2
    neighbours): seat 0 is to move and that move scores 4 for seat 0."""
    order = ["D", "M", "D", "E", "E", "A", "C", "A", "U", "U", "U"]
    moves = [
        PlaceTile(0, 1, 2, 0),  # M: the start city goes on west; knight of seat 0
        PlaceTile(-1, 0, 0, 0),  # D: a separate city north of it; knight of seat 1
        PlaceTile(0, 2, 0, None),
        PlaceTile(-1, 2, 2, 0),  # E: a city facing south; knight of seat 1
        PlaceTile(1, 0, 1, 1),  # A: cloister ending the road east; thief of seat 0
        PlaceTile(-1, 1, 0, None),  # C joins the three cities, still open to the west
    ]
    return play(start(order, messages), *moves)[0]


CLOSE_ROAD_WITH_MONK = PlaceTile(-2, 0, 3, 0)


def roads_and_farm(messages=None):
    """Seat 0: thieves on a 3-tile and a 1-tile road, a farmer on the farm north of the start
    road; seat 0 is to move and closes a city with a new knight (4 points), after which the
    farm touches two completed cities."""
    order = ["D", "U", "U", "V", "E", "E", "B", "E", "U", "U"]
    moves = [
        PlaceTile(1, 0, 1, 0),  # U east of the start tile, thief of seat 0
        PlaceTile(-1, 0, 1, None),
        PlaceTile(1, -1, 0, 0),  # V, a one-tile road, thief of seat 0
        PlaceTile(0, 1, 2, None),  # E closes the start city (no knight, nothing scores)
        PlaceTile(1, 1, 0, 1),  # E: farmer of seat 0 joining the start road's north farm
        PlaceTile(2, -1, 0, None),
    ]
    return play(start(order, messages), *moves)[0]


CLOSE_NORTH_EAST_CITY = PlaceTile(1, 2, 2, 0)


def draw_message(state, trigger: PlaceTile, figure: int = 0):
    """Seat 0 scores one feature with ``trigger`` and lands ``figure`` on 5: a message."""
    put_figures(state, 0, *((1, 0) if figure == 0 else (0, 1)))
    state, events = act(state, trigger)
    assert state.messengers.pending == [(CITY if trigger.y else ROAD, 4)]
    state, events = act(state, ChooseFigure(figure))
    assert events[-1] == MessageDrawn(0, state.messengers.message)
    assert figures(state, 0)[figure] == 5
    return state, events
