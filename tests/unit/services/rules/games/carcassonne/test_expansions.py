"""Inns & Cathedrals and Traders & Builders: a scenario per rule, from the rule texts.

Every scenario lays a known stack (``tile_order``) and plays it move by move through
``decide``; coordinates as in ``seeds/carcassonne/README.md`` (x east, y north, the start tile D
at (0, 0) with its city north and its road west-east).
"""

from __future__ import annotations

import random

import msgspec

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.expansions import (
    BUILDER,
    LARGE,
    PIG,
    BonusScored,
    BuilderTurn,
    ExpansionsInPlay,
    GoodsTaken,
    PieceReturned,
)
from services.rules.games.carcassonne.state import (
    FeatureScored,
    GameOver,
    PlaceTile,
    TileDrawn,
    TilePlaced,
)
from services.rules.games.carcassonne.tiles import TILE_INDEX, spot_reaching
from services.rules.games.contract import Rejection

IC = {"inns_cathedrals": True}
TB = {"traders_builders": True}


def start(order: list[str], seats: int = 2, **options):
    resolved = GAME.resolve_options({"tile_order": order, **options}, seats)
    assert not isinstance(resolved, Rejection), resolved
    return GAME.fold(GAME.setup(resolved, seats, random.Random(0)))


def spot(letter: str, rotation: int, kind: str, **named: list[str]) -> int:
    return spot_reaching(TILE_INDEX[letter], rotation, kind, named)


def act(state, action, seat: int | None = None):
    events = GAME.decide(state, state.seat if seat is None else seat, action)
    assert isinstance(events, list), events
    return GAME.fold(events, state), events


def place(state, x, y, rotation, follower=None, piece="follower"):
    return act(state, PlaceTile(x, y, rotation, follower, piece))


def scored(events, final: bool | None = None) -> list[FeatureScored]:
    return [e for e in events if type(e) is FeatureScored and final in (None, e.final)]


# ---------------------------------------------------------------------------- options


def test_the_options_put_the_expansions_tiles_and_pieces_in_play():
    base = GAME.setup(GAME.resolve_options({}, 2), 2, random.Random(5))
    assert base[0].stack_size == 71 and not any(type(e) is ExpansionsInPlay for e in base)
    both = GAME.setup(GAME.resolve_options({**IC, **TB}, 2), 2, random.Random(5))
    assert both[0].stack_size == 71 + 18 + 24 and both[1] == ExpansionsInPlay(True, True)
    letters = set(both[0].stack)
    assert {"IB", "IQ", "TA", "TX"} <= letters
    only_ic = GAME.setup(GAME.resolve_options(IC, 2), 2, random.Random(5))
    assert only_ic[0].stack_size == 89 and not any(
        len(s) == 2 and s[0] == "T" for s in only_ic[0].stack
    )
    assert GAME.resolve_options({}, 6).code == "bad_seat_count"
    assert GAME.resolve_options(TB, 6).code == "bad_seat_count"
    assert GAME.resolve_options(IC, 6)["inns_cathedrals"] is True
    assert GAME.resolve_options({"tile_order": ["D", "IO"]}, 2).code == "bad_option"
    assert GAME.resolve_options({"tile_order": ["D", "IB", "IB", "IB"], **IC}, 2).code == (
        "bad_option"
    )
    view = GAME.view(start(["D", "IO", "TA"], **IC, **TB), 0)
    assert view.pieces.supply[0] == {LARGE: 1, BUILDER: 1, PIG: 1}
    assert view.pieces.goods[1] == {"wine": 0, "grain": 0, "cloth": 0}


def test_pieces_the_match_does_not_play_are_refused():
    state = start(["D", "U", "U"])
    road = spot("U", 1, "road")
    assert GAME.decide(state, 0, PlaceTile(1, 0, 1, road, LARGE)).code == "bad_piece"
    assert GAME.decide(state, 0, PlaceTile(1, 0, 1, road, BUILDER)).code == "bad_piece"
    assert GAME.decide(state, 0, PlaceTile(1, 0, 1, None, LARGE)).code == "bad_piece"
    assert all(action.piece == "follower" for action in GAME.legal_actions(state, 0))
    placed = GAME.decide(state, 0, PlaceTile(1, 0, 1, road))[0]
    assert b'"piece"' not in msgspec.json.encode(placed)  # base-game events are unchanged
    large = TilePlaced(0, "U", 1, 0, 1, road, LARGE)
    assert msgspec.json.decode(msgspec.json.encode(large), type=TilePlaced) == large


# ---------------------------------------------------------------------------- inns


def _inn_road(order: list[str]):
    """Seat 0 puts a follower on IO's road (an inn) east of the start tile; seat 1 closes the
    west end with A; with a second A seat 0 closes the east end."""
    state = start(order, **IC)
    state, _ = place(state, 1, 0, 0, spot("IO", 0, "road"))
    state, events = place(state, -1, 0, 3)
    return state, events


def test_a_completed_road_with_an_inn_scores_two_per_tile():
    state, _ = _inn_road(["D", "IO", "A", "A", "B"])
    state, events = place(state, 2, 0, 1)
    assert scored(events) == [
        FeatureScored("road", 8, [0], scored(events)[0].followers, False)
    ]  # A, D, IO, A: 4 tiles, 2 each
    assert state.scores == [8, 0]


def test_an_unfinished_road_with_an_inn_scores_nothing_at_the_end():
    state, events = _inn_road(["D", "IO", "A"])
    final = scored(events, final=True)
    assert [(e.feature, e.points, e.seats) for e in final] == [("road", 0, [0])]
    assert events[-1] == GameOver([0, 0], [0, 1])


# ---------------------------------------------------------------------------- cathedrals


def _cathedral_city(order: list[str]):
    """Seat 0 puts a knight on IB (city on all sides, a cathedral) north of the start tile."""
    state = start(order, **IC)
    state, _ = place(state, 0, 1, 0, 0)
    return state


def test_a_completed_city_with_a_cathedral_scores_three_per_tile():
    state = _cathedral_city(["D", "IB", "E", "E", "E", "B"])
    state, _ = place(state, 0, 2, 2)  # E's city cap facing south
    state, _ = place(state, 1, 1, 3)  # facing west
    state, events = place(state, -1, 1, 1)  # facing east: the city is complete
    assert [(e.feature, e.points, e.seats) for e in scored(events)] == [("city", 15, [0])]


def test_an_unfinished_city_with_a_cathedral_scores_nothing_at_the_end():
    state = _cathedral_city(["D", "IB", "E"])
    state, events = place(state, 0, 2, 2)
    assert [(e.feature, e.points, e.seats) for e in scored(events, final=True)] == [
        ("city", 0, [0])
    ]


def test_a_city_with_pennants_and_a_cathedral_counts_its_pennants_three_times():
    state = start(["D", "IB", "M", "E", "E", "E", "B"], **IC)
    state, _ = place(state, 0, 1, 0, 0)
    state, _ = place(state, 0, 2, 2)  # M: city joining north and east, pennant: now south-west
    state, _ = place(state, 1, 1, 3)
    state, _ = place(state, -1, 2, 1)
    state, events = place(state, -1, 1, 1)
    [city] = scored(events)
    assert city.points == 3 * (6 + 1)  # D, IB, M, three E and M's pennant


# ---------------------------------------------------------------------------- large follower


def _three_caps(order: list[str], second_follower: bool):
    """Seat 1's large follower and seat 0's one or two knights in city caps along y = 0,
    joined into one city along y = 1: D(1,0) seat 0, D(-1,0) seat 1 large, D(2,0) seat 0."""
    state = start(order, **IC)
    state, _ = place(state, 1, 0, 0, 0)
    state, _ = place(state, -1, 0, 0, 0, LARGE)
    state, _ = place(state, 2, 0, 0, 0 if second_follower else None)
    state, _ = place(state, -1, 1, 1)  # N: city joining east and south
    state, _ = place(state, 0, 1, 2)  # R: city south, west and east
    state, _ = place(state, 1, 1, 2)
    state, events = place(state, 2, 1, 2)  # N: city south and west closes it
    return state, events


def test_a_large_follower_ties_two_followers():
    state, events = _three_caps(["D", "D", "D", "D", "N", "R", "R", "N", "B"], True)
    [city] = scored(events)
    assert (city.points, city.seats) == (16, [0, 1])
    assert sorted((f.seat, f.large) for f in city.followers) == [
        (0, False),
        (0, False),
        (1, True),
    ]
    assert state.extras.large == [-1, -1] and state.supply == [7, 7]  # all home


def test_a_large_follower_beats_one_follower():
    state, events = _three_caps(["D", "D", "D", "D", "N", "R", "R", "N", "B"], False)
    [city] = scored(events)
    assert (city.points, city.seats) == (16, [1])
    assert state.scores == [0, 16]


def test_the_large_follower_is_one_per_player_and_needs_a_free_feature():
    state = start(["D", "U", "U", "U", "U"], **IC)
    road = spot("U", 1, "road")
    state, _ = place(state, 1, 0, 1, road, LARGE)
    assert GAME.view(state, 0).pieces.supply[0] == {LARGE: 0}
    assert GAME.view(state, 0).followers[0].large
    assert GAME.decide(state, 1, PlaceTile(2, 0, 1, road, LARGE)).code == "feature_occupied"
    state, _ = place(state, -1, 0, 1)
    refused = GAME.decide(
        state, 0, PlaceTile(2, 0, 1, spot("U", 1, "field", halves=["NNW"]), LARGE)
    )
    assert refused.code == "piece_placed"
    larges = [a for a in GAME.legal_actions(state, 0) if a.piece == LARGE]
    assert larges == [] and state.supply[0] == 7


# ---------------------------------------------------------------------------- goods


def _wine_cities(order: list[str]):
    """Two cities with wine and no knights: seat 0 completes the first, seat 1 the second."""
    state = start(order, **TB)
    state, _ = place(state, 0, 1, 2)  # TB: city south and east, wine
    state, _ = place(state, 0, 2, 0)  # E north of it, its city north
    state, events = place(state, 1, 1, 3)  # E closes the wine city
    assert GoodsTaken(0, [1, 0, 0]) in events and not scored(events)
    state, _ = place(state, 0, 3, 1)  # TO: city north-south, wine
    state, _ = place(state, 0, -1, 0)  # B south of the start tile
    return state


def test_goods_ties_at_the_end_give_each_tied_player_ten():
    state = _wine_cities(["D", "TB", "E", "E", "TO", "B", "E"])
    state, events = place(state, 0, 4, 2)
    assert GoodsTaken(1, [1, 0, 0]) in events
    assert [e for e in events if type(e) is BonusScored] == [
        BonusScored(0, "wine", 10),
        BonusScored(1, "wine", 10),
    ]
    assert state.scores == [10, 10] and GAME.view(state, 0).pieces.goods[1]["wine"] == 1


def test_the_most_goods_alone_scores_ten():
    state = _wine_cities(["D", "TB", "E", "E", "TO", "B"])
    assert state.finished and state.scores == [10, 0]


# ---------------------------------------------------------------------------- builder


def _builder_road(order: list[str], **options):
    """Seat 0: a follower on U east of the start tile, then its builder on the next U."""
    state = start(order, **TB, **options)
    road = spot("U", 1, "road")
    state, _ = place(state, 1, 0, 1, road)
    state, _ = place(state, 1, -1, 0)  # seat 1: B
    state, events = place(state, 2, 0, 1, road, BUILDER)
    assert BuilderTurn(0) not in events  # placing the builder earns nothing yet
    state, _ = place(state, 2, -1, 0)  # seat 1: B
    return state


def test_the_builder_gives_a_second_tile_and_never_a_third():
    state = _builder_road(["D", "U", "B", "U", "B", "U", "U", "V", "V"])
    assert GAME.view(state, 0).pieces.pieces[0].piece == BUILDER
    state, events = place(state, 3, 0, 1)  # extends the builder's road
    assert events[1:] == [BuilderTurn(0), TileDrawn(0, "U")]
    assert GAME.to_move(state) == [0] and GAME.view(state, 0).pieces.builder_turn
    state, events = place(state, 4, 0, 1)  # extends it again: no third tile
    assert events[1:] == [TileDrawn(1, "V")]
    assert GAME.to_move(state) == [1] and state.extras.owed == 0


def test_the_builder_is_only_placed_beside_its_owners_follower():
    state = start(["D", "U", "U", "U"], **TB)
    road = spot("U", 1, "road")
    refused = GAME.decide(state, 0, PlaceTile(1, 0, 1, road, BUILDER))
    assert refused.code == "no_own_follower"
    state, _ = place(state, 1, 0, 1, road)
    assert GAME.decide(state, 1, PlaceTile(2, 0, 1, road, BUILDER)).code == "no_own_follower"
    state, _ = place(state, -1, 0, 1)
    legal = [a for a in GAME.legal_actions(state, 0) if a.piece == BUILDER]
    assert PlaceTile(2, 0, 1, road, BUILDER) in legal
    assert all(a.x == 2 or a.x == -2 for a in legal)  # the road's two ends: D's side is D's


def test_a_builder_goes_home_when_its_road_is_completed_and_still_earns_the_turn():
    state = start(["D", "U", "B", "U", "A", "A", "V", "V"], **TB)
    road = spot("U", 1, "road")
    state, _ = place(state, 1, 0, 1, road)
    state, _ = place(state, 1, -1, 0)
    state, _ = place(state, 2, 0, 1, road, BUILDER)
    state, _ = place(state, -1, 0, 3)  # seat 1's A closes the west end
    state, events = place(state, 3, 0, 1)  # seat 0's A completes the road
    assert [(e.feature, e.points, e.seats) for e in scored(events)] == [("road", 5, [0])]
    assert events[2:] == [
        PieceReturned(0, BUILDER, 2, 0, road),
        BuilderTurn(0),
        TileDrawn(0, "V"),
    ]
    assert state.extras.builders == [-1, -1] and GAME.to_move(state) == [0]


# ---------------------------------------------------------------------------- pig


def _pig_farm(order: list[str], large: bool):
    """Seat 0: a farmer north of the road and its pig beside it; seat 1: a farmer (or its
    large follower) south of the road; seat 1's A at the road's west end joins both fields;
    seat 0 completes the start tile's city, which the farm touches."""
    state = start(order, **TB, **(IC if large else {}))
    north = spot("U", 1, "field", halves=["NNW"])
    south = spot("U", 1, "field", halves=["SSW"])
    state, _ = place(state, 1, 0, 1, north)
    state, _ = place(state, -1, 0, 1, south, LARGE if large else "follower")
    state, _ = place(state, 2, 0, 1, north, PIG)
    state, _ = place(state, -2, 0, 3)  # A: the fields meet around the road's end
    state, events = place(state, 0, 1, 2)  # E: the city is complete
    return state, events


def test_the_pig_gives_its_owner_four_per_city_with_the_majority():
    state, events = _pig_farm(["D", "U", "U", "U", "A", "E"], large=False)
    farms = [e for e in scored(events, final=True) if e.feature == "field"]
    assert [(e.points, e.seats) for e in farms] == [(3, [0, 1])]
    assert [e for e in events if type(e) is BonusScored] == [BonusScored(0, "pig", 1)]
    assert state.scores == [4, 3]


def test_the_pig_gives_nothing_without_the_majority():
    state, events = _pig_farm(["D", "U", "U", "U", "A", "E"], large=True)
    farms = [e for e in scored(events, final=True) if e.feature == "field"]
    assert [(e.points, e.seats) for e in farms] == [(3, [1])]
    assert not [e for e in events if type(e) is BonusScored]
    assert state.scores == [0, 3]


def test_the_pig_goes_only_on_a_field_with_its_owners_farmer():
    state = start(["D", "U", "U", "U"], **TB)
    north = spot("U", 1, "field", halves=["NNW"])
    assert GAME.decide(state, 0, PlaceTile(1, 0, 1, north, PIG)).code == "no_own_follower"
    road = spot("U", 1, "road")
    assert GAME.decide(state, 0, PlaceTile(1, 0, 1, road, PIG)).code == "bad_spot"
    state, events = place(state, 1, 0, 1, north)
    assert type(events[0]) is TilePlaced and events[0].piece == "follower"
    state, _ = place(state, -1, 0, 1)
    assert GAME.decide(state, 0, PlaceTile(2, 0, 1, north, BUILDER)).code == "bad_spot"
    assert PlaceTile(2, 0, 1, north, PIG) in GAME.legal_actions(state, 0)
