"""What each seat of a Breaking News match may see: its view of the state and each event."""

from __future__ import annotations

from typing import Any

from services.rules.games.breaking_news.cards import MODES, OVER, PHASES, STORY, VOTE, XY
from services.rules.games.breaking_news.events import (
    DecksShuffled,
    ElementDrawn,
    GameStarted,
    HandReturned,
    ObjectDrawn,
)
from services.rules.games.breaking_news.rules import to_move
from services.rules.games.breaking_news.state import (
    ELEMENT_CARDS,
    OBJECT_CARDS,
    BreakingNewsState,
    BreakingNewsView,
    CalledNews,
    TableCard,
    Voting,
)


def view(state: BreakingNewsState, seat: int | None) -> BreakingNewsView:
    """The table, the open objects, the stories and the viewer's own hands; never others'."""
    over = state.phase == OVER
    table = [
        TableCard(*XY[cell], card in state.face_down, ELEMENT_CARDS[card])
        for cell, card in state.grid.items()
    ]
    called = None
    if state.phase == STORY:
        called = CalledNews(
            state.seat_to_move,
            OBJECT_CARDS[state.call_object],
            list(state.call_cards),
            state.called_at_ms,
        )
    voting = None
    if state.phase == VOTE:
        voting = Voting(list(state.voters), list(state.candidates), dict(state.votes))
    turns_left = None
    if state.last_turn is not None and not over:
        turns_left = state.last_turn - state.turns + 1
    return BreakingNewsView(
        seat=seat,
        seats=state.seats,
        mode=MODES[state.advanced],
        tiebreak=state.tiebreak,
        foreign_language_bonus=state.foreign_language_bonus,
        stopwatch=state.stopwatch,
        home_languages=state.home_languages,
        phase=PHASES[state.phase],
        to_move=to_move(state),
        turns=state.turns,
        turns_left=turns_left,
        table=table,
        hand=None if seat is None else [ELEMENT_CARDS[card] for card in state.hands[seat]],
        objects=None if seat is None else [OBJECT_CARDS[o] for o in state.object_hands[seat]],
        hand_sizes=[len(hand) for hand in state.hands],
        object_hand_sizes=[len(hand) for hand in state.object_hands],
        open_objects=[OBJECT_CARDS[obj] for obj in state.open_objects],
        element_deck_size=len(state.element_deck),
        object_deck_size=len(state.object_deck),
        scores=list(state.scores),
        completed=list(state.completed),
        stories=list(state.stories),
        played_card=None if state.played < 0 else state.played,
        called_news=called,
        voting=voting,
        end_reason=state.end_reason,
        winners=list(state.winners),
        tiebreak_used=list(state.tiebreak_used),
    )


def redact(event: Any, seat: int | None) -> Any:
    """Hide both deck orders from everyone and drawn or returned cards from all but their owner."""
    kind = type(event)
    if kind is ElementDrawn:
        return event if seat == event.seat else ElementDrawn(event.seat)
    if kind is ObjectDrawn:
        return event if seat == event.seat else ObjectDrawn(event.seat)
    if kind is HandReturned:
        return event if seat == event.seat else HandReturned(event.seat, event.count)
    if kind is GameStarted:
        return DecksShuffled(
            seats=event.seats,
            mode=event.mode,
            tiebreak=event.tiebreak,
            foreign_language_bonus=event.foreign_language_bonus,
            stopwatch=event.stopwatch,
            home_languages=event.home_languages,
            element_cards=len(event.element_deck),
            object_cards=len(event.object_deck),
        )
    return event
