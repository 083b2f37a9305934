"""Chance in Dingo and its replays: the same seed gives the same match, explicit decks and rolls
decide the first days, bad options are refused."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.contract import Rejection
from services.rules.games.dingo import GAME
from services.rules.games.dingo.cards import CARD_ID
from services.rules.games.dingo.state import DayStarted, DingoState, DiscardCard
from tests.unit.services.rules.games.dingo.scenarios import (
    TWO,
    deck_order,
    discard_until_day_ends,
    names,
)


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
