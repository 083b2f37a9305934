"""Dingo rules, scenario by scenario, on explicit deals (seat 0 red, 1 yellow, 2 green, ...):
the deal, the four actions, effects, the special rule, the end of a day."""

from __future__ import annotations

import random

import pytest

from services.rules.games.dingo import GAME
from services.rules.games.dingo.cards import CARD_ID
from services.rules.games.dingo.state import (
    CardDiscarded,
    CardPlayed,
    CardRemoved,
    DayEnded,
    DayStarted,
    DestroyProtected,
    DiscardCard,
    GameStarted,
    PlayCard,
    ProtectedCardDestroyed,
    TurnEnded,
)
from tests.unit.services.rules.games.dingo.scenarios import (
    TWO,
    act,
    deck_order,
    discard_until_day_ends,
    names,
    place,
    refused,
    start,
)

# --- Days and the deal ----------------------------------------------------------------------


def test_the_deal_follows_the_deck_order_from_the_start_player():
    ranches = ["red-lion-5", "yellow-baby-2", "green-dingo-3"]
    hands = [
        ["red-baby-1", "red-baby-2"],
        ["blue-lion-5", "blue-lion-6"],
        ["purple-moon-1", "blue-moon-1"],
    ]
    order = deck_order(ranches, hands, ["purple-monkey-3"], first=1)
    assert order[:9] == [
        "yellow-baby-2", "green-dingo-3", "red-lion-5",
        "blue-lion-5", "purple-moon-1", "red-baby-1",
        "blue-lion-6", "blue-moon-1", "red-baby-2",
    ]  # fmt: skip
    events = GAME.setup(
        GAME.resolve_options({"deck_order": order, "die_rolls": [7], "first_player": 1}, 3),
        3,
        random.Random(0),
    )
    assert [type(event) for event in events] == [GameStarted, DayStarted]
    day = events[1]
    assert (day.day, day.start_player, day.roll, day.target) == (1, 1, 7, 17)
    assert day.ranches == ranches and day.hands == hands and day.draw_pile == order[9:]
    state = GAME.fold(events)
    assert [names(ranch) for ranch in state.ranches] == [[card] for card in ranches]
    assert state.seat_to_move == 1 and GAME.to_move(state) == [1]
    assert GAME.view(state, 0).draw_pile == 51


def test_the_start_player_rotates_and_every_day_has_its_own_deck_and_roll():
    first_day = deck_order(**TWO)
    second_day = list(reversed(CARD_ID))
    options = {
        "deck_order": first_day + second_day,
        "die_rolls": [3, 9],
        "first_player": 1,
        "two_player_six": False,
    }
    state = GAME.fold(GAME.setup(GAME.resolve_options(options, 2), 2, random.Random(0)))
    assert (state.day, state.target, state.seat_to_move) == (1, 13, 1)
    events = discard_until_day_ends(state)
    assert [type(event) for event in events] == [CardDiscarded, DayEnded, DayStarted]
    assert events[1].reason == "discard_limit"
    assert (state.day, state.roll, state.target, state.start_player) == (2, 9, 19, 0)
    assert names(state.ranches[0]) == [second_day[0]] and names(state.ranches[1]) == [second_day[1]]
    assert names(state.hands[0]) == [second_day[2], second_day[4]] and state.discards == []
    discard_until_day_ends(state)
    assert state.day == 3 and state.start_player == 1 and 11 <= state.target <= 20


# --- The four actions -----------------------------------------------------------------------


def test_a_card_of_any_colour_goes_to_the_right_of_the_own_ranch_then_draw_back_up():
    state = start(**TWO)
    events = act(state, 0, PlayCard("blue-dingo-3", 0))
    assert events == [
        CardPlayed(0, "blue-dingo-3", 0),
        TurnEnded(0, 1, ["purple-monkey-3"]),
    ]
    assert names(state.ranches[0]) == ["red-lion-5", "blue-dingo-3"]
    assert names(state.hands[0]) == ["red-baby-1", "purple-monkey-3"]
    assert state.seat_to_move == 1 and GAME.view(state, 1).ranches[0].value == 8


def test_an_opponents_ranch_takes_only_its_starting_colour_or_a_colour_on_it():
    state = start(
        ["red-lion-5", "blue-baby-2"],
        [["yellow-baby-1", "green-dingo-3"], ["green-lion-6", "yellow-dingo-4"]],
        ["blue-dingo-4"],
    )
    rejection = refused(state, 0, PlayCard("green-dingo-3", 1))
    assert rejection.code == "colour_not_on_ranch"
    events = act(state, 0, PlayCard("yellow-baby-1", 1))  # seat 1's starting colour
    assert events[0] == CardPlayed(0, "yellow-baby-1", 1)
    assert names(state.ranches[1]) == ["blue-baby-2", "yellow-baby-1"]
    assert refused(state, 1, PlayCard("green-lion-6", 0)).code == "colour_not_on_ranch"
    act(state, 1, PlayCard("yellow-dingo-4", 1))
    act(state, 0, PlayCard("blue-dingo-4", 1))  # blue is on seat 1's ranch
    assert names(state.ranches[1])[-1] == "blue-dingo-4"
    assert refused(state, 1, PlayCard("green-lion-6", 7)).code == "unknown_seat"


def test_destroying_the_own_protected_card_needs_more_than_one_ranch_card():
    state = start(**TWO)
    assert refused(state, 0, DestroyProtected()).code == "lone_ranch_card"
    place(state, 0, "purple-baby-1", "purple-moon-1")  # a moon guards only against effects
    events = act(state, 0, DestroyProtected())
    assert events == [ProtectedCardDestroyed(0, "red-lion-5"), TurnEnded(0, 0, [])]
    assert names(state.ranches[0]) == ["purple-baby-1", "purple-moon-1"]
    assert GAME.view(state, 1).ranches[0].protected == "purple-baby-1"
    assert names(state.discards) == ["red-lion-5"] and len(state.hands[0]) == 2


def test_a_discard_fills_the_pile_and_draws_a_new_card():
    state = start(**TWO)
    events = act(state, 0, DiscardCard("blue-dingo-3"))
    assert events == [CardDiscarded(0, "blue-dingo-3"), TurnEnded(0, 1, ["purple-monkey-3"])]
    assert names(state.discards) == ["blue-dingo-3"]
    assert names(state.hands[0]) == ["red-baby-1", "purple-monkey-3"]
    assert refused(state, 1, DiscardCard("red-baby-1")).code == "not_in_hand"
    assert refused(state, 0, DiscardCard("green-lion-6")).code == "not_your_turn"


# --- Effects --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("card", "target", "keyword"),
    [
        ("red-baby-1", "blue-elephant-6", "scare"),
        ("red-elephant-6", "blue-lion-5", "stomp"),
        ("red-lion-5", "blue-dingo-3", "eat"),
        ("red-dingo-3", "blue-baby-1", "eat"),
        ("red-monkey-3", "blue-sunlight-2", "chase"),
        ("red-sunlight-2", "blue-darkness-2", "destroy"),
        ("red-sunlight-2", "blue-moon-1", "destroy"),
        ("red-darkness-2", "blue-monkey-3", "scare"),
    ],
)
def test_each_effect_removes_its_kind_from_any_ranch(card, target, keyword):
    state = start(
        ["purple-lion-6", "yellow-baby-2", "green-lion-6"],
        [[card, "red-moon-1"], ["yellow-dingo-4", "green-dingo-4"], ["red-baby-2", "red-lion-6"]],
    )
    place(state, 2, target, "purple-baby-1")
    events = act(state, 0, PlayCard(card, 0, target))
    assert events[:2] == [CardPlayed(0, card, 0), CardRemoved(0, target, 2, keyword)]
    assert names(state.ranches[2]) == ["green-lion-6", "purple-baby-1"]
    assert names(state.ranches[0]) == ["purple-lion-6", card]
    assert names(state.discards) == [target]


def test_an_effect_may_be_declined_and_only_hits_the_kinds_it_names():
    state = start(**TWO)
    place(state, 1, "blue-baby-1", "blue-lion-5")
    rejection = refused(state, 0, PlayCard("blue-dingo-3", 0, "blue-lion-5"))
    assert rejection.code == "wrong_target_kind" and "baby" in rejection.detail
    assert refused(state, 0, PlayCard("purple-moon-1", 0, "blue-baby-1")).code == "not_in_hand"
    events = act(state, 0, PlayCard("blue-dingo-3", 0))  # declined: the baby stays
    assert [type(event) for event in events] == [CardPlayed, TurnEnded]
    assert names(state.ranches[1]) == ["yellow-baby-2", "blue-baby-1", "blue-lion-5"]
    act(state, 1, DiscardCard("green-lion-6"))
    rejection = refused(state, 0, PlayCard("purple-monkey-3", 0, "blue-lion-5"))
    assert rejection.code == "wrong_target_kind"
    assert refused(state, 0, PlayCard("red-baby-1", 0, "purple-moon-1")).code == (
        "target_not_in_a_ranch"
    )


def test_playing_onto_an_opponent_and_removing_from_a_third_ranch_or_the_own():
    state = start(
        ["red-lion-5", "yellow-baby-2", "green-dingo-3"],
        [
            ["yellow-dingo-4", "green-lion-6"],
            ["red-baby-1", "red-baby-2"],
            ["blue-moon-1", "purple-moon-1"],
        ],
    )
    place(state, 2, "purple-baby-1")
    place(state, 0, "blue-dingo-3")
    offered = GAME.legal_actions(state, 0)
    assert PlayCard("yellow-dingo-4", 1, "purple-baby-1") in offered
    assert PlayCard("green-lion-6", 2, "blue-dingo-3") in offered  # its own ranch's dingo
    assert PlayCard("green-lion-6", 1, "blue-dingo-3") not in offered  # green is not on 1
    events = act(state, 0, PlayCard("yellow-dingo-4", 1, "purple-baby-1"))
    assert events[1] == CardRemoved(0, "purple-baby-1", 2, "eat")
    assert names(state.ranches[1]) == ["yellow-baby-2", "yellow-dingo-4"]
    act(state, 1, DiscardCard("red-baby-1"))
    act(state, 2, DiscardCard("blue-moon-1"))
    act(state, 0, PlayCard("green-lion-6", 2, "blue-dingo-3"))
    assert names(state.ranches[0]) == ["red-lion-5"]
    assert names(state.ranches[2]) == ["green-dingo-3", "green-lion-6"]


def test_effects_never_remove_a_protected_card_not_even_the_own():
    state = start(
        ["red-dingo-3", "yellow-dingo-4"],
        [["red-lion-5", "blue-baby-1"], ["green-lion-6", "blue-baby-2"]],
    )
    assert refused(state, 0, PlayCard("red-lion-5", 0, "yellow-dingo-4")).code == "target_protected"
    assert refused(state, 0, PlayCard("red-lion-5", 0, "red-dingo-3")).code == "target_protected"
    offered = GAME.legal_actions(state, 0)
    assert not any(isinstance(a, PlayCard) and a.target for a in offered)


def test_the_moon_guards_the_card_directly_to_its_left():
    state = start(
        ["red-dingo-3", "yellow-baby-2"],
        [["red-baby-1", "red-sunlight-2"], ["green-lion-6", "blue-baby-2"]],
        ["red-baby-2", "purple-dingo-4"],
    )
    place(state, 1, "blue-elephant-6", "blue-moon-1", "green-elephant-7")
    rejection = refused(state, 0, PlayCard("red-baby-1", 0, "blue-elephant-6"))
    assert rejection.code == "target_moon_guarded"
    assert PlayCard("red-baby-1", 0, "green-elephant-7") in GAME.legal_actions(state, 0)
    assert GAME.view(state, 0).ranches[1].moon_guarded == ["blue-elephant-6"]
    events = act(state, 0, PlayCard("red-sunlight-2", 0, "blue-moon-1"))  # day breaks
    assert events[1] == CardRemoved(0, "blue-moon-1", 1, "destroy")
    act(state, 1, DiscardCard("blue-baby-2"))
    act(state, 0, PlayCard("red-baby-1", 0, "blue-elephant-6"))
    assert names(state.ranches[1]) == ["yellow-baby-2", "green-elephant-7"]


def test_a_moon_played_last_guards_the_card_it_joins():
    state = start(
        ["red-dingo-3", "yellow-baby-2"],
        [["red-moon-1", "red-lion-5"], ["green-baby-1", "yellow-lion-6"]],
    )
    place(state, 0, "blue-dingo-4")
    assert PlayCard("red-lion-5", 0, "blue-dingo-4") in GAME.legal_actions(state, 0)
    act(state, 0, PlayCard("red-moon-1", 0))
    rejection = refused(state, 1, PlayCard("yellow-lion-6", 1, "blue-dingo-4"))
    assert rejection.code == "target_moon_guarded"
    act(state, 1, DiscardCard("green-baby-1"))
    assert refused(state, 0, PlayCard("red-lion-5", 0, "blue-dingo-4")).code == (
        "target_moon_guarded"
    )


# --- The special rule -----------------------------------------------------------------------


def test_a_colour_already_on_the_own_ranch_lets_the_player_destroy_the_protected_card():
    state = start(
        ["blue-lion-5", "yellow-baby-2"],
        [["red-baby-1", "blue-baby-2"], ["yellow-dingo-4", "green-lion-6"]],
        ["yellow-lion-5", "purple-baby-1"],
    )
    # The starting card (red) does not count: only cards on the ranch.
    assert refused(state, 0, PlayCard("red-baby-1", 0, None, True)).code == "colour_not_on_ranch"
    assert PlayCard("red-baby-1", 0) in GAME.legal_actions(state, 0)
    events = act(state, 0, PlayCard("blue-baby-2", 0, None, True))
    assert events == [
        CardPlayed(0, "blue-baby-2", 0),
        ProtectedCardDestroyed(0, "blue-lion-5"),
        TurnEnded(0, 1, ["yellow-lion-5"]),
    ]
    assert names(state.ranches[0]) == ["blue-baby-2"] and names(state.discards) == ["blue-lion-5"]
    assert refused(state, 1, PlayCard("green-lion-6", 1, None, True)).code == (
        "colour_not_on_ranch"
    )
    assert PlayCard("yellow-dingo-4", 1, None, True) in GAME.legal_actions(state, 1)
    act(state, 1, DiscardCard("green-lion-6"))
    assert refused(state, 0, PlayCard("yellow-lion-5", 1, None, True)).code == "not_own_ranch"
    assert PlayCard("yellow-lion-5", 1) in GAME.legal_actions(state, 0)


def test_the_effect_resolves_before_the_special_destruction():
    state = start(
        ["blue-lion-5", "yellow-baby-2"],
        [["blue-dingo-3", "red-baby-1"], ["yellow-dingo-4", "green-lion-6"]],
    )
    place(state, 0, "purple-baby-1", "green-moon-1")
    place(state, 1, "blue-baby-1")
    offered = GAME.legal_actions(state, 0)
    assert PlayCard("blue-dingo-3", 0, "blue-baby-1", True) in offered
    assert PlayCard("blue-dingo-3", 0, "purple-baby-1", True) not in offered  # moon-guarded
    events = act(state, 0, PlayCard("blue-dingo-3", 0, "blue-baby-1", True))
    assert [type(event) for event in events] == [
        CardPlayed,
        CardRemoved,
        ProtectedCardDestroyed,
        TurnEnded,
    ]
    assert names(state.ranches[0]) == ["purple-baby-1", "green-moon-1", "blue-dingo-3"]
    assert names(state.discards) == ["blue-baby-1", "blue-lion-5"]


# --- End of a day ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seats", "options", "limit"),
    [(2, {}, 6), (2, {"two_player_six": False}, 4), (3, {}, 6), (4, {}, 8), (5, {}, 10)],
)
def test_a_day_ends_when_the_discard_pile_reaches_twice_the_player_count(seats, options, limit):
    state = GAME.fold(GAME.setup(GAME.resolve_options(options, seats), seats, random.Random(5)))
    assert state.discard_limit == limit
    for discarded in range(1, limit):
        events = act(
            state, state.seat_to_move, DiscardCard(CARD_ID[state.hands[state.seat_to_move][0]])
        )
        assert len(state.discards) == discarded and state.day == 1
        assert isinstance(events[-1], TurnEnded)
    events = discard_until_day_ends(state)
    assert [type(event) for event in events] == [CardDiscarded, DayEnded, DayStarted]
    assert state.day == 2 and state.discards == []


def test_reaching_the_limit_mid_turn_drops_the_rest_of_the_turn():
    state = start(
        ["red-lion-5", "yellow-lion-5"],
        [["red-baby-1", "red-baby-2"], ["yellow-baby-1", "green-lion-6"]],
        ["purple-baby-1", "purple-baby-2", "purple-dingo-3"],
        roll=10,
        two_player_six=False,
    )
    place(state, 0, "blue-elephant-6")
    act(state, 0, DiscardCard("red-baby-1"))
    act(state, 1, DiscardCard("green-lion-6"))
    act(state, 0, DiscardCard("red-baby-2"))
    events = act(state, 1, PlayCard("yellow-baby-1", 1, "blue-elephant-6", True))
    assert events[:3] == [
        CardPlayed(1, "yellow-baby-1", 1),
        CardRemoved(1, "blue-elephant-6", 0, "scare"),
        DayEnded(1, "discard_limit", 20, [5, 6], [0, 1], [0, 1]),
    ]
    assert isinstance(events[3], DayStarted) and len(events) == 4


def test_a_day_ends_when_a_player_cannot_draw_back_up():
    state = start(**TWO)
    place(state, 0, "purple-baby-1")
    state.drawn = len(state.draw_pile)  # the draw pile has run out
    events = act(state, 0, DestroyProtected())  # nothing to draw: the day goes on
    assert events[-1] == TurnEnded(0, 0, []) and state.day == 1
    events = act(state, 1, PlayCard("green-lion-6", 1))
    assert events[1] == TurnEnded(1, 0, [])
    assert events[2] == DayEnded(1, "draw_pile_empty", 15, [1, 8], [0, 1], [0, 1])
    assert isinstance(events[3], DayStarted) and state.day == 2
