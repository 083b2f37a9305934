"""The Messengers with Inns & Cathedrals and Traders & Builders: the seed's notes
("Combinaties met andere uitbreidingen", footnotes 14, 20 and 21), a scenario each."""

from __future__ import annotations

import random

import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.expansions import BUILDER, LARGE, BuilderTurn, PieceReturned
from services.rules.games.carcassonne.messengers import (
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    MessageDrawn,
    MessageResolved,
    Spot,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.state import PlaceTile, TileDrawn
from services.rules.games.carcassonne.tiles import TILE_INDEX, spot_reaching
from services.rules.games.contract import Rejection

BOTH = {"messengers": True, "inns_cathedrals": True, "traders_builders": True}


def start(order: list[str], messages: list[int]):
    others = [number for number in range(1, 9) if number not in messages]
    options = {"tile_order": order, "message_order": messages + others, **BOTH}
    resolved = GAME.resolve_options(options, 2)
    assert not isinstance(resolved, Rejection), resolved
    return GAME.fold(GAME.setup(resolved, 2, random.Random(0)))


def spot(letter: str, rotation: int, kind: str, **named: list[str]) -> int:
    return spot_reaching(TILE_INDEX[letter], rotation, kind, named)


def act(state, action):
    events = GAME.decide(state, state.seat, action)
    assert isinstance(events, list), events
    return GAME.fold(events, state), events


def place(state, x, y, rotation, follower=None, piece="follower"):
    return act(state, PlaceTile(x, y, rotation, follower, piece))


def any_bare_placement(state):
    return next(a for a in GAME.legal_actions(state, state.seat) if type(a) is PlaceTile)


def five_point_road(state):
    """After seat 0's first move: seat 1's U east of the start tile, seat 0's follower on U
    west of it, seat 1's A closing the east end, seat 0's A closing the west end: 5 points,
    which seat 0's scoring figure takes, landing on a dark space (a message is drawn)."""
    road = spot("U", 1, "road")
    state, _ = place(state, 1, 0, 1)
    state, _ = place(state, -1, 0, 1, road)
    state, _ = place(state, 2, 0, 1)
    state, events = place(state, -2, 0, 3)
    assert [(e.feature, e.points) for e in events if hasattr(e, "feature")] == [("road", 5)]
    return act(state, ChooseFigure(0))


@pytest.mark.parametrize(
    ("message", "tile", "square", "kind"),
    [
        (1, "IO", (0, -1), "road"),  # a road with an inn, south of the start tile
        (2, "IB", (0, 1), "city"),  # a city with a cathedral, north of it
    ],
)
def test_messages_1_and_2_count_an_unfinished_inn_or_cathedral_as_nothing(
    message, tile, square, kind
):
    state = start(["D", tile, "U", "U", "A", "A", "B"], [message])
    state, _ = place(state, *square, 0, spot(tile, 0, kind))
    state, events = five_point_road(state)
    assert events[-1] == MessageDrawn(0, message)
    state, events = act(state, CarryOutMessage(0))
    assert events[0] == MessageResolved(0, message, False, 0)
    assert not [e for e in events if type(e) is FigureAdvanced]
    assert state.messengers.figures[:2] == [5, 0]


@pytest.mark.parametrize(
    ("message", "tile", "square", "kind"),
    [
        (6, "IB", (0, 1), "city"),  # the large follower as a knight
        (7, "IO", (0, -1), "field"),  # the large follower as a farmer
    ],
)
def test_messages_6_and_7_count_the_large_follower_as_one(message, tile, square, kind):
    state = start(["D", tile, "U", "U", "A", "A", "B"], [message])
    state, _ = place(state, *square, 0, spot(tile, 0, kind, **_side(kind)), LARGE)
    state, events = five_point_road(state)
    assert events[-1] == MessageDrawn(0, message)
    state, events = act(state, CarryOutMessage(1))
    assert events[:2] == [MessageResolved(0, message, False, 2), FigureAdvanced(0, 1, 2)]


def _side(kind: str) -> dict[str, list[str]]:
    return {"halves": ["NNW"]} if kind == "field" else {}


def _builder_road(order: list[str], messages: list[int]):
    """Seat 0: a follower on U east of the start tile, its builder on the next U."""
    state = start(order, messages)
    road = spot("U", 1, "road")
    state, _ = place(state, 1, 0, 1, road)
    state, _ = place(state, 1, -1, 0)
    state, _ = place(state, 2, 0, 1, road, BUILDER)
    return state


def test_each_part_of_a_builder_turn_is_its_own_scoring_step():
    state = _builder_road(["D", "U", "B", "U", "A", "A", "V", "V", "V"], [6])
    state, _ = place(state, -1, 0, 3)  # seat 1's A closes the west end
    state, events = place(state, 3, 0, 1)  # seat 0's A: the road, 5 points, and a builder turn
    assert BuilderTurn(0) not in events  # the turn's scoring step comes first
    state, events = act(state, ChooseFigure(0))
    assert events[-1] == MessageDrawn(0, 6)
    state, events = act(state, TakeMessagePoints(1))
    assert events == [
        MessageResolved(0, 6, True, 2),
        FigureAdvanced(0, 1, 2),
        BuilderTurn(0),
        TileDrawn(0, "V"),
    ]
    assert GAME.view(state, 0).messengers.phase == "place_tile"
    state, events = act(state, any_bare_placement(state))  # scores nothing: a step of its own,
    assert events[-1] == TileDrawn(1, "V")  # so no message, though figure 0 stands on 5
    assert not [e for e in events if type(e) is MessageDrawn] and state.messengers.figures[0] == 5


def test_message_4_and_a_builder_turn_follow_the_11_2013_order():
    """Original tile (extends the builder's road, completes another) => message 4's tile
    (extends the builder's road too) => its builder turn => the original's builder turn."""
    order = ["D", "U", "B", "U", "B", "U", "U", "U", "A", "W", "U", "V", "V", "V"]
    state = _builder_road(order, [4])
    down = spot("U", 0, "road")
    state, _ = place(state, 2, -1, 0)  # seat 1: B
    state, _ = place(state, 3, -1, 0, down)  # seat 0: a follower on a road going south
    state, _ = place(state, 3, -2, 0)
    state, _ = place(state, 3, -3, 0)
    state, _ = place(state, 3, -4, 2)  # seat 1's A closes its south end
    state, events = place(state, 3, 0, 0)  # W: extends the builder's road, closes the other
    assert [(e.feature, e.points, e.seats) for e in events if hasattr(e, "feature")] == [
        ("road", 5, [0])
    ]
    assert state.extras.owed == 1
    state, events = act(state, ChooseFigure(0))
    assert events[-1] == MessageDrawn(0, 4)
    state, events = act(state, CarryOutMessage())
    assert events == [MessageResolved(0, 4, False, 0), TileDrawn(0, "U")]  # message 4 first
    state, events = place(state, -1, 0, 1)  # message 4's tile extends the builder's road
    assert events[1:] == [BuilderTurn(0), TileDrawn(0, "V")] and state.extras.owed == 1
    state, events = act(state, any_bare_placement(state))  # message 4's builder turn
    assert events[1:] == [BuilderTurn(0), TileDrawn(0, "V")] and state.extras.owed == 0
    assert state.messengers.held == 4
    state, events = act(state, any_bare_placement(state))  # the original's builder turn
    assert events[-1] == TileDrawn(1, "V")
    assert state.messengers.held == 0 and state.messengers.stack[-1] == 4


def test_message_8_sends_the_builder_home_with_its_owners_last_follower():
    """Seat 0's follower and builder on a road south of the start tile; seat 0 scores 5 on
    the start tile's road and draws message 8, scoring the southern road with that follower:
    the follower and the builder go home."""
    state = start(["D", "U", "U", "U", "A", "U", "B", "A", "V"], [8])
    road = spot("U", 1, "road")
    state, _ = place(state, 0, -1, 1, road)
    state, _ = place(state, 1, 0, 1)
    state, _ = place(state, 1, -1, 1, road, BUILDER)
    state, _ = place(state, 2, 0, 1)
    state, _ = place(state, -1, 0, 1, road)
    state, _ = place(state, 0, -2, 0)
    state, events = place(state, -2, 0, 3)
    state, events = act(state, ChooseFigure(0))
    assert events[-1] == MessageDrawn(0, 8)
    follower = Spot(0, -1, road)
    state, events = act(state, CarryOutMessage(0, follower))
    assert events[:3] == [
        MessageResolved(0, 8, False, 2, follower),
        PieceReturned(0, BUILDER, 1, -1, road),
        FigureAdvanced(0, 0, 2),
    ]
    assert state.extras.builders == [-1, -1] and state.supply[0] == 7
