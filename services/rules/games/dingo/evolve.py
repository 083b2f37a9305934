"""Dingo's ``evolve``: every stored event applied to the state."""

from __future__ import annotations

from typing import Any

from services.rules.games.contract import (
    evolve_in_place,
)
from services.rules.games.dingo.cards import (
    CARD_CODE,
    CODES,
    DECK_SIZE,
    DIE_SIDES,
    MAX_SEATS,
    TARGET_BASE,
)
from services.rules.games.dingo.state import (
    CardDiscarded,
    CardPlayed,
    CardRemoved,
    DayEnded,
    DayStarted,
    DingoState,
    GameEnded,
    GameStarted,
    ProtectedCardDestroyed,
    TurnEnded,
)
from services.rules.games.dingo.versions import RULES


def _start(event: GameStarted) -> DingoState:
    if not 2 <= event.seats <= MAX_SEATS or not 0 <= event.first_player < event.seats:
        raise ValueError(f"GameStarted seats {event.seats} from seat {event.first_player}")
    if problem := RULES.problem(event.rules_version):  # a file's version this engine lacks
        raise ValueError(f"GameStarted: {problem}")
    return DingoState(
        seats=event.seats,
        first_player=event.first_player,
        discard_limit=event.discard_limit,
        target_score=event.target_score,
        tiebreak=event.tiebreak,
        chance_seed=event.chance_seed or 0,
        given_decks=[CARD_CODE[card] for card in event.deck_order or ()],
        given_rolls=list(event.die_rolls or ()),
        totals=[0] * event.seats,
    )


def _evolve_day_started(state: DingoState, event: DayStarted) -> None:
    if (problem := _deal_problem(state, event)) is not None:
        raise ValueError(f"day {event.day}: {problem}")  # a forged file's, never a dealt one
    state.day, state.roll, state.target = event.day, event.roll, event.target
    state.start_player = state.seat_to_move = event.start_player
    state.ranches = [[CARD_CODE[card]] for card in event.ranches]
    state.hands = [[CARD_CODE[card] for card in hand] for hand in event.hands]
    state.draw_pile = [CARD_CODE[card] for card in event.draw_pile]
    state.drawn = 0
    state.discards = []


def _deal_problem(state: DingoState, event: DayStarted) -> str | None:
    """Why ``event`` is not a deal of the whole deck to the match's seats, if it is not."""
    seats = state.seats
    if len(event.ranches) != seats or [len(hand) for hand in event.hands] != [2] * seats:
        return f"not one ranch card and two hand cards for each of {seats} seats"
    cards = [*event.ranches, *(card for hand in event.hands for card in hand), *event.draw_pile]
    if sorted(CARD_CODE.get(card, -1) for card in cards) != list(CODES):
        return f"the deal is not the {DECK_SIZE} cards of the deck, each once"
    if not 0 <= event.start_player < seats or not 1 <= event.roll <= DIE_SIDES:
        return f"start player {event.start_player}, roll {event.roll}"
    if event.target != event.roll + TARGET_BASE:
        return f"target {event.target} for a roll of {event.roll}"
    return None


def _evolve_played(state: DingoState, event: CardPlayed) -> None:
    code = CARD_CODE[event.card]
    state.hands[event.seat].remove(code)
    state.ranches[event.ranch].append(code)


def _evolve_removed(state: DingoState, event: CardRemoved) -> None:
    code = CARD_CODE[event.card]
    state.ranches[event.ranch].remove(code)
    state.discards.append(code)


def _evolve_destroyed(state: DingoState, event: ProtectedCardDestroyed) -> None:
    state.discards.append(state.ranches[event.seat].pop(0))


def _evolve_discarded(state: DingoState, event: CardDiscarded) -> None:
    code = CARD_CODE[event.card]
    state.hands[event.seat].remove(code)
    state.discards.append(code)


def _evolve_turn_ended(state: DingoState, event: TurnEnded) -> None:
    if event.drawn:
        state.hands[event.seat].extend(state.draw_pile[state.drawn : state.drawn + event.drawn])
        state.drawn += event.drawn
    state.seat_to_move = (event.seat + 1) % state.seats


def _evolve_day_ended(state: DingoState, event: DayEnded) -> None:
    if len(event.totals) != state.seats:  # a forged file's, never a scored one
        raise ValueError(f"day {event.day}: {len(event.totals)} totals for {state.seats} seats")
    state.totals = list(event.totals)
    state.last_day = event


def _evolve_game_ended(state: DingoState, event: GameEnded) -> None:
    state.winners = list(event.winners)
    state.end_reason = event.reason


_EVOLVERS: dict[type, Any] = {
    DayStarted: _evolve_day_started,
    CardPlayed: _evolve_played,
    CardRemoved: _evolve_removed,
    ProtectedCardDestroyed: _evolve_destroyed,
    CardDiscarded: _evolve_discarded,
    TurnEnded: _evolve_turn_ended,
    DayEnded: _evolve_day_ended,
    GameEnded: _evolve_game_ended,
}


evolve = evolve_in_place(_start, _EVOLVERS)
"""Apply one stored event, mutating ``state`` in place (``GameStarted`` creates it)."""
