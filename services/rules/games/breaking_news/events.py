"""Breaking News' actions and events: the msgspec Structs a turn is made of."""

from __future__ import annotations

import msgspec

from services.rules.games.breaking_news.cards import StoryText


class Action(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag=True):
    """Base of every Breaking News action; the tag is the class name."""


class PlaceCard(Action, frozen=True):
    """Play this element card from your hand onto the cell (x, y)."""

    card: int
    x: int
    y: int


class PassTurn(Action, frozen=True):
    """Put your whole hand under the element deck and draw three cards instead of playing."""


class CompleteObject(Action, frozen=True):
    """Breaking News: complete an open or own object with three chained cards and a story."""

    object: int
    cards: list[int]
    story: StoryText
    language: str | None = None


class EndTurn(Action, frozen=True):
    """Finish the turn without completing an object."""


class CallBreakingNews(Action, frozen=True):
    """Stopwatch rule: show the object and point at the three cards; the story clock starts."""

    object: int
    cards: list[int]
    server_time_ms: int = 0


class TellStory(Action, frozen=True):
    """Stopwatch rule: tell the story of the called news; the clock stops."""

    story: StoryText
    language: str | None = None
    server_time_ms: int = 0


class ReportSilence(Action, frozen=True):
    """Stopwatch rule: the teller fell silent for more than 3 s; the story ends uncompleted."""


class VoteForStory(Action, frozen=True):
    """Tie-break: name the most interesting story (its index in the game's stories)."""

    story: int


BreakingNewsAction = (
    PlaceCard
    | PassTurn
    | CompleteObject
    | EndTurn
    | CallBreakingNews
    | TellStory
    | ReportSilence
    | VoteForStory
)


# --- Events (past tense) --------------------------------------------------------------------


class Event(msgspec.Struct, frozen=True, tag_field="type", tag=True):
    """Base of every Breaking News event; the tag is the class name."""


class GameStarted(Event, frozen=True):
    """The rules in force and both decks in draw order: the only chance in a match."""

    seats: int
    mode: str
    tiebreak: str
    foreign_language_bonus: bool
    stopwatch: bool
    home_languages: list[str] | None
    element_deck: list[int]
    object_deck: list[int]
    rules_version: int | None = None
    """The rules the match is played under, for good (``versions.RULES``); None in a log
    recorded before versions."""


class DecksShuffled(Event, frozen=True):
    """``GameStarted`` as players may see it: the rules and the deck sizes, not the order."""

    seats: int
    mode: str
    tiebreak: str
    foreign_language_bonus: bool
    stopwatch: bool
    home_languages: list[str] | None
    element_cards: int
    object_cards: int


class StartingCardPlaced(Event, frozen=True):
    """Setup: the top element card joined the starting layout."""

    seat: int
    card: int
    x: int
    y: int


class StartingCardSetAside(Event, frozen=True):
    """Setup: the top element card fitted nowhere in the layout and went under the deck."""

    card: int


class ElementDrawn(Event, frozen=True):
    """A seat drew the top element card; ``card`` is ``None`` for everyone else."""

    seat: int
    card: int | None = None


class ObjectDrawn(Event, frozen=True):
    """A seat drew the top object card; ``object`` is ``None`` for everyone else."""

    seat: int
    object: int | None = None


class ObjectOpened(Event, frozen=True):
    """The top object card was laid open beside the deck."""

    object: int


class CardPlaced(Event, frozen=True):
    """An element card left a hand for the table."""

    seat: int
    card: int
    x: int
    y: int


class HandReturned(Event, frozen=True):
    """A pass: the seat's hand went under the element deck (``cards`` only for that seat)."""

    seat: int
    count: int
    cards: list[int] | None = None


class BreakingNewsCalled(Event, frozen=True):
    """Stopwatch rule: the seat called news on this object and chain; the clock started."""

    seat: int
    object: int
    cards: list[int]
    called_at_ms: int


class StoryInterrupted(Event, frozen=True):
    """Stopwatch rule: silence ended the story of ``seat``; the object stays uncompleted."""

    seat: int
    reported_by: int


class ObjectCompleted(Event, frozen=True):
    """An object was completed with its story: part of the match record.

    ``cards`` is the chain with its middle card second; ``points`` include the optional rules'
    bonus and malus; ``duration_ms`` is the stopwatch time (``None`` without the stopwatch).
    """

    seat: int
    object: int
    cards: list[int]
    story: str
    language: str | None
    points: int
    was_open: bool
    duration_ms: int | None = None


class CardTurnedFaceDown(Event, frozen=True):
    """Advanced mode: the middle card of the completed chain was turned face down."""

    card: int


class FinalRoundStarted(Event, frozen=True):
    """``objects_completed`` or ``deck_empty``: every other seat has one more turn."""

    seat: int
    reason: str


class TurnEnded(Event, frozen=True):
    seat: int


class VotingOpened(Event, frozen=True):
    """A tie: the other players vote for the most interesting story of the tied players."""

    reason: str
    tied: list[int]
    voters: list[int]
    stories: list[int]


class VoteCast(Event, frozen=True):
    seat: int
    story: int


class GameEnded(Event, frozen=True):
    """The final scores and winners; ``tiebreak`` lists the tie-break steps that were needed."""

    reason: str
    scores: list[int]
    winners: list[int]
    tiebreak: list[str]


_PlayEvent = (
    StartingCardPlaced
    | StartingCardSetAside
    | ElementDrawn
    | ObjectDrawn
    | ObjectOpened
    | CardPlaced
    | HandReturned
    | BreakingNewsCalled
    | StoryInterrupted
    | ObjectCompleted
    | CardTurnedFaceDown
    | FinalRoundStarted
    | TurnEnded
    | VotingOpened
    | VoteCast
    | GameEnded
)
"""The events after the shuffle, shown to every seat as they are stored."""
BreakingNewsEvent = GameStarted | _PlayEvent
BreakingNewsRedactedEvent = DecksShuffled | _PlayEvent
"""The events as ``redact`` shows them: ``DecksShuffled`` stands for ``GameStarted``."""
