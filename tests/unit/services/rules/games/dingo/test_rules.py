"""Dingo rules, scenario by scenario, on explicit deals (seat 0 red, 1 yellow, 2 green, ...)."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.engine import RulesEngine
from services.rules.games.contract import Rejection
from services.rules.games.dingo import GAME
from services.rules.games.dingo.cards import CARD_CODE, CARD_ID, CARDS
from services.rules.games.dingo.scoring import day_points
from services.rules.games.dingo.state import (
    CardDiscarded,
    CardPlayed,
    CardRemoved,
    DayDealt,
    DayEnded,
    DayStarted,
    DestroyProtected,
    DingoState,
    DiscardCard,
    GameEnded,
    GameStarted,
    PlayCard,
    ProtectedCardDestroyed,
    TurnEnded,
)
from shared.domain import rules_api as api


def deck_order(
    ranches: list[str], hands: list[list[str]], pile: list[str] = (), first: int = 0
) -> list[str]:
    """One day's deck in dealing order that deals these ranch cards and hands (by seat)."""
    seats = len(ranches)
    order = [(first + step) % seats for step in range(seats)]
    front = [ranches[seat] for seat in order]
    front += [hands[seat][0] for seat in order] + [hands[seat][1] for seat in order]
    front += list(pile)
    return front + [card for card in CARD_ID if card not in front]


def start(
    ranches: list[str],
    hands: list[list[str]],
    pile: list[str] = (),
    roll: int = 5,
    first: int = 0,
    **options,
) -> DingoState:
    given = {
        "deck_order": deck_order(ranches, hands, pile, first),
        "die_rolls": [roll],
        "first_player": first,
        **options,
    }
    resolved = GAME.resolve_options(given, len(ranches))
    assert not isinstance(resolved, Rejection), resolved
    return GAME.fold(GAME.setup(resolved, len(ranches), random.Random(0)))


def place(state: DingoState, seat: int, *cards: str) -> None:
    """Arrange a scenario: move undrawn cards from the draw pile to the right of a ranch."""
    for card in cards:
        code = CARD_CODE[card]
        assert state.draw_pile.index(code) >= state.drawn
        state.draw_pile.remove(code)
        state.ranches[seat].append(code)


def names(codes: list[int]) -> list[str]:
    return [CARD_ID[code] for code in codes]


def act(state: DingoState, seat: int, action) -> list:
    events = GAME.decide(state, seat, action)
    assert not isinstance(events, Rejection), events
    assert action in GAME.legal_actions(state, seat)
    for event in events:
        state = GAME.evolve(state, event)
    return events


def refused(state: DingoState, seat: int, action) -> Rejection:
    rejection = GAME.decide(state, seat, action)
    assert isinstance(rejection, Rejection), rejection
    assert action not in GAME.legal_actions(state, seat)
    return rejection


def discard_until_day_ends(state: DingoState) -> list:
    """Every seat in turn discards its first hand card until the day ends."""
    day = state.day
    while state.day == day and state.end_reason is None:
        seat = state.seat_to_move
        events = act(state, seat, DiscardCard(CARD_ID[state.hands[seat][0]]))
    return events


TWO = {
    "ranches": ["red-lion-5", "yellow-baby-2"],
    "hands": [["red-baby-1", "blue-dingo-3"], ["green-lion-6", "yellow-dingo-4"]],
    "pile": ["purple-monkey-3", "purple-moon-1", "purple-baby-1"],
}


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


# --- Scoring and the end of the game --------------------------------------------------------


def test_one_point_per_player_beaten_and_nothing_over_the_target():
    assert day_points([10, 12, 12, 20], 15) == [1, 2, 2, 0]
    assert day_points([15, 16, 3], 15) == [2, 0, 1]  # the target itself is within
    assert day_points([16, 17], 15) == [0, 0]
    assert day_points([9, 9], 15) == [0, 0]


def three_seat_day(first: int = 0, roll: int = 5) -> list[str]:
    """A 3-seat day in which seat 0's ranch is worth 7, seat 1's 1 and seat 2's 5."""
    return deck_order(
        ["red-elephant-7", "yellow-baby-1", "green-lion-5"],
        [
            ["blue-baby-1", "blue-baby-2"],
            ["blue-dingo-3", "blue-dingo-4"],
            ["blue-lion-5", "blue-lion-6"],
        ],
        first=first,
    )


def test_the_game_ends_after_the_day_on_which_a_total_passes_the_target_score():
    options = {"deck_order": three_seat_day(), "die_rolls": [5], "first_player": 0}
    state = GAME.fold(
        GAME.setup(GAME.resolve_options({**options, "target_score": 2}, 3), 3, random.Random(1))
    )
    events = discard_until_day_ends(state)
    assert events[-2] == DayEnded(1, "discard_limit", 15, [7, 1, 5], [2, 0, 1], [2, 0, 1])
    assert isinstance(events[-1], DayStarted)  # 2 does not pass 2
    assert GAME.view(state, None).totals == [2, 0, 1]

    state = GAME.fold(
        GAME.setup(GAME.resolve_options({**options, "target_score": 1}, 3), 3, random.Random(1))
    )
    events = discard_until_day_ends(state)
    assert events[-1] == GameEnded("finished", [2, 0, 1], [0])
    outcome = GAME.result(state)
    assert (outcome.scores, outcome.winners, outcome.reason) == ([2, 0, 1], [0], "finished")
    assert GAME.to_move(state) == [] and GAME.legal_actions(state, state.seat_to_move) == []
    assert refused(state, state.seat_to_move, DiscardCard("blue-baby-1")).code == "game_over"


def test_a_ranch_over_the_target_scores_nothing_and_is_beaten_by_everyone():
    options = {"deck_order": three_seat_day(), "die_rolls": [1], "first_player": 0}
    state = GAME.fold(GAME.setup(GAME.resolve_options(options, 3), 3, random.Random(1)))
    place(state, 0, "purple-elephant-6")  # 13 over a target of 11
    events = discard_until_day_ends(state)
    assert events[-2] == DayEnded(1, "discard_limit", 11, [13, 1, 5], [0, 1, 2], [0, 1, 2])


def four_seat_day(values: str, first: int = 0) -> list[str]:
    """A 4-seat day whose ranch cards are the elephant 7 ("7") or a baby 1 ("1") per seat."""
    sevens = iter(["red-elephant-7", "yellow-elephant-7", "green-elephant-7", "blue-elephant-7"])
    ones = iter(["red-baby-1", "yellow-baby-1", "green-baby-1", "blue-baby-1"])
    ranches = [next(sevens) if value == "7" else next(ones) for value in values]
    hands = [["purple-lion-5", "purple-lion-6"], ["purple-dingo-3", "purple-dingo-4"]]
    hands += [["red-moon-1", "yellow-moon-1"], ["green-moon-1", "blue-moon-1"]]
    return deck_order(ranches, hands, first=first)


def test_tied_leaders_share_the_win_or_play_extra_days():
    options = {"deck_order": four_seat_day("7711"), "die_rolls": [5], "first_player": 0}
    options["target_score"] = 1
    shared = GAME.fold(
        GAME.setup(GAME.resolve_options({**options, "tiebreak": "share"}, 4), 4, random.Random(2))
    )
    events = discard_until_day_ends(shared)
    assert events[-1] == GameEnded("tie_shared", [2, 2, 0, 0], [0, 1])
    assert GAME.result(shared).winners == [0, 1]

    options["deck_order"] += four_seat_day("1711", first=1) + four_seat_day("7711", first=2)
    options["die_rolls"] = [5, 5, 5]
    state = GAME.fold(GAME.setup(GAME.resolve_options(options, 4), 4, random.Random(2)))
    events = discard_until_day_ends(state)
    assert isinstance(events[-1], DayStarted) and GAME.result(state) is None
    assert GAME.view(state, 0).tie_break_day is True
    events = discard_until_day_ends(state)
    assert events[-2].points == [0, 3, 0, 0]
    assert events[-1] == GameEnded("finished", [2, 5, 0, 0], [1])


# --- Chance and replays ---------------------------------------------------------------------


def test_the_same_seed_gives_the_same_match_and_later_days_are_recorded():
    first = GAME.setup(GAME.resolve_options({}, 3), 3, random.Random(11))
    again = GAME.setup(GAME.resolve_options({}, 3), 3, random.Random(11))
    other = GAME.setup(GAME.resolve_options({}, 3), 3, random.Random(12))
    assert first == again and first != other
    state = GAME.fold(first)
    log = list(first)
    while state.day < 4:
        seat = state.seat_to_move
        events = GAME.decide(state, seat, DiscardCard(CARD_ID[state.hands[seat][0]]))
        log += events
        state = GAME.fold(events, state)
    days = [event for event in log if isinstance(event, DayStarted)]
    assert [day.day for day in days] == [1, 2, 3, 4]
    assert [day.start_player for day in days][1:] == [
        (days[0].start_player + step) % 3 for step in (1, 2, 3)
    ]
    assert len({tuple(day.draw_pile) for day in days}) == 4
    replayed = GAME.fold(log)  # no random generator: the log holds every chance outcome
    encode = msgspec.msgpack.encode
    assert encode(replayed) == encode(state)
    decoded = msgspec.msgpack.decode(encode(state), type=DingoState)
    assert decoded == state


def test_explicit_decks_and_rolls_decide_the_first_days_then_the_seed_takes_over():
    decks = deck_order(**TWO) + list(reversed(CARD_ID))
    options = {"deck_order": decks, "die_rolls": [2, 4, 6], "two_player_six": False}
    events = GAME.setup(GAME.resolve_options(options, 2), 2, random.Random(3))
    state = GAME.fold(events)
    targets, piles = [state.target], [names(state.draw_pile)]
    for _ in range(3):
        discard_until_day_ends(state)
        targets.append(state.target)
        piles.append(names(state.draw_pile))
    assert targets[:3] == [12, 14, 16] and 11 <= targets[3] <= 20
    assert piles[0] == decks[6:60] and piles[1] == decks[66:]
    assert sorted(piles[2]) != piles[2] and len(piles[2]) == 54
    again = GAME.fold(GAME.setup(GAME.resolve_options(options, 2), 2, random.Random(3)))
    assert again.chance_seed == state.chance_seed


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"deck_order": list(CARD_ID)[:-1]}, "needs 60 card ids per day, got 59"),
        ({"deck_order": list(CARD_ID)[:-1] + ["red-dragon-9"]}, "unknown card ids"),
        ({"deck_order": list(CARD_ID) + list(CARD_ID)[:-1] + ["red-baby-1"]}, "day 2"),
        ({"die_rolls": [3, 0]}, "every roll must be 1-10"),
        ({"die_rolls": [11]}, "every roll must be 1-10"),
        ({"first_player": 2}, "no seat 2 with 2 players"),
        ({"target_score": 0}, "at least 1"),
        ({"tiebreak": "coin"}, "must be one of"),
    ],
)
def test_bad_options_are_refused(options, fragment):
    rejection = GAME.resolve_options(options, 2)
    assert isinstance(rejection, Rejection) and rejection.code == "bad_option"
    assert fragment in rejection.detail


# --- Hidden information ---------------------------------------------------------------------


def hidden_from(state: DingoState, seat: int | None) -> set[str]:
    """Card ids ``seat`` may not see: other hands and the undrawn pile."""
    hidden = {CARD_ID[code] for code in state.draw_pile[state.drawn :]}
    for holder, hand in enumerate(state.hands):
        if holder != seat:
            hidden.update(CARD_ID[code] for code in hand)
    return hidden


def shown(data: object) -> set[str]:
    text = msgspec.json.encode(data).decode()
    return {card for card in CARD_ID if f'"{card}"' in text}


def test_redacted_events_hide_the_seed_the_deck_and_other_hands():
    options = GAME.resolve_options({"deck_order": deck_order(**TWO), "die_rolls": [4]}, 2)
    events = GAME.setup(options, 2, random.Random(8))
    state = GAME.fold(events)
    assert events[0].chance_seed is not None and events[0].deck_order is not None
    for seat in (0, 1, None):
        started = GAME.redact(events[0], seat)
        assert (started.chance_seed, started.deck_order, started.die_rolls) == (None, None, None)
        dealt = GAME.redact(events[1], seat)
        assert isinstance(dealt, DayDealt) and dealt.ranches == TWO["ranches"]
        assert dealt.hand == (None if seat is None else TWO["hands"][seat])
        assert dealt.draw_pile == 54 and (dealt.roll, dealt.target) == (4, 14)
        assert not shown(dealt) & hidden_from(state, seat)
    drawn = act(state, state.seat_to_move, DiscardCard("blue-dingo-3"))[-1]
    assert GAME.redact(drawn, 0) == drawn == TurnEnded(0, 1, ["purple-monkey-3"])
    assert GAME.redact(drawn, 1) == GAME.redact(drawn, None) == TurnEnded(0, 1, None)


def test_views_show_the_own_hand_only_until_the_game_is_over():
    state = start(**TWO, target_score=1)
    for seat in (0, 1, None):
        seen = GAME.view(state, seat)
        assert seen.hand == (
            None if seat is None else [CARDS[CARD_CODE[card]] for card in TWO["hands"][seat]]
        )
        assert seen.hands is None and seen.hand_sizes == [2, 2] and seen.draw_pile == 54
        assert not shown(seen) & hidden_from(state, seat)
        assert [ranch.protected for ranch in seen.ranches] == TWO["ranches"]
    # Neither a rejection tells where a card it does not show is: hand or pile read the same.
    in_hand = refused(state, 0, PlayCard("red-baby-1", 0, "green-lion-6")).detail
    in_pile = refused(state, 0, PlayCard("red-baby-1", 0, "purple-moon-1")).detail
    assert in_hand.replace("green-lion-6", "X") == in_pile.replace("purple-moon-1", "X")
    assert (
        refused(state, 0, DiscardCard("green-lion-6")).detail
        == "'green-lion-6' is not in your hand"
    )
    while GAME.result(state) is None:
        discard_until_day_ends(state)
    final = GAME.view(state, None)
    assert final.hands == [[CARDS[code] for code in hand] for hand in state.hands]
    assert final.seat_to_move is None and final.winners == GAME.result(state).winners


def test_a_match_runs_through_the_rules_engine_codec():
    engine = RulesEngine({"dingo": GAME})
    (entry,) = engine.handle(api.Catalogue())
    options = {option["name"]: option for option in entry["options"]}
    assert options["deck_order"]["secret"] and options["die_rolls"]["secret"]
    assert options["tiebreak"]["default"] == "extra_day"
    assert options["target_score"]["default"] == 15
    done = engine.handle(api.SetUp(game="dingo", options={}, seats=3, seed=4))
    assert isinstance(done, api.SetUpDone)
    assert b'"chance_seed":null' in bytes(done.public_events[0])
    assert b'"draw_pile":51' in bytes(done.public_events[1])
    stored = [event.data for event in done.events]
    progress = done.progress
    for _ in range(40):
        seat = progress.to_move[0]
        legal = engine.handle(api.ListLegalActions(game="dingo", state=progress.state, seat=seat))
        action = msgspec.Raw(msgspec.json.encode(legal[-1]))
        decided = engine.handle(
            api.Decide(game="dingo", state=progress.state, seat=seat, action=action)
        )
        assert isinstance(decided, api.Decided), decided
        stored += [event.data for event in decided.events]
        progress = decided.progress
    folded = engine.handle(api.Fold(game="dingo", events=stored))
    assert folded.state == progress.state and folded.to_move == progress.to_move
