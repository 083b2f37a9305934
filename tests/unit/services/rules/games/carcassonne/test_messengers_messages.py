"""The Messengers' eight messages on hand-built boards (``messengers_boards``): what each
scores or does when carried out, when it cannot be, and where it goes in the stack."""

from __future__ import annotations

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.messengers import (
    MESSAGES,
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    FiguresSummed,
    MessageDrawn,
    MessageResolved,
    Spot,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.scoring import own_followers
from services.rules.games.carcassonne.state import GameOver, PlaceTile, TileDrawn
from services.rules.games.carcassonne.tiles import CLOISTER
from tests.unit.services.rules.games.carcassonne.messengers_boards import (
    CLOSE_BOTH_CITIES,
    CLOSE_NORTH_EAST_CITY,
    CLOSE_ROAD_WITH_MONK,
    CLOSE_START_CITY,
    act,
    draw_message,
    figures,
    of_type,
    play,
    put_figures,
    roads_and_farm,
    shared_city,
    start,
    two_cities,
)

# ---------------------------------------------------------------------------- the messages


def test_message_1_scores_the_cheapest_road_and_the_thieves_stay():
    state, _ = draw_message(roads_and_farm(), CLOSE_NORTH_EAST_CITY)
    supply = list(state.supply)
    assert CarryOutMessage(1) in GAME.legal_actions(state, 0)
    assert GAME.decide(state, 0, CarryOutMessage(1, Spot(1, 0, 0))).code == "bad_follower"
    state, events = act(state, CarryOutMessage(1))
    assert events[:2] == [MessageResolved(0, 1, False, 1), FigureAdvanced(0, 1, 1)]
    assert state.supply == supply and figures(state, 0) == [5, 1] and state.scores[1] == 0


def test_message_2_needs_a_knight_not_the_majority_and_only_you_score():
    state, _ = draw_message(shared_city([2, 1, 3, 4, 5, 6, 7, 8]), CLOSE_ROAD_WITH_MONK)
    state, events = act(state, CarryOutMessage(1))
    assert events[:2] == [MessageResolved(0, 2, False, 5 + 2), FigureAdvanced(0, 1, 7)]
    assert figures(state, 0) == [5, 7] and state.scores[1] == 0 and state.supply == [5, 5]
    followers = GAME.view(state, None).followers
    assert [(f.seat, f.feature) for f in followers if f.feature == "city"] == [
        (1, "city"),
        (1, "city"),
        (0, "city"),
    ]


def test_message_3_scores_the_smallest_cloister_and_1_cannot_be_done_without_a_road():
    state, _ = draw_message(shared_city([3, 1, 2, 4, 5, 6, 7, 8]), CLOSE_ROAD_WITH_MONK)
    state, events = act(state, CarryOutMessage(0))  # monk: 1 + 2 neighbours
    assert events[:2] == [MessageResolved(0, 3, False, 3), FigureAdvanced(0, 0, 3)]
    assert figures(state, 0) == [8, 0] and isinstance(events[-1], TileDrawn)

    state, _ = draw_message(shared_city(), CLOSE_ROAD_WITH_MONK)
    assert GAME.legal_actions(state, 0)[:2] == [TakeMessagePoints(0), TakeMessagePoints(1)]
    assert not [a for a in GAME.legal_actions(state, 0) if isinstance(a, CarryOutMessage)]
    assert GAME.decide(state, 0, CarryOutMessage(0)).code == "cannot_carry_out"
    assert GAME.decide(state, 0, PlaceTile(0, 3, 0, None)).code == "wrong_phase"


def test_message_3_takes_the_cloister_with_fewest_neighbours():
    order = ["D", "B", "U", "B", "U", "E", "U", "U"]
    moves = [
        PlaceTile(0, -1, 0, 0),  # monk of seat 0 south of the start tile
        PlaceTile(1, 0, 1, None),
        PlaceTile(-1, -1, 0, 0),  # a second monk beside the first
        PlaceTile(2, 0, 1, None),
    ]
    state, _ = play(start(order, [3, 1, 2, 4, 5, 6, 7, 8]), *moves)
    own = {f.spot: f.points for f in own_followers(state, 0) if f.kind == CLOISTER}
    assert own == {Spot(0, -1, 0): 1 + 3, Spot(-1, -1, 0): 1 + 2}
    state, _ = draw_message(state, CLOSE_START_CITY)
    state, events = act(state, CarryOutMessage(1))
    assert events[0] == MessageResolved(0, 3, False, 3) and state.supply[0] == 7 - 2


def test_message_4_plays_a_full_extra_turn_that_can_draw_its_own_message():
    state, _ = draw_message(two_cities(messages=[4, 6, 1, 2, 3, 5, 7, 8]), CLOSE_START_CITY)
    assert GAME.decide(state, 0, CarryOutMessage(0)).code == "bad_figure"
    assert CarryOutMessage() in GAME.legal_actions(state, 0)
    state, events = act(state, CarryOutMessage())
    assert events == [MessageResolved(0, 4, False, 0), TileDrawn(0, "H")]
    assert GAME.to_move(state) == [0] and GAME.view(state, None).messengers.phase == "place_tile"
    assert state.messengers.stack == [6, 1, 2, 3, 5, 7, 8]  # 4 stays out: its action goes on
    put_figures(state, 0, 5, 1)
    state, _ = act(state, CLOSE_BOTH_CITIES)
    state, _ = act(state, ChooseFigure(1))
    state, events = act(state, ChooseFigure(0))
    assert figures(state, 0) == [9, 5] and events[-1] == MessageDrawn(0, 6)
    state, events = act(state, CarryOutMessage(0))  # message 6: no knight left, 0 points
    assert events[0] == MessageResolved(0, 6, False, 0)
    assert events[-1] == TileDrawn(1, "U") and GAME.to_move(state) == [1]
    # the extra turn is over: 4 goes under the stack, below the 6 drawn during it
    assert state.messengers.stack == [1, 2, 3, 5, 7, 8, 6, 4]


def test_message_4_goes_under_the_stack_after_the_messages_of_its_extra_turn():
    """RULES.md's example: message 8, drawn during message 4's extra turn, goes under the
    stack when resolved ([5, 6, 3, 2, 1, 7, 8], 4 still out); 4 follows once the turn is
    over, when the next seat draws (the old reading left [5, 6, 3, 2, 1, 7, 4, 8])."""
    messages = [4, 8, 5, 6, 3, 2, 1, 7]
    state, _ = draw_message(two_cities(messages=messages), CLOSE_START_CITY)
    state, _ = act(state, CarryOutMessage())
    put_figures(state, 0, 5, 1)
    state, _ = act(state, CLOSE_BOTH_CITIES)
    state, _ = act(state, ChooseFigure(1))
    state, events = act(state, ChooseFigure(0))
    assert events[-1] == MessageDrawn(0, 8)
    events = GAME.decide(state, 0, TakeMessagePoints(1))
    assert events[0] == MessageResolved(0, 8, True, 2) and events[-1] == TileDrawn(1, "U")
    during = GAME.fold(events[:-1], state)
    assert during.messengers.stack == [5, 6, 3, 2, 1, 7, 8] and during.messengers.held == 4
    after = GAME.fold(events[-1:], during)
    assert after.messengers.stack == [5, 6, 3, 2, 1, 7, 8, 4] and after.messengers.held == 0


def test_message_4_goes_under_the_stack_when_its_extra_turn_ends_the_match():
    state, _ = draw_message(
        two_cities(messages=[4, 6, 1, 2, 3, 5, 7, 8], after=("U",)), CLOSE_START_CITY
    )
    state, events = act(state, CarryOutMessage())
    assert events[-1] == TileDrawn(0, "U") and state.messengers.held == 4
    extra = next(a for a in GAME.legal_actions(state, 0) if a.follower is None)
    state, events = act(state, extra)
    assert isinstance(events[-1], GameOver) and of_type(events, FiguresSummed)
    assert state.messengers.stack[-1] == 4 and state.messengers.held == 0
    assert GAME.view(state, None).messengers.messages_left == 8


def test_message_4_taken_as_points_goes_under_the_stack_at_once():
    state, _ = draw_message(two_cities(messages=[4, 6, 1, 2, 3, 5, 7, 8]), CLOSE_START_CITY)
    state, events = act(state, TakeMessagePoints(1))
    assert events[0] == MessageResolved(0, 4, True, 2)
    assert state.messengers.stack[-1] == 4 and state.messengers.held == 0


def test_message_5_counts_each_pennant_of_a_city_with_your_knight_once():
    state, _ = draw_message(shared_city([5, 1, 2, 3, 4, 6, 7, 8]), CLOSE_ROAD_WITH_MONK)
    state, events = act(state, CarryOutMessage(1))
    assert events[:2] == [MessageResolved(0, 5, False, 2 * 2), FigureAdvanced(0, 1, 4)]


def test_message_6_pays_two_per_knight_whatever_the_majority():
    state, _ = draw_message(shared_city([6, 1, 2, 3, 4, 5, 7, 8]), CLOSE_ROAD_WITH_MONK)
    state, events = act(state, CarryOutMessage(1))
    assert events[0] == MessageResolved(0, 6, False, 2)


def test_message_7_pays_the_data_files_points_per_farmer():
    assert MESSAGES[7].points_each == 2
    state, _ = draw_message(roads_and_farm([7, 1, 2, 3, 4, 5, 6, 8]), CLOSE_NORTH_EAST_CITY)
    state, events = act(state, CarryOutMessage(1))
    assert events[0] == MessageResolved(0, 7, False, MESSAGES[7].points_each)


def test_message_8_scores_a_farm_with_the_majority_and_returns_only_that_farmer():
    state, _ = draw_message(roads_and_farm([8, 1, 2, 3, 4, 5, 6, 7]), CLOSE_NORTH_EAST_CITY)
    carry_outs = [a for a in GAME.legal_actions(state, 0) if isinstance(a, CarryOutMessage)]
    assert {a.follower for a in carry_outs} == {Spot(1, 0, 0), Spot(1, -1, 0), Spot(1, 1, 1)}
    assert len(carry_outs) == 6, "three followers, two figures"
    assert GAME.decide(state, 0, CarryOutMessage(0)).code == "bad_follower"
    assert GAME.decide(state, 0, CarryOutMessage(0, Spot(0, 0, 2))).code == "bad_follower"
    supply = state.supply[0]
    state, events = act(state, CarryOutMessage(0, Spot(1, 1, 1)))
    assert events[:2] == [
        MessageResolved(0, 8, False, 3 * 2, Spot(1, 1, 1)),
        FigureAdvanced(0, 0, 6),
    ]
    assert figures(state, 0) == [11, 0] and state.supply[0] == supply + 1
    assert [f.feature for f in GAME.view(state, None).followers] == ["road", "road"]


def test_message_8_gives_nothing_without_the_majority_but_returns_the_follower():
    state, _ = draw_message(shared_city([8, 1, 2, 3, 4, 5, 6, 7]), CLOSE_ROAD_WITH_MONK)
    state, events = act(state, CarryOutMessage(1, Spot(0, 1, 0)))
    assert events[0] == MessageResolved(0, 8, False, 0, Spot(0, 1, 0))
    assert not of_type(events, FigureAdvanced) and state.supply == [6, 5]
    followers = GAME.view(state, None).followers
    assert sorted((f.seat, f.feature) for f in followers) == [
        (0, "cloister"),
        (1, "city"),
        (1, "city"),
    ]


def test_message_8_counts_a_tie_as_the_majority_and_returns_a_monk():
    order = ["D", "U", "E", "E", "U", "E", "U", "U"]
    moves = [
        PlaceTile(1, 0, 1, 2),  # farmer of seat 0 north of the start road
        PlaceTile(0, 1, 2, 1),  # E closes the start city; farmer of seat 1 beyond it
        PlaceTile(1, 1, 0, None),  # E joins both farms: one farmer each
        PlaceTile(-1, 0, 1, None),
    ]
    state, _ = play(start(order, [8, 1, 2, 3, 4, 5, 6, 7]), *moves)
    state, _ = draw_message(state, CLOSE_NORTH_EAST_CITY)
    state, events = act(state, CarryOutMessage(0, Spot(1, 0, 2)))
    assert events[0] == MessageResolved(0, 8, False, 6, Spot(1, 0, 2))
    assert [(f.seat, f.x, f.y) for f in GAME.view(state, None).followers] == [(1, 0, 1)]

    state, _ = draw_message(shared_city([8, 1, 2, 3, 4, 5, 6, 7]), CLOSE_ROAD_WITH_MONK)
    state, events = act(state, CarryOutMessage(0, Spot(-2, 0, 0)))
    assert events[0] == MessageResolved(0, 8, False, 3, Spot(-2, 0, 0))
    assert state.cloisters == {} and state.supply[0] == 7 - 1
