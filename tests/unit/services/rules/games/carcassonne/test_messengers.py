"""The Messengers on hand-built boards (``messengers_boards``): options and setup, the figures
and preferences, when a message is drawn, the end of the game, and that the legal actions are
exactly what ``decide`` accepts in every phase. The messages themselves:
``test_messengers_messages.py``."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.messengers import (
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
from services.rules.games.carcassonne.state import (
    CarcassonneState,
    FeatureScored,
    GameOver,
    PlaceTile,
    TileDrawn,
)
from services.rules.games.carcassonne.tiles import CITY
from tests.unit.services.rules.games.carcassonne.messengers_boards import (
    CLOSE_BOTH_CITIES,
    CLOSE_ROAD_WITH_MONK,
    CLOSE_START_CITY,
    IN_ORDER,
    act,
    draw_message,
    figures,
    of_type,
    put_figures,
    shared_city,
    two_cities,
)

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
