"""The Messengers on hand-built boards: figures, preferences, message draws, all 8 messages.

Boards are played move by move from a fixed ``tile_order`` and ``message_order``. Where a
scenario needs figures at given points, ``put_figures`` sets them (and the score they sum to)
before the deciding move, as the base tests set a supply.
"""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.messengers import (
    MESSAGES,
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    FiguresSummed,
    MessageDrawn,
    MessageResolved,
    MessagesShuffled,
    PreferenceSet,
    SetScoringPreference,
    Spot,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.scoring import own_followers
from services.rules.games.carcassonne.state import (
    CarcassonneState,
    FeatureScored,
    GameOver,
    PlaceTile,
    TileDrawn,
)
from services.rules.games.carcassonne.tiles import CITY, CLOISTER, ROAD
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


# ---------------------------------------------------------------------------- options


def test_options_and_player_counts():
    names = [spec.name for spec in GAME.options]
    assert names == [
        "tile_order",
        "messengers",
        "messengers_edition",
        "zmg_alone_rule",
        "message_order",
        "inns_cathedrals",
        "traders_builders",
    ]
    specs = {spec.name: spec for spec in GAME.options}
    assert specs["messengers"].default is False
    assert specs["messengers_edition"].choices == ["C2", "C3"]
    assert specs["messengers_edition"].default == "C3"
    assert specs["message_order"].secret and specs["message_order"].type == "list[int]"
    assert GAME.max_players == 6
    assert GAME.resolve_options({}, 6).code == "bad_seat_count"
    assert GAME.resolve_options({"messengers": True}, 6)["messengers"] is True
    assert GAME.resolve_options({}, 7).code == "bad_seat_count"
    refused = [
        {"message_order": IN_ORDER},
        {"zmg_alone_rule": True},
        {"messengers_edition": "C2"},
        {"messengers": True, "zmg_alone_rule": True},  # C3 dropped the ZMG reading
        {"messengers": True, "message_order": [1, 2, 3]},
        {"messengers": True, "message_order": [1, 1, 2, 3, 4, 5, 6, 7]},
        {"messengers": True, "message_order": [0, 1, 2, 3, 4, 5, 6, 7]},
        {"messengers": True, "messengers_edition": "C1"},
    ]
    for options in refused:
        assert GAME.resolve_options(options, 2).code == "bad_option", options
    accepted = GAME.resolve_options(
        {"messengers": True, "messengers_edition": "C2", "zmg_alone_rule": True}, 2
    )
    assert accepted["zmg_alone_rule"] is True


def test_setup_shuffles_the_messages_after_the_tiles_and_hides_their_order():
    plain = GAME.setup(GAME.resolve_options({}, 3), 3, random.Random(5))
    events = GAME.setup(GAME.resolve_options({"messengers": True}, 3), 3, random.Random(5))
    assert events[0] == plain[0] and events[2:] == plain[1:]
    shuffled = events[1]
    assert isinstance(shuffled, MessagesShuffled) and sorted(shuffled.order) == IN_ORDER
    assert (shuffled.size, shuffled.edition, shuffled.zmg_alone_rule) == (8, "C3", False)
    others = GAME.setup(GAME.resolve_options({"messengers": True}, 3), 3, random.Random(6))
    assert others[1].order != shuffled.order
    assert not any(isinstance(event, MessagesShuffled) for event in plain)
    for seat in (None, 0, 1, 2):
        redacted = GAME.redact(shuffled, seat)
        assert redacted.order is None and redacted.size == 8
    state = GAME.fold(events)
    assert state.messengers.stack == shuffled.order
    view = GAME.view(state, 1)
    assert view == GAME.view(state, None)
    assert view.messengers.messages_left == 8 and view.messengers.phase == "place_tile"
    encoded = msgspec.json.encode(view)
    assert b"order" not in encoded and b"stack" not in encoded


def test_explicit_message_order_is_the_draw_order_and_a_message_goes_under_the_stack():
    order = [3, 1, 2, 4, 5, 6, 7, 8]
    state, events = draw_message(two_cities(messages=order), CLOSE_START_CITY)
    assert events[-1] == MessageDrawn(0, 3)
    assert state.messengers.stack == [1, 2, 4, 5, 6, 7, 8]
    view = GAME.view(state, 1)
    assert view.messengers.message == 3 and view.messengers.messages_left == 7
    assert view.messengers.phase == "resolve_message" and view.to_move == [0]
    assert GAME.redact(events[-1], 1) == events[-1], "a drawn message is public"
    state, events = act(state, TakeMessagePoints(1))
    assert events[0] == MessageResolved(0, 3, True, 2)
    assert state.messengers.stack == [1, 2, 4, 5, 6, 7, 8, 3]


def test_base_game_has_no_messenger_actions():
    state = GAME.fold(GAME.setup(GAME.resolve_options({}, 2), 2, random.Random(1)))
    assert state.messengers is None and GAME.view(state, None).messengers is None
    assert GAME.legal_actions(state, 1) == []
    assert GAME.decide(state, 0, SetScoringPreference(1)).code == "unknown_action"
    assert GAME.decide(state, 0, ChooseFigure(0)).code == "unknown_action"


# ---------------------------------------------------------------------------- figures


def test_active_player_chooses_a_figure_per_feature_before_the_turn_passes():
    state = two_cities("H")
    state, events = act(state, CLOSE_BOTH_CITIES)
    assert [(e.feature, e.points, e.seats) for e in of_type(events, FeatureScored)] == [
        ("city", 4, [0]),
        ("city", 4, [0]),
    ]
    assert not of_type(events, FigureAdvanced) and not of_type(events, TileDrawn)
    assert state.scores == [0, 0] and state.supply == [7, 7], "followers return at once"
    view = GAME.view(state, None)
    assert view.messengers.phase == "choose_figure" and view.tile is None
    assert [(p.feature, p.points) for p in view.messengers.pending] == [("city", 4)] * 2
    assert GAME.legal_actions(state, 0)[:2] == [ChooseFigure(0), ChooseFigure(1)]
    assert GAME.decide(state, 0, PlaceTile(0, 1, 2, None)).code == "wrong_phase"
    assert GAME.decide(state, 0, ChooseFigure(2)).code == "bad_figure"
    assert GAME.decide(state, 1, ChooseFigure(0)).code == "not_your_turn"
    state, events = act(state, ChooseFigure(1))
    assert events == [FigureAdvanced(0, 1, 4)] and figures(state, 0) == [0, 4]
    state, events = act(state, ChooseFigure(0))
    assert events[0] == FigureAdvanced(0, 0, 4) and isinstance(events[-1], TileDrawn)
    assert figures(state, 0) == [4, 4] and state.scores == [8, 0]
    assert GAME.to_move(state) == [1] and GAME.view(state, None).messengers.pending == []


def test_other_players_points_follow_their_standing_preference():
    state = two_cities("H", seat_one_knight=True)
    put_figures(state, 1, 3, 1)
    state, events = act(state, CLOSE_BOTH_CITIES)
    assert of_type(events, FigureAdvanced) == [FigureAdvanced(1, 1, 4)], "default: behind"
    assert figures(state, 1) == [3, 5] and state.messengers.pending == [(CITY, 4)]

    state = two_cities("H", seat_one_knight=True)
    assert GAME.legal_actions(state, 1) == [SetScoringPreference(0), SetScoringPreference(1)]
    state, events = act(state, SetScoringPreference(0), seat=1)  # not seat 1's turn
    assert events == [PreferenceSet(1, 0)] and GAME.to_move(state) == [0]
    assert GAME.view(state, 0).messengers.preferences == [None, 0]
    assert GAME.decide(state, 1, SetScoringPreference(0)).code == "preference_unchanged"
    assert GAME.decide(state, 1, SetScoringPreference(5)).code == "bad_figure"
    put_figures(state, 1, 9, 0)
    state, events = act(state, CLOSE_BOTH_CITIES)
    assert of_type(events, FigureAdvanced) == [FigureAdvanced(1, 0, 4)]
    state, _ = act(state, SetScoringPreference(None), seat=1)  # mid-turn, while 0 chooses
    assert state.messengers.preferences == [-1, -1]
    assert SetScoringPreference(1) in GAME.legal_actions(state, 0), "the active seat too"


def test_tied_figures_default_to_the_scoring_figure():
    state, events = act(two_cities("H", seat_one_knight=True), CLOSE_BOTH_CITIES)
    assert of_type(events, FigureAdvanced) == [FigureAdvanced(1, 0, 4)]


# ---------------------------------------------------------------------------- drawing messages


def test_only_one_message_when_both_figures_stop_on_dark_spaces():
    state = two_cities("H")
    put_figures(state, 0, 1, 6)
    state, _ = act(state, CLOSE_BOTH_CITIES)
    state, events = act(state, ChooseFigure(0))
    assert events == [FigureAdvanced(0, 0, 4)], "drawn only after the whole scoring step"
    state, events = act(state, ChooseFigure(1))
    assert figures(state, 0) == [5, 10]
    assert events == [FigureAdvanced(0, 1, 4), MessageDrawn(0, 1)]
    state, events = act(state, TakeMessagePoints(0))
    assert of_type(events, MessageDrawn) == [] and isinstance(events[-1], TileDrawn)


def test_only_where_the_moved_figures_stop_counts():
    state = two_cities("H")
    put_figures(state, 0, 1, 5)  # the messenger already stands on a dark space
    state, _ = act(state, CLOSE_BOTH_CITIES)
    state, _ = act(state, ChooseFigure(0))  # 5: passed, not where it stops
    state, events = act(state, ChooseFigure(0))
    assert figures(state, 0) == [9, 5]
    assert not of_type(events, MessageDrawn) and isinstance(events[-1], TileDrawn)


def test_no_message_for_a_player_outside_their_turn():
    state = two_cities("H", seat_one_knight=True)
    put_figures(state, 1, 1, 3)
    state, events = act(state, CLOSE_BOTH_CITIES)
    assert FigureAdvanced(1, 0, 4) in events and figures(state, 1) == [5, 3]
    state, events = act(state, ChooseFigure(1))
    assert not of_type(events, MessageDrawn) and isinstance(events[-1], TileDrawn)


def test_dark_spaces_past_fifty_and_a_message_chain():
    state = two_cities()
    put_figures(state, 0, 46, 3)
    state, _ = act(state, CLOSE_START_CITY)
    state, events = act(state, ChooseFigure(0))
    assert figures(state, 0) == [50, 3] and events[-1] == MessageDrawn(0, 1)
    state, events = act(state, TakeMessagePoints(1))  # 2 points land the messenger on 5
    assert events == [MessageResolved(0, 1, True, 2), FigureAdvanced(0, 1, 2), MessageDrawn(0, 2)]
    state, events = act(state, TakeMessagePoints(1))  # 7: the chain ends
    assert events[:2] == [MessageResolved(0, 2, True, 2), FigureAdvanced(0, 1, 2)]
    assert isinstance(events[-1], TileDrawn) and GAME.to_move(state) == [1]
    assert state.scores[0] == 50 + 7 and state.messengers.stack == [3, 4, 5, 6, 7, 8, 1, 2]


def test_message_without_points_draws_no_further_message():
    state, _ = draw_message(shared_city([7, 1, 2, 3, 4, 5, 6, 8]), CLOSE_ROAD_WITH_MONK)
    state, events = act(state, CarryOutMessage(0))  # no farmer: 0 points
    assert events[0] == MessageResolved(0, 7, False, 0)
    assert not of_type(events, FigureAdvanced) and isinstance(events[-1], TileDrawn)
    assert figures(state, 0) == [5, 0]


@pytest.mark.parametrize(
    ("others", "mine", "drawn"),
    [
        ((5, 0), (1, 0), False),  # another player's figure on the same dark space
        ((55, 0), (1, 0), False),  # the same space one lap on
        ((10, 0), (1, 0), True),
        ((0, 3), (1, 5), True),  # your own other figure does not count
    ],
)
def test_zmg_reading_draws_only_when_alone_on_the_space(others, mine, drawn):
    state = two_cities(messengers_edition="C2", zmg_alone_rule=True)
    put_figures(state, 1, *others)
    put_figures(state, 0, *mine)
    state, _ = act(state, CLOSE_START_CITY)
    state, events = act(state, ChooseFigure(0))
    assert figures(state, 0)[0] == 5
    assert bool(of_type(events, MessageDrawn)) is drawn
    assert GAME.view(state, None).messengers.zmg_alone_rule


def test_without_the_zmg_reading_a_shared_dark_space_draws():
    state = two_cities()
    put_figures(state, 1, 5, 0)
    state, events = draw_message(state, CLOSE_START_CITY)
    assert events[-1] == MessageDrawn(0, 1)


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


# ---------------------------------------------------------------------------- end of the game


def test_last_placements_messages_come_before_final_scoring_which_draws_none():
    state = two_cities("H", messages=[4, 1, 2, 3, 5, 6, 7, 8], after=())
    put_figures(state, 0, 1, 2)
    state, _ = act(state, PlaceTile(0, -1, 1, 2))  # H closes both cities; a farmer on H
    state, _ = act(state, ChooseFigure(0))
    state, events = act(state, ChooseFigure(1))
    assert events[-1] == MessageDrawn(0, 4) and GAME.result(state) is None
    assert GAME.legal_actions(state, 0)[:2] == [TakeMessagePoints(0), TakeMessagePoints(1)]
    assert CarryOutMessage() not in GAME.legal_actions(state, 0), "no land tile left"
    assert GAME.decide(state, 0, CarryOutMessage()).code == "cannot_carry_out"
    state, events = act(state, TakeMessagePoints(1))
    summed = of_type(events, FiguresSummed)
    assert summed == [FiguresSummed([5 + 8, 0])]
    start_of_final = events.index(summed[0])
    assert not of_type(events[start_of_final:], MessageDrawn)
    assert not of_type(events[start_of_final:], FigureAdvanced)
    finals = of_type(events, FeatureScored)
    assert [(e.feature, e.points, e.seats, e.final) for e in finals] == [("field", 6, [0], True)]
    assert isinstance(events[-1], GameOver) and events[-1].scores == [13 + 6, 0]
    assert figures(state, 0) == [events[-1].scores[0], 0] and state.messengers.summed
    assert GAME.legal_actions(state, 1) == [] and GAME.to_move(state) == []
    assert GAME.decide(state, 1, SetScoringPreference(1)).code == "game_over"


# ---------------------------------------------------------------------------- contract checks


def candidate_actions(state) -> list:
    spots = [Spot(x, y, spot) for x in range(-2, 3) for y in range(-1, 3) for spot in range(4)]
    actions = [SetScoringPreference(f) for f in (None, 0, 1, 2)]
    actions += [ChooseFigure(f) for f in (-1, 0, 1, 2)]
    actions += [TakeMessagePoints(f) for f in (0, 1, 2)]
    actions += [CarryOutMessage(f) for f in (None, 0, 1, 2)]
    actions += [CarryOutMessage(f, spot) for f in (None, 0, 1) for spot in spots]
    actions += [
        PlaceTile(x, y, r, None) for x in range(-3, 4) for y in range(-2, 4) for r in (0, 1)
    ]
    return actions


@pytest.mark.parametrize("phase", ["place", "choose", 1, 2, 3, 4, 5, 6, 7, 8])
def test_legal_actions_are_exactly_what_decide_accepts_and_decide_is_pure(phase):
    first = phase if isinstance(phase, int) else 1
    state = shared_city([first, *[m for m in IN_ORDER if m != first]])
    if phase != "place":
        put_figures(state, 0, 1, 0)
        state, _ = act(state, CLOSE_ROAD_WITH_MONK)
    if phase not in ("place", "choose"):
        state, _ = act(state, ChooseFigure(0))
        assert state.messengers.message == phase
    others = [a for a in GAME.legal_actions(state, 0) if not isinstance(a, PlaceTile)]
    expected = {"place": 2, "choose": 4, 4: 5, 8: 8}.get(phase, 4 if phase == 1 else 6)
    assert len(others) == expected, others
    assert len(GAME.legal_actions(state, 1)) == 2, "seat 1 may only change its preference"
    encoded = msgspec.msgpack.encode(state)
    for seat in (0, 1):
        legal = GAME.legal_actions(state, seat)
        for action in [*candidate_actions(state), *legal]:
            outcome = GAME.decide(state, seat, action)
            assert isinstance(outcome, list) == (action in legal), (seat, action, outcome)
    assert msgspec.msgpack.encode(state) == encoded
    decoded = msgspec.msgpack.decode(encoded, type=CarcassonneState)
    assert (
        decoded == state
        and msgspec.json.decode(msgspec.json.encode(state), type=CarcassonneState) == state
    )
