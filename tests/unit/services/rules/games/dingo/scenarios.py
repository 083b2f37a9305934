"""Dingo scenarios on explicit deals (seat 0 red, 1 yellow, 2 green, ...): a day's deck that
deals the cards given, a state started on it, actions taken or refused."""

from __future__ import annotations

import random

from services.rules.games.contract import Rejection
from services.rules.games.dingo import GAME
from services.rules.games.dingo.cards import CARD_CODE, CARD_ID
from services.rules.games.dingo.state import DingoState, DiscardCard


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
