"""Breaking News' ``evolve``: every stored event applied to the state."""

from __future__ import annotations

from typing import Any

from services.rules.games.breaking_news.cards import (
    EDGE_CODE,
    EDGES,
    NEWS,
    OPPOSITE,
    OVER,
    PLAY,
    STEPS,
    STORY,
    VOTE,
    cell_of,
)
from services.rules.games.breaking_news.events import (
    BreakingNewsCalled,
    CardPlaced,
    CardTurnedFaceDown,
    ElementDrawn,
    FinalRoundStarted,
    GameEnded,
    GameStarted,
    HandReturned,
    ObjectCompleted,
    ObjectDrawn,
    ObjectOpened,
    StartingCardPlaced,
    StartingCardSetAside,
    StoryInterrupted,
    TurnEnded,
    VoteCast,
    VotingOpened,
)
from services.rules.games.breaking_news.state import BreakingNewsState, Story
from services.rules.games.breaking_news.versions import RULES
from services.rules.games.contract import (
    evolve_in_place,
)


def _start(event: GameStarted) -> BreakingNewsState:
    if problem := RULES.problem(event.rules_version):  # a file's version this engine lacks
        raise ValueError(f"GameStarted: {problem}")
    seats = event.seats
    return BreakingNewsState(
        seats=seats,
        advanced=event.mode == "advanced",
        tiebreak=event.tiebreak,
        foreign_language_bonus=event.foreign_language_bonus,
        stopwatch=event.stopwatch,
        home_languages=event.home_languages,
        element_deck=list(event.element_deck),
        object_deck=list(event.object_deck),
        hands=[[] for _ in range(seats)],
        object_hands=[[] for _ in range(seats)],
        open_objects=[],
        grid={},
        positions={},
        open_cells={},
        face_down=[],
        scores=[0] * seats,
        completed=[0] * seats,
        stories=[],
        rules_version=RULES.in_state(event.rules_version),
    )


def _requirement(grid: dict[int, int], face_down: list[int], cell: int) -> int:
    """What a card needs to go on this empty cell, packed (see the grid notes)."""
    mask = colours = touching = 0
    for side in range(4):
        neighbour = grid.get(cell + STEPS[side])
        if neighbour is None:
            continue
        touching += 1
        if neighbour in face_down:
            continue
        shift = 2 * side
        mask |= 3 << shift
        colours |= EDGES[neighbour][OPPOSITE[side]] << shift
    return mask | colours << 8 | touching << 16


def fits(card: int, requirement: int) -> bool:
    return EDGE_CODE[card] & requirement & 0xFF == (requirement >> 8) & 0xFF


def _refresh_around(state: BreakingNewsState, cell: int) -> None:
    grid, open_cells, face_down = state.grid, state.open_cells, state.face_down
    for step in STEPS:
        neighbour = cell + step
        if neighbour not in grid:
            open_cells[neighbour] = _requirement(grid, face_down, neighbour)


def _put_on_table(state: BreakingNewsState, card: int, cell: int) -> None:
    state.grid[cell] = card
    state.positions[card] = cell
    state.open_cells.pop(cell, None)
    _refresh_around(state, cell)


def _evolve_starting_card(state: BreakingNewsState, event: StartingCardPlaced) -> None:
    state.element_deck.pop(0)
    _put_on_table(state, event.card, cell_of(event.x, event.y))


def _evolve_set_aside(state: BreakingNewsState, event: StartingCardSetAside) -> None:
    state.element_deck.append(state.element_deck.pop(0))


def _evolve_element_drawn(state: BreakingNewsState, event: ElementDrawn) -> None:
    state.hands[event.seat].append(state.element_deck.pop(0))


def _evolve_object_drawn(state: BreakingNewsState, event: ObjectDrawn) -> None:
    state.object_hands[event.seat].append(state.object_deck.pop(0))


def _evolve_object_opened(state: BreakingNewsState, event: ObjectOpened) -> None:
    state.open_objects.append(state.object_deck.pop(0))


def _evolve_card_placed(state: BreakingNewsState, event: CardPlaced) -> None:
    state.hands[event.seat].remove(event.card)
    _put_on_table(state, event.card, cell_of(event.x, event.y))
    state.phase = NEWS
    state.played = event.card
    state.passes_in_a_row = 0


def _evolve_hand_returned(state: BreakingNewsState, event: HandReturned) -> None:
    hand = state.hands[event.seat]
    state.element_deck += hand
    hand.clear()
    state.passes_in_a_row += 1


def _evolve_called(state: BreakingNewsState, event: BreakingNewsCalled) -> None:
    state.phase = STORY
    state.call_object = event.object
    state.call_cards = list(event.cards)
    state.called_at_ms = event.called_at_ms


def _evolve_interrupted(state: BreakingNewsState, event: StoryInterrupted) -> None:
    state.call_object = -1


def _evolve_completed(state: BreakingNewsState, event: ObjectCompleted) -> None:
    seat, obj = event.seat, event.object
    if event.was_open:
        state.open_objects.remove(obj)
    else:
        state.object_hands[seat].remove(obj)
    state.stories.append(
        Story(seat, obj, event.cards, event.story, event.language, event.points, event.duration_ms)
    )
    state.scores[seat] += event.points
    state.completed[seat] += 1
    state.call_object = -1


def _evolve_face_down(state: BreakingNewsState, event: CardTurnedFaceDown) -> None:
    state.face_down.append(event.card)
    _refresh_around(state, state.positions[event.card])


def _evolve_final_round(state: BreakingNewsState, event: FinalRoundStarted) -> None:
    state.last_turn = state.turns + state.seats - 1
    state.final_reason = event.reason


def _evolve_turn_ended(state: BreakingNewsState, event: TurnEnded) -> None:
    state.turns += 1
    state.seat_to_move = (event.seat + 1) % state.seats
    state.phase = PLAY
    state.played = -1


def _evolve_voting(state: BreakingNewsState, event: VotingOpened) -> None:
    state.phase = VOTE
    state.final_reason = event.reason
    state.voters = list(event.voters)
    state.candidates = list(event.stories)


def _evolve_vote(state: BreakingNewsState, event: VoteCast) -> None:
    state.votes[event.seat] = event.story


def _evolve_ended(state: BreakingNewsState, event: GameEnded) -> None:
    state.phase = OVER
    state.end_reason = event.reason
    state.winners = list(event.winners)
    state.tiebreak_used = list(event.tiebreak)


_EVOLVERS: dict[type, Any] = {
    StartingCardPlaced: _evolve_starting_card,
    StartingCardSetAside: _evolve_set_aside,
    ElementDrawn: _evolve_element_drawn,
    ObjectDrawn: _evolve_object_drawn,
    ObjectOpened: _evolve_object_opened,
    CardPlaced: _evolve_card_placed,
    HandReturned: _evolve_hand_returned,
    BreakingNewsCalled: _evolve_called,
    StoryInterrupted: _evolve_interrupted,
    ObjectCompleted: _evolve_completed,
    CardTurnedFaceDown: _evolve_face_down,
    FinalRoundStarted: _evolve_final_round,
    TurnEnded: _evolve_turn_ended,
    VotingOpened: _evolve_voting,
    VoteCast: _evolve_vote,
    GameEnded: _evolve_ended,
}


evolve = evolve_in_place(_start, _EVOLVERS)
"""Apply one stored event, mutating ``state`` in place (``GameStarted`` creates it)."""
