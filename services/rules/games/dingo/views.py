"""What each seat of a Dingo match may see: its view of the state and of each event."""

from __future__ import annotations

from typing import Any

import msgspec

from services.rules.games.dingo.cards import CARD_ID, CARDS, COLOURS, STARTING_BIT
from services.rules.games.dingo.rules import colours_on, guarded
from services.rules.games.dingo.scoring import ranch_value
from services.rules.games.dingo.state import (
    DayDealt,
    DayStarted,
    DingoState,
    DingoView,
    GameStarted,
    RanchView,
    TurnEnded,
)


def _ranch_view(seat: int, ranch: list[int]) -> RanchView:
    open_colours = STARTING_BIT[seat] | colours_on(ranch)
    return RanchView(
        seat=seat,
        starting_colour=COLOURS[seat],
        cards=[CARDS[code] for code in ranch],
        value=ranch_value(ranch),
        protected=CARD_ID[ranch[0]],
        moon_guarded=[
            CARD_ID[code]
            for index, code in enumerate(ranch)
            if index and guarded(ranch, index, None)
        ],
        open_colours=[colour for index, colour in enumerate(COLOURS) if open_colours >> index & 1],
    )


def view(state: DingoState, seat: int | None) -> DingoView:
    """The table for ``seat``: every ranch, its own hand, the pile sizes and the scores."""
    over = state.end_reason is not None
    hand = None
    if seat is not None and 0 <= seat < state.seats:
        hand = [CARDS[code] for code in state.hands[seat]]
    return DingoView(
        seat=seat,
        seats=state.seats,
        day=state.day,
        roll=state.roll,
        target=state.target,
        start_player=state.start_player,
        seat_to_move=None if over else state.seat_to_move,
        ranches=[_ranch_view(owner, ranch) for owner, ranch in enumerate(state.ranches)],
        hand=hand,
        hand_sizes=[len(hand) for hand in state.hands],
        hands=[[CARDS[code] for code in hand] for hand in state.hands] if over else None,
        draw_pile=len(state.draw_pile) - state.drawn,
        discards=[CARDS[code] for code in state.discards],
        discard_limit=state.discard_limit,
        totals=list(state.totals),
        target_score=state.target_score,
        tiebreak=state.tiebreak,
        tie_break_day=max(state.totals) > state.target_score and not over,
        last_day=state.last_day,
        winners=state.winners,
        end_reason=state.end_reason,
    )


def _dealt(event: DayStarted, seat: int | None) -> DayDealt:
    hand = None
    if seat is not None and 0 <= seat < len(event.hands):
        hand = event.hands[seat]
    return DayDealt(
        day=event.day,
        start_player=event.start_player,
        roll=event.roll,
        target=event.target,
        ranches=event.ranches,
        hand=hand,
        draw_pile=len(event.draw_pile),
    )


def redact(event: Any, seat: int | None) -> Any:
    """Hide the chance seed and deck order from everyone, and hands from everyone else."""
    kind = type(event)
    if kind is TurnEnded:
        if seat != event.seat and event.cards is not None:
            return TurnEnded(event.seat, event.drawn, None)
        return event
    if kind is DayStarted:
        return _dealt(event, seat)
    if kind is GameStarted:
        return msgspec.structs.replace(event, chance_seed=None, deck_order=None, die_rolls=None)
    return event
