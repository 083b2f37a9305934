"""Random Breaking News games to the end for 2-4 players and every option, checked at every move."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.breaking_news import GAME
from services.rules.games.breaking_news.cards import (
    EDGES,
    ELEMENT_COUNT,
    NEWS,
    OBJECT_COUNT,
    OBJECT_HAND_LIMIT,
    PLAY,
    STORY,
    cell_of,
    completions_to_end,
    xy_of,
)
from services.rules.games.breaking_news.events import (
    CardPlaced,
    ElementDrawn,
    FinalRoundStarted,
    GameEnded,
    HandReturned,
    ObjectCompleted,
    ObjectDrawn,
    PlaceCard,
    TurnEnded,
)
from services.rules.games.breaking_news.news import missing_word
from services.rules.games.breaking_news.state import BreakingNewsState
from services.rules.games.playout import random_playout

GAMES_PER_COUNT = 1000
THOROUGH_EVERY = 10
"""One game in this many also checks the incremental open cells and every seat's view as JSON."""
VARIANTS = (
    {},
    {"mode": "advanced"},
    {"stopwatch": True},
    {"foreign_language_bonus": True},
    {"tiebreak": "objects_in_hand"},
    {"mode": "advanced", "stopwatch": True, "foreign_language_bonus": True},
)
HOME_LANGUAGES = ["de", "it", "en", "lld"]
FIRST_EVENT = {
    "PlaceCard": ("CardPlaced",),
    "PassTurn": ("HandReturned",),
    "CompleteObject": ("ObjectCompleted",),
    "EndTurn": ("ObjectDrawn", "ElementDrawn", "FinalRoundStarted", "TurnEnded"),
    "CallBreakingNews": ("BreakingNewsCalled",),
    "TellStory": ("ObjectCompleted",),
    "ReportSilence": ("StoryInterrupted",),
    "VoteForStory": ("VoteCast",),
}
SECRET_EVENTS = (ElementDrawn, ObjectDrawn, HandReturned)


def hidden_form(event):
    """A secret event as everyone but its seat must see it: who, and how many, never which."""
    if isinstance(event, HandReturned):
        return HandReturned(event.seat, event.count)
    return type(event)(event.seat)


def options_for(game: int, seats: int) -> dict:
    options = dict(VARIANTS[game % len(VARIANTS)])
    if options.get("foreign_language_bonus"):
        options["home_languages"] = HOME_LANGUAGES[:seats]
    return options


STEPS = ((0, 1), (1, 0), (0, -1), (-1, 0))
"""North, east, south, west: the sides in the order of ``bn.EDGES``."""


def layout_of(state: BreakingNewsState) -> dict[tuple[int, int], int]:
    return {xy_of(cell): card for cell, card in state.grid.items()}


def adjacent_pairs(layout: dict[tuple[int, int], int]):
    for (x, y), card in layout.items():
        for side in (0, 1):  # north and east: each pair once
            dx, dy = STEPS[side]
            other = layout.get((x + dx, y + dy))
            if other is not None:
                yield card, side, other


def connected(layout: dict[tuple[int, int], int]) -> bool:
    start = next(iter(layout))
    seen, todo = {start}, [start]
    while todo:
        x, y = todo.pop()
        for dx, dy in STEPS:
            if (x + dx, y + dy) in layout and (x + dx, y + dy) not in seen:
                seen.add((x + dx, y + dy))
                todo.append((x + dx, y + dy))
    return seen == set(layout)


def placements_from_scratch(state: BreakingNewsState, seat: int) -> set[PlaceCard]:
    """Every placement of the seat's cards, worked out from the layout alone."""
    layout = layout_of(state)
    empty = {(x + dx, y + dy) for x, y in layout for dx, dy in STEPS} - set(layout)
    placements = set()
    for x, y in empty:
        touching = [
            (side, layout[(x + dx, y + dy)])
            for side, (dx, dy) in enumerate(STEPS)
            if (x + dx, y + dy) in layout
        ]
        for card in state.hands[seat]:
            if all(
                other in state.face_down or EDGES[card][side] == EDGES[other][(side + 2) % 4]
                for side, other in touching
            ):
                placements.add(PlaceCard(card, x, y))
    return placements


class InvariantCheck:
    """The per-move checks of one game; remembers when the final round began."""

    def __init__(self, seats: int, thorough: bool):
        self.seats = seats
        self.thorough = thorough
        self.target = completions_to_end(seats)
        self.turns_after_final: int | None = None
        self.moves = 0

    def __call__(self, state: BreakingNewsState, seat: int, action, events: list) -> None:
        self.moves += 1
        assert type(events[0]).__name__ in FIRST_EVENT[type(action).__name__]
        elements = state.element_deck + [c for hand in state.hands for c in hand]
        assert sorted(elements + list(state.grid.values())) == list(range(ELEMENT_COUNT))
        objects = state.object_deck + state.open_objects + [s.object for s in state.stories]
        objects += [obj for hand in state.object_hands for obj in hand]
        assert sorted(objects) == list(range(OBJECT_COUNT))
        mid_turn = state.phase in (NEWS, STORY)
        for holder, hand in enumerate(state.hands):
            full = 3 - (mid_turn and holder == state.seat_to_move)
            assert len(hand) == full or (not state.element_deck and len(hand) < full)
        assert all(len(hand) <= OBJECT_HAND_LIMIT for hand in state.object_hands)
        assert len(state.open_objects) == 2 or not state.object_deck
        assert not state.face_down or state.advanced
        assert sum(state.completed) == len(state.stories)
        for event in events:
            if isinstance(event, CardPlaced):
                self.check_placed(state, event)
            elif isinstance(event, ObjectCompleted):
                self.check_completed(state, event)
        self.check_final_round(events)
        self.check_hidden(events)
        if self.thorough:
            self.check_thoroughly(state)

    @staticmethod
    def check_placed(state: BreakingNewsState, event: CardPlaced) -> None:
        """The new card touches a card, and every face-up card it touches matches its edge."""
        touching = 0
        for side, (dx, dy) in enumerate(STEPS):
            other = state.grid.get(cell_of(event.x + dx, event.y + dy))
            if other is not None:
                touching += 1
                if other not in state.face_down:
                    assert EDGES[event.card][side] == EDGES[other][(side + 2) % 4]
        assert touching

    def check_completed(self, state: BreakingNewsState, event: ObjectCompleted) -> None:
        """The story holds its words; the chain was face up; the middle turns in advanced mode."""
        assert missing_word(event.story, event.cards, event.language) is None
        first, middle, last = event.cards
        assert first not in state.face_down and last not in state.face_down
        assert (middle in state.face_down) == state.advanced
        told = [story for story in state.stories if story.seat == event.seat]
        assert state.completed[event.seat] == len(told) <= self.target
        assert state.scores[event.seat] == sum(story.points for story in told)

    def check_final_round(self, events: list) -> None:
        for event in events:
            if isinstance(event, FinalRoundStarted):
                assert self.turns_after_final is None
                self.turns_after_final = 0
            elif isinstance(event, TurnEnded) and self.turns_after_final is not None:
                self.turns_after_final += 1
            elif isinstance(event, GameEnded) and event.reason != "stalemate":
                assert self.turns_after_final == self.seats
        if self.turns_after_final is not None:
            assert self.turns_after_final <= self.seats

    def check_hidden(self, events: list) -> None:
        for event in events:
            if isinstance(event, SECRET_EVENTS):
                for viewer in (*range(self.seats), None):
                    redacted = GAME.redact(event, viewer)
                    if viewer == event.seat:
                        assert redacted == event
                    else:
                        assert redacted == hidden_form(event)
            else:
                assert GAME.redact(event, None) is event

    def check_thoroughly(self, state: BreakingNewsState) -> None:
        layout = layout_of(state)
        assert connected(layout)
        for card, side, other in adjacent_pairs(layout):
            if card not in state.face_down and other not in state.face_down:
                assert EDGES[card][side] == EDGES[other][side + 2]
        if state.phase == PLAY:
            seat = state.seat_to_move
            listed = [a for a in GAME.legal_actions(state, seat) if isinstance(a, PlaceCard)]
            assert len(set(listed)) == len(listed)
            assert set(listed) == placements_from_scratch(state, seat)
        for viewer in (*range(self.seats), None):
            seen = msgspec.json.decode(msgspec.json.encode(GAME.view(state, viewer)))
            assert "element_deck" not in seen and "hands" not in seen
            if viewer is None:
                assert seen["hand"] is None and seen["objects"] is None
            else:
                assert [card["card"] for card in seen["hand"]] == state.hands[viewer]
                assert [obj["object"] for obj in seen["objects"]] == state.object_hands[viewer]
            assert seen["hand_sizes"] == [len(hand) for hand in state.hands]


@pytest.mark.parametrize("seats", [2, 3, 4])
def test_random_games_keep_every_invariant(seats):
    rng = random.Random(f"breaking-news-{seats}")
    reasons: dict[str, int] = {}
    tiebreaks: dict[str, int] = {}
    for game in range(GAMES_PER_COUNT):
        check = InvariantCheck(seats, game % THOROUGH_EVERY == 0)
        state, outcome, moves = random_playout(
            GAME, seats, rng, options_for(game, seats), check=check
        )
        assert moves == check.moves
        assert GAME.to_move(state) == [] and GAME.legal_actions(state, 0) == []
        assert outcome.scores == state.scores
        top = max(outcome.scores)
        assert outcome.winners and all(outcome.scores[w] == top for w in outcome.winners)
        assert (outcome.scores.count(top) > 1) == bool(state.tiebreak_used)
        reasons[outcome.reason] = reasons.get(outcome.reason, 0) + 1
        for step in state.tiebreak_used:
            tiebreaks[step] = tiebreaks.get(step, 0) + 1
    assert set(reasons) <= {"deck_empty", "objects_completed", "stalemate"}
    assert reasons.get("deck_empty", 0) > 0 and reasons.get("objects_completed", 0) > 0
    assert tiebreaks.get("objects_in_hand", 0) > 0
    if seats > 2:
        assert tiebreaks.get("vote", 0) > 0
