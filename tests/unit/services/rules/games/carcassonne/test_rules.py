"""Carcassonne rules on hand-built boards: placement, followers, every scoring rule, views."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.state import (
    CarcassonneState,
    FeatureScored,
    GameOver,
    PlacedTile,
    PlaceTile,
    StackShuffled,
    TileDiscarded,
    TileDrawn,
    TilePlaced,
)
from services.rules.games.carcassonne.tiles import BASE_COUNTS, LETTERS, TILE_INDEX
from services.rules.games.contract import Rejection
from services.rules.games.playout import random_playout


def start(order: list[str], seats: int = 2):
    options = GAME.resolve_options({"tile_order": order}, seats)
    assert not isinstance(options, Rejection), options
    events = GAME.setup(options, seats, random.Random(0))
    return GAME.fold(events), events


def play(order: list[str], moves: list[PlaceTile], seats: int = 2):
    """Play ``moves`` in turn order from the tile order; every move must be legal."""
    state, events = start(order, seats)
    for action in moves:
        seat = GAME.to_move(state)[0]
        assert action in GAME.legal_actions(state, seat), action
        new = GAME.decide(state, seat, action)
        assert not isinstance(new, Rejection), new
        events += new
        state = GAME.fold(new, state)
    return state, events


def scorings(events, final: bool | None = None) -> list[tuple[str, int, list[int]]]:
    return [
        (event.feature, event.points, event.seats)
        for event in events
        if isinstance(event, FeatureScored) and (final is None or event.final is final)
    ]


# ---------------------------------------------------------------------------- scoring


def test_completed_road_scores_one_per_tile_and_returns_the_follower():
    road_west = PlaceTile(1, 0, 1, 1)  # cloister tile A turned so its road runs west
    state, events = play(["D", "A", "A"], [road_west])
    assert state.supply == [6, 7]
    legal = GAME.legal_actions(state, 1)
    assert PlaceTile(-1, 0, 3, 0) in legal  # the cloister is free
    assert PlaceTile(-1, 0, 3, 1) not in legal  # the road already holds a follower
    assert GAME.decide(state, 1, PlaceTile(-1, 0, 3, 1)).code == "feature_occupied"
    state, events = play(["D", "A", "A"], [road_west, PlaceTile(-1, 0, 3, 0)])
    assert scorings(events, final=False) == [("road", 3, [0])]
    assert scorings(events, final=True) == [("cloister", 2, [1])]
    assert GAME.result(state).scores == [3, 2]
    assert state.supply == [7, 6]


def test_city_joined_from_two_followers_scores_both_in_full():
    moves = [
        PlaceTile(0, 1, 2, 0),  # M (pennant): city south and west, knight for seat 0
        PlaceTile(-1, 0, 0, 0),  # D: a separate city north, knight for seat 1
        PlaceTile(-1, 1, 1, None),  # N joins both parts and closes the city
    ]
    state, events = play(["D", "M", "D", "N"], moves)
    assert scorings(events, final=False) == [("city", 2 * 4 + 2 * 1, [0, 1])]
    assert state.scores == [10, 10] and state.supply == [7, 7]
    assert GAME.result(state).winners == [0, 1]


def test_farm_majority_takes_the_farm_and_a_city_counts_once():
    moves = [
        PlaceTile(-1, 0, 1, 2),  # U west of the start tile, farmer north of the road (seat 0)
        PlaceTile(1, 0, 1, 1),  # U east of it, farmer south of the road (seat 1)
        PlaceTile(0, 1, 2, 1),  # E closes the start tile's city, farmer beyond it (seat 0)
        PlaceTile(-1, 1, 0, None),  # B joins seat 0's two farms around the city
        PlaceTile(2, 0, 1, None),  # A ends the road: north and south farms become one
    ]
    state, events = play(["D", "U", "U", "E", "B", "A"], moves)
    assert scorings(events, final=False) == []
    [farm] = [event for event in events if isinstance(event, FeatureScored)]
    assert (farm.feature, farm.points, farm.seats, farm.final) == ("field", 3, [0], True)
    assert sorted(follower.seat for follower in farm.followers) == [0, 0, 1]
    assert GAME.result(state).scores == [3, 0]


def test_city_closed_by_the_placed_tile_feeds_both_farms_it_touches():
    moves = [
        PlaceTile(0, 1, 1, 2),  # G north of the start city; farmer on its west field (seat 0)
        PlaceTile(1, 1, 0, 1),  # B, farmer joining G's east field (seat 1)
        PlaceTile(0, 2, 2, 0),  # E caps and closes the city; its knight scores at once
        PlaceTile(-1, 1, 0, None),
        PlaceTile(-1, 2, 0, None),  # seat 0's farm now also reaches the city through E
    ]
    state, events = play(["D", "G", "B", "E", "B", "B"], moves)
    assert scorings(events, final=False) == [("city", 6, [0])]
    assert sorted(scorings(events, final=True)) == [("field", 3, [0]), ("field", 3, [1])]
    assert GAME.result(state).scores == [9, 3]


def test_cloister_completed_by_a_road_tile():
    moves = [
        PlaceTile(0, -1, 0, 0),  # B below the start tile, monk for seat 0
        PlaceTile(-1, 0, 1, None),
        PlaceTile(1, 0, 1, None),
        PlaceTile(-1, -1, 0, None),
        PlaceTile(1, -1, 3, None),
        PlaceTile(0, -2, 1, None),
        PlaceTile(-1, -2, 2, None),
    ]
    order = ["D", "B", "U", "U", "V", "V", "U", "V", "V"]
    state, events = play(order, moves)
    assert scorings(events) == [] and state.supply == [6, 7]
    state, events = play(order, [*moves, PlaceTile(1, -2, 1, None)])  # a curve, by seat 1
    assert scorings(events) == [("cloister", 9, [0])]
    assert state.supply == [7, 7] and state.cloisters == {}


def test_final_scoring_of_unfinished_road_city_and_cloister():
    moves = [
        PlaceTile(0, 1, 2, 0),  # M: city with pennant, open to the west (seat 0)
        PlaceTile(1, 0, 1, 0),  # U: road open at both ends (seat 1)
        PlaceTile(0, -1, 0, 0),  # B: cloister with two neighbours (seat 0)
    ]
    state, events = play(["D", "M", "U", "B"], moves)
    assert sorted(scorings(events, final=True)) == [
        ("city", 2 + 1, [0]),
        ("cloister", 1 + 2, [0]),
        ("road", 2, [1]),
    ]
    assert isinstance(events[-1], GameOver)
    assert events[-1].scores == [6, 2] and events[-1].winners == [0]
    assert GAME.to_move(state) == [] and GAME.legal_actions(state, 0) == []


def test_city_loop_through_two_cities_of_one_tile_counts_that_tile_once():
    moves = [
        PlaceTile(0, 1, 2, 0),  # N: city south and west, joins I's north city (seat 0)
        PlaceTile(-1, 0, 0, 0),  # N: city north and east, joins I's west city (seat 1)
        PlaceTile(-1, 1, 1, None),  # N closes the ring: one city, I counted once
    ]
    state, events = play(["I", "N", "N", "N"], moves)
    assert scorings(events) == [("city", 2 * 4, [0, 1])]


def test_placed_tile_whose_two_cities_join_one_city_closes_it():
    moves = [
        PlaceTile(-1, 0, 1, 0),  # knight (seat 0) on a city wrapping round the square (0, -1)
        PlaceTile(-1, -1, 1, None),
        PlaceTile(-1, -2, 0, None),
        PlaceTile(0, -2, 3, None),
        PlaceTile(0, 1, 2, None),
        PlaceTile(1, 0, 3, None),
        PlaceTile(0, -1, 2, None),  # H: both of its cities join the same city and close it
    ]
    state, events = play(["C", "N", "G", "N", "N", "E", "E", "H"], moves)
    assert scorings(events) == [("city", 2 * 8 + 2, [0])]


# ---------------------------------------------------------------------------- placement


def test_tile_that_fits_nowhere_is_discarded_at_setup_and_after_a_move():
    state, events = start(["C", "U", "E"])
    assert [type(event) for event in events] == [StackShuffled, TileDiscarded, TileDrawn]
    assert events[1].tile == "U" and events[2].tile == "E" and state.tile == TILE_INDEX["E"]
    state, events = play(["C", "F", "X", "E"], [PlaceTile(1, 0, 0, None)])
    assert [type(event) for event in events[-3:]] == [TilePlaced, TileDiscarded, TileDrawn]
    assert events[-2] == TileDiscarded(1, "X") and events[-1] == TileDrawn(1, "E")
    state, events = play(["C", "F", "X"], [PlaceTile(1, 0, 0, None)])
    assert isinstance(events[-1], GameOver) and GAME.result(state) is not None


def test_several_discards_in_a_row_then_a_draw_and_discards_to_the_end():
    """Tiles that fit nowhere (roads, beside a start tile that is city on all four sides) are
    discarded one after the other until one fits; when none fits to the end, it is over."""
    state, events = start(["C", "U", "V", "E"])
    assert events[1:] == [TileDiscarded(0, "U"), TileDiscarded(0, "V"), TileDrawn(0, "E")]
    assert state.drawn == 3 and GAME.to_move(state) == [0]
    state, events = start(["C", "U", "V"])  # nothing fits to the end: over at once
    assert events[1:] == [
        TileDiscarded(0, "U"),
        TileDiscarded(0, "V"),
        GameOver(scores=[0, 0], winners=[0, 1]),
    ]
    assert GAME.result(state) is not None


def test_legal_actions_are_exactly_what_decide_accepts():
    state, _ = play(["D", "U", "K", "E", "V"], [PlaceTile(1, 0, 1, 0), PlaceTile(0, 1, 2, 0)])
    legal = set(GAME.legal_actions(state, 0))
    assert legal
    tried = 0
    for x in range(-3, 4):
        for y in range(-3, 4):
            for rotation in range(4):
                for spot in (None, 0, 1, 2, 3):
                    action = PlaceTile(x, y, rotation, spot)
                    outcome = GAME.decide(state, 0, action)
                    assert isinstance(outcome, list) == (action in legal), action
                    tried += 1
    assert tried == 7 * 7 * 4 * 5
    squares = {(action.x, action.y) for action in legal}
    assert (0, 0) not in squares and all(abs(x) + abs(y) <= 3 for x, y in squares)


def test_rejections_name_the_broken_rule():
    state, _ = start(["D", "E", "E"])
    assert GAME.decide(state, 1, PlaceTile(0, 1, 2, None)).code == "not_your_turn"
    assert GAME.decide(state, 0, PlaceTile(0, 0, 0, None)).code == "bad_square"
    assert GAME.decide(state, 0, PlaceTile(3, 3, 0, None)).code == "bad_square"
    assert GAME.decide(state, 0, PlaceTile(0, 257, 0, None)).code == "bad_square"
    assert GAME.decide(state, 0, PlaceTile(0, 1, 0, None)).code == "edges_do_not_match"
    assert GAME.decide(state, 0, PlaceTile(0, 1, 6, None)).code == "bad_rotation"
    assert GAME.decide(state, 0, PlaceTile(0, 1, 2, 5)).code == "bad_spot"
    assert GAME.decide(state, 0, "PlaceTile").code == "unknown_action"
    state.supply[0] = 0
    assert GAME.decide(state, 0, PlaceTile(0, 1, 2, 0)).code == "no_followers"
    assert all(action.follower is None for action in GAME.legal_actions(state, 0))
    assert isinstance(GAME.decide(state, 0, PlaceTile(0, 1, 2, None)), list)


def test_decide_leaves_the_state_untouched():
    state, _ = play(["D", "M", "D", "N"], [PlaceTile(0, 1, 2, 0), PlaceTile(-1, 0, 0, 0)])
    encoded = msgspec.msgpack.encode(state)
    events = GAME.decide(state, 0, PlaceTile(-1, 1, 1, None))
    assert isinstance(events[-1], GameOver)
    assert msgspec.msgpack.encode(state) == encoded


def test_seven_followers_each_and_two_to_five_players():
    assert (GAME.min_players, GAME.max_players) == (2, 6)  # six only with The Messengers
    for seats in (2, 5):
        state, events = start(["D", "E"], seats)
        assert state.supply == [7] * seats and state.scores == [0] * seats
    assert GAME.resolve_options({}, 6).code == "bad_seat_count"


def test_tile_order_option_is_checked():
    assert GAME.resolve_options({"tile_order": ["D", "Z"]}, 2).code == "bad_option"
    assert GAME.resolve_options({"tile_order": ["D"]}, 2).code == "bad_option"
    assert GAME.resolve_options({"tile_order": ["C", "C"]}, 2).code == "bad_option"
    assert GAME.resolve_options({"tile_order": ["D", "D", "D", "D"]}, 2)["tile_order"]
    assert GAME.resolve_options({}, 3)["tile_order"] is None
    spec = next(option for option in GAME.options if option.name == "tile_order")
    assert spec.secret, "the tile order reveals the stack"


def test_default_setup_shuffles_the_71_tiles_with_the_given_rng():
    events = GAME.setup({"tile_order": None}, 3, random.Random(4))
    started = events[0]
    assert started.start_tile == "D" and started.stack_size == 71
    assert sorted(started.stack + ["D"]) == sorted(
        letter for letter, count in zip(LETTERS, BASE_COUNTS, strict=True) for _ in range(count)
    )
    again = GAME.setup({"tile_order": None}, 3, random.Random(4))
    assert again == events
    assert events[1] == TileDrawn(0, started.stack[0])


# ---------------------------------------------------------------------------- hidden information


def test_stack_order_is_hidden_from_every_seat_and_views_are_public():
    events = GAME.setup({"tile_order": None}, 3, random.Random(9))
    for seat in (None, 0, 1, 2):
        redacted = GAME.redact(events[0], seat)
        assert redacted.stack is None and redacted.stack_size == 71
        assert GAME.redact(events[1], seat) == events[1]
    state = GAME.fold(events)
    views = [GAME.view(state, seat) for seat in (None, 0, 1, 2)]
    assert all(view == views[0] for view in views)
    encoded = msgspec.json.encode(views[0])
    assert b"stack" not in encoded
    assert views[0].tiles_left == 70 and views[0].tile == events[1].tile
    assert views[0].board == [PlacedTile("D", 0, 0, 0)]


def test_view_lists_followers_and_scores():
    state, _ = play(["D", "M", "U", "B"], [PlaceTile(0, 1, 2, 0), PlaceTile(1, 0, 1, 0)])
    view = GAME.view(state, None)
    assert view.supply == [6, 6] and view.to_move == [0] and view.tile == "B"
    assert [(f.seat, f.x, f.y, f.spot, f.feature) for f in view.followers] == [
        (0, 0, 1, 0, "city"),
        (1, 1, 0, 0, "road"),
    ]
    assert len(view.board) == 3 and view.tiles_left == 0


@pytest.mark.parametrize("seats", [2, 4])
def test_state_survives_encoding(seats):
    state, _, _ = random_playout(GAME, seats, random.Random(seats))
    for codec in (msgspec.msgpack, msgspec.json):
        decoded = codec.decode(codec.encode(state), type=CarcassonneState)
        assert decoded == state
