"""Breaking News' state and views: the msgspec Structs the engine folds and shows."""

from __future__ import annotations

import msgspec

from services.rules.games.breaking_news.cards import (
    COLOURS,
    EDGES,
    ELEMENT_COUNT,
    OBJECT_POINTS,
    OBJECT_SYMBOLS,
    PLAY,
    SIDES,
    SYMBOL_OF,
    SYMBOLS,
    WORDS,
)


class Story(msgspec.Struct, frozen=True):
    """A completed object with the story that completed it."""

    seat: int
    object: int
    cards: list[int]
    story: str
    language: str | None
    points: int
    duration_ms: int | None


class BreakingNewsState(msgspec.Struct, tag_field="type", tag=True):
    """The full, secret state; ``evolve`` mutates it. Decks list the top card first."""

    seats: int
    advanced: bool
    tiebreak: str
    foreign_language_bonus: bool
    stopwatch: bool
    home_languages: list[str] | None
    element_deck: list[int]
    object_deck: list[int]
    hands: list[list[int]]
    object_hands: list[list[int]]
    open_objects: list[int]
    grid: dict[int, int]
    """Cell -> element card on the table."""
    positions: dict[int, int]
    """Element card on the table -> its cell."""
    open_cells: dict[int, int]
    """Empty cell next to the table -> packed requirement (see the grid notes above)."""
    face_down: list[int]
    scores: list[int]
    completed: list[int]
    stories: list[Story]
    phase: int = PLAY
    seat_to_move: int = 0
    turns: int = 0
    played: int = -1
    """The card placed this turn, while its news may still be told."""
    call_object: int = -1
    call_cards: list[int] = []
    called_at_ms: int = 0
    passes_in_a_row: int = 0
    last_turn: int | None = None
    final_reason: str | None = None
    voters: list[int] = []
    candidates: list[int] = []
    votes: dict[int, int] = {}
    rules_version: int | None = None
    """``GameStarted.rules_version``, None for version 2 (``RULES.in_state``): the version a
    match recorded before versions plays on by, as the release before did, whose states have
    no such field."""
    end_reason: str | None = None
    winners: list[int] = []
    tiebreak_used: list[str] = []


# --- Views ----------------------------------------------------------------------------------


class ElementCard(msgspec.Struct, frozen=True):
    card: int
    symbol: str
    words: dict[str, str]
    edges: dict[str, str]


class ObjectCard(msgspec.Struct, frozen=True):
    object: int
    symbols: list[str]
    points: int


class TableCard(msgspec.Struct, frozen=True):
    x: int
    y: int
    face_down: bool
    card: ElementCard


class CalledNews(msgspec.Struct, frozen=True):
    seat: int
    object: ObjectCard
    cards: list[int]
    called_at_ms: int


class Voting(msgspec.Struct, frozen=True):
    voters: list[int]
    stories: list[int]
    votes: dict[int, int]


class BreakingNewsView(msgspec.Struct, frozen=True, tag_field="type", tag=True):
    """The table as one seat (or a spectator, ``seat=None``) may see it: never a hidden card."""

    seat: int | None
    seats: int
    mode: str
    tiebreak: str
    foreign_language_bonus: bool
    stopwatch: bool
    home_languages: list[str] | None
    phase: str
    to_move: list[int]
    turns: int
    turns_left: int | None
    table: list[TableCard]
    hand: list[ElementCard] | None
    objects: list[ObjectCard] | None
    hand_sizes: list[int]
    object_hand_sizes: list[int]
    open_objects: list[ObjectCard]
    element_deck_size: int
    object_deck_size: int
    scores: list[int]
    completed: list[int]
    stories: list[Story]
    played_card: int | None
    called_news: CalledNews | None
    voting: Voting | None
    end_reason: str | None
    winners: list[int]
    tiebreak_used: list[str]


ELEMENT_CARDS = tuple(
    ElementCard(
        card=index,
        symbol=SYMBOLS[SYMBOL_OF[index]],
        words=dict(WORDS[index]),
        edges={side: COLOURS[colour] for side, colour in zip(SIDES, EDGES[index], strict=True)},
    )
    for index in range(ELEMENT_COUNT)
)
OBJECT_CARDS = tuple(
    ObjectCard(object=index, symbols=[SYMBOLS[s] for s in symbols], points=OBJECT_POINTS[index])
    for index, symbols in enumerate(OBJECT_SYMBOLS)
)
