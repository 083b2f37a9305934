"""Dingo's scoring and the end of the game, on explicit deals: points per player beaten, the
target score, tied leaders."""

from __future__ import annotations

import random

from services.rules.games.dingo import GAME
from services.rules.games.dingo.scoring import day_points
from services.rules.games.dingo.state import DayEnded, DayStarted, DiscardCard, GameEnded
from tests.unit.services.rules.games.dingo.scenarios import (
    deck_order,
    discard_until_day_ends,
    place,
    refused,
)


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
