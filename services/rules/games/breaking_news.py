"""Breaking News: journalists join word cards into chains and tell the news (seed 000).

The card data is authored (no public list exists): ``seeds/breaking_news/cards.json`` holds the
35 element cards (a word in German, Italian and English, one symbol, a colour on each edge) and
the 20 object cards (three symbols and a point value); the README there documents the choices.

Coordinates: x grows east, y grows north; cards are never rotated. Element cards and object
cards are named by their ids in the data file.

A turn is a short sequence of actions by the seat to move:

- ``PlaceCard`` next to at least one table card, every touching edge matching, or
  ``PassTurn`` (the whole hand goes under the element deck and three cards are drawn).
- After a placement the turn pauses for news (phase ``news``) only if the table now shows a
  chain through the new card whose symbols are those of some object nobody has completed yet.
  That is public knowledge, so the pause reveals nothing about the player's hidden objects.
  The player then completes an object (``CompleteObject``, which carries the story) or ends
  the turn (``EndTurn``). With the stopwatch the completion takes two steps:
  ``CallBreakingNews`` starts the clock, ``TellStory`` stops it, and while the story runs any
  seat may ``ReportSilence`` (more than 3 s of silence), which ends the story without a
  completion.
- The turn then finishes by itself: without a completion, a card touching two or more table
  cards draws an object card (up to 3 in hand); then an element card is drawn.

Rulings where the seed is silent:

- The starting layout is built by ``setup``: each seat's card goes, in order, to the first
  fitting place along the row through the first card (nearest end first), else to the first
  fitting place next to the layout; a card that fits nowhere goes under the deck.
- Object cards: the first two of the shuffled deck are opened, then each seat gets one.
- One completion per turn. A face-down card has no colours: it touches (it counts for the
  two-card draw and as a neighbour) but constrains no edge, and it belongs to no chain.
- A story contains a card's word if its case-folded text contains the word in any of the
  card's languages (inside a longer word too: "Eisbär" contains "Bär"). A story declared in
  one of the cards' languages must contain the words in that language.
- The teller's own language is the option ``home_languages`` (one code per seat).
- If the players pass in a row ``seats + ceil(deck / 3)`` times (every card has been through a
  hand without being played), the game ends at once (``stalemate``): passing alone must not
  keep a stuck game running.
- Views and the event log never show a hand to anyone else, nor the deck order, even after
  the end; once the match has ended, a full replay (``full=true``) and the match file show
  everything, as for every game (there is nothing left to protect).

Server time: ``CallBreakingNews`` and ``TellStory`` carry ``server_time_ms``, which clients
must not set: the rules service stamps its wall clock (ms since the epoch) into every action
that has this field before calling ``decide``, which stays pure. Stories are timed from the
call's stamp to the story's stamp.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from typing import Annotated, Any

import msgspec

from services.rules.games.contract import (
    SEEDS_DIR,
    Game,
    OptionSpec,
    Outcome,
    Rejection,
    evolve_in_place,
)

CARD_FILE = SEEDS_DIR / "breaking_news" / "cards.json"
MIN_SEATS, MAX_SEATS = 2, 4
START_HAND = 3
OBJECT_HAND_LIMIT = 3
OPEN_OBJECTS = 2
MAX_STORY_CHARS = 2000
StoryText = Annotated[
    str,
    msgspec.Meta(
        max_length=MAX_STORY_CHARS,
        description="The story: the word of each chain card in it (in its language, if named)",
    ),
]
SHORT_STORY_MS = 15_000
LONG_STORY_MS = 30_000
SIDES = ("north", "east", "south", "west")
MODES = ("beginner", "advanced")
TIEBREAKS = ("vote", "objects_in_hand")
PHASES = ("play", "news", "story", "vote", "over")
PLAY, NEWS, STORY, VOTE, OVER = range(len(PHASES))
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")


def completions_to_end(seats: int) -> int:
    """The completed objects that start the final round: the fourth with two players."""
    return 4 if seats == 2 else 3


# --- Card data ------------------------------------------------------------------------------


def _load_cards() -> dict[str, Any]:
    with CARD_FILE.open(encoding="utf-8") as handle:
        return json.load(handle)


def normalise_text(text: str) -> str:
    """The form stories and words are compared in: NFC, case-folded, single spaces."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


CARDS = _load_cards()
LANGUAGES: tuple[str, ...] = tuple(CARDS["languages"])
COLOURS: tuple[str, ...] = tuple(CARDS["colours"])
SYMBOLS: tuple[str, ...] = tuple(CARDS["symbols"])
ELEMENT_COUNT = len(CARDS["elements"])
OBJECT_COUNT = len(CARDS["objects"])
WORDS: tuple[dict[str, str], ...] = tuple(card["words"] for card in CARDS["elements"])
_FOLDED_WORDS = tuple({lang: normalise_text(w) for lang, w in words.items()} for words in WORDS)
SYMBOL_OF: tuple[int, ...] = tuple(SYMBOLS.index(card["symbol"]) for card in CARDS["elements"])
EDGES: tuple[tuple[int, ...], ...] = tuple(
    tuple(COLOURS.index(card["edges"][side]) for side in SIDES) for card in CARDS["elements"]
)
"""Each element card's edge colours, as colour indices, in the order north, east, south, west."""
OBJECT_POINTS: tuple[int, ...] = tuple(card["points"] for card in CARDS["objects"])
OBJECT_SYMBOLS: tuple[tuple[int, ...], ...] = tuple(
    tuple(SYMBOLS.index(symbol) for symbol in card["symbols"]) for card in CARDS["objects"]
)
_SYMBOL_BIT = tuple(1 << symbol for symbol in SYMBOL_OF)
OBJECT_MASK: tuple[int, ...] = tuple(sum(1 << s for s in symbols) for symbols in OBJECT_SYMBOLS)
_ALL_OBJECT_MASKS = frozenset(OBJECT_MASK)
_EDGE_CODE = tuple(sum(colour << 2 * side for side, colour in enumerate(e)) for e in EDGES)
"""Each card's four edge colours packed two bits per side, north lowest."""

# --- The grid -------------------------------------------------------------------------------
# A cell is the int (x + _OFFSET) * _STRIDE + (y + _OFFSET); a neighbour is one step away.
# Open cells (empty, next to a card) map to a packed requirement: bits 0-7 the mask of the
# constrained edges, bits 8-15 the colours they need, bits 16+ how many cards the cell touches.

_OFFSET = 64
_STRIDE = 128
_REACH = 60
"""Largest |x| or |y| accepted; 35 cards never reach further than 34 from the first one."""
_STEPS = (1, _STRIDE, -1, -_STRIDE)
_OPPOSITE = (2, 3, 0, 1)


def cell_of(x: int, y: int) -> int:
    return (x + _OFFSET) * _STRIDE + y + _OFFSET


def xy_of(cell: int) -> tuple[int, int]:
    column, row = divmod(cell, _STRIDE)
    return column - _OFFSET, row - _OFFSET


_XY = tuple(xy_of(cell) for cell in range(_STRIDE * _STRIDE))
"""``xy_of`` for every cell, looked up in the hot path."""


# --- Actions (imperative) -------------------------------------------------------------------


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


# --- State ----------------------------------------------------------------------------------


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


# --- Options --------------------------------------------------------------------------------

OPTIONS = (
    OptionSpec(
        "mode",
        "enum",
        "beginner",
        "advanced: the middle card of a completed chain is turned face down, and a later chain "
        "may have only one of its cards next to a face-down card.",
        list(MODES),
    ),
    OptionSpec(
        "tiebreak",
        "enum",
        "vote",
        "vote: the other players choose the most interesting story of the tied players (German "
        "rules); objects_in_hand: most object cards in hand (Italian rules).",
        list(TIEBREAKS),
    ),
    OptionSpec(
        "foreign_language_bonus",
        "bool",
        False,
        "+1 point for a story declared as told in a language other than the teller's own "
        "(needs home_languages).",
    ),
    OptionSpec(
        "home_languages",
        "list[str]",
        None,
        "Each seat's own language as an ISO 639 code (e.g. de, it, lld), seat by seat.",
    ),
    OptionSpec(
        "stopwatch",
        "bool",
        False,
        "The server times each story: under 15 s costs a point, over 30 s earns one; a story "
        "reported interrupted by more than 3 s of silence completes nothing.",
    ),
    OptionSpec(
        "element_order",
        "list[int]",
        None,
        f"Explicit element deck in draw order: every element card id 0-{ELEMENT_COUNT - 1} once.",
        secret=True,
    ),
    OptionSpec(
        "object_order",
        "list[int]",
        None,
        f"Explicit object deck in draw order: every object card id 0-{OBJECT_COUNT - 1} once.",
        secret=True,
    ),
)


def _order_problem(name: str, order: list[int] | None, size: int) -> str | None:
    if order is None or sorted(order) == list(range(size)):
        return None
    return f"option {name!r} must list every id 0-{size - 1} exactly once"


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """Check the deck orders and the home languages the language bonus needs."""
    for name, size in (("element_order", ELEMENT_COUNT), ("object_order", OBJECT_COUNT)):
        problem = _order_problem(name, options[name], size)
        if problem:
            return Rejection("bad_option", problem)
    languages = options["home_languages"]
    if languages is not None:
        if len(languages) != seats:
            return Rejection(
                "bad_option", f"option 'home_languages' needs one language per seat ({seats})"
            )
        if not all(_LANGUAGE_CODE.fullmatch(code) for code in languages):
            return Rejection(
                "bad_option", "option 'home_languages': codes are 2-3 lowercase letters"
            )
    elif options["foreign_language_bonus"]:
        return Rejection(
            "bad_option",
            "the foreign-language bonus needs each seat's own language: "
            "set option 'home_languages'",
        )
    return options


# --- Setup ----------------------------------------------------------------------------------


def setup(options: dict[str, Any], seats: int, rng: random.Random) -> list[Event]:
    """Shuffle both decks (or take the explicit orders), then lay out and deal as the seed says."""
    elements = options["element_order"]
    objects = options["object_order"]
    if elements is None:
        elements = list(range(ELEMENT_COUNT))
        rng.shuffle(elements)
    if objects is None:
        objects = list(range(OBJECT_COUNT))
        rng.shuffle(objects)
    started = GameStarted(
        seats=seats,
        mode=options["mode"],
        tiebreak=options["tiebreak"],
        foreign_language_bonus=options["foreign_language_bonus"],
        stopwatch=options["stopwatch"],
        home_languages=options["home_languages"],
        element_deck=list(elements),
        object_deck=list(objects),
    )
    state = evolve(None, started)
    events: list[Event] = [started]

    def record(event: Event) -> None:
        events.append(event)
        evolve(state, event)

    for seat in range(seats):
        for _ in range(len(state.element_deck)):
            card = state.element_deck[0]
            cell = _starting_cell(state, card)
            if cell is not None:
                record(StartingCardPlaced(seat, card, *xy_of(cell)))
                break
            record(StartingCardSetAside(card))
        else:
            raise ValueError("no element card fits the starting layout")
    for seat in range(seats):
        for _ in range(START_HAND):
            record(ElementDrawn(seat, state.element_deck[0]))
    for _ in range(OPEN_OBJECTS):
        record(ObjectOpened(state.object_deck[0]))
    for seat in range(seats):
        record(ObjectDrawn(seat, state.object_deck[0]))
    return events


def _starting_cell(state: BreakingNewsState, card: int) -> int | None:
    """The first fitting cell: the first card's row nearest end first, then by distance."""
    if not state.grid:
        return cell_of(0, 0)

    def preference(cell: int) -> tuple[int, int, int, int]:
        x, y = xy_of(cell)
        return abs(y), abs(x), -x, -y

    for cell in sorted(state.open_cells, key=preference):
        if _fits(card, state.open_cells[cell]):
            return cell
    return None


# --- Evolve ---------------------------------------------------------------------------------


def _start(event: GameStarted) -> BreakingNewsState:
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
    )


def _requirement(grid: dict[int, int], face_down: list[int], cell: int) -> int:
    """What a card needs to go on this empty cell, packed (see the grid notes)."""
    mask = colours = touching = 0
    for side in range(4):
        neighbour = grid.get(cell + _STEPS[side])
        if neighbour is None:
            continue
        touching += 1
        if neighbour in face_down:
            continue
        shift = 2 * side
        mask |= 3 << shift
        colours |= EDGES[neighbour][_OPPOSITE[side]] << shift
    return mask | colours << 8 | touching << 16


def _fits(card: int, requirement: int) -> bool:
    return _EDGE_CODE[card] & requirement & 0xFF == (requirement >> 8) & 0xFF


def _refresh_around(state: BreakingNewsState, cell: int) -> None:
    grid, open_cells, face_down = state.grid, state.open_cells, state.face_down
    for step in _STEPS:
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


# --- Chains ---------------------------------------------------------------------------------


def _chains_through(state: BreakingNewsState, grid: dict[int, int], cell: int) -> list[tuple]:
    """Every chain of three face-up cards through the card on ``cell``, middle card second.

    ``grid`` is the table with that card on it. In advanced mode a chain may have only one
    card next to a face-down card.
    """
    face_down = state.face_down
    neighbours = [
        cell + step for step in _STEPS if cell + step in grid and grid[cell + step] not in face_down
    ]
    chains = [
        (first, cell, second)
        for index, first in enumerate(neighbours)
        for second in neighbours[index + 1 :]
    ]
    for middle in neighbours:
        for step in _STEPS:
            end = middle + step
            if end != cell and end in grid and grid[end] not in face_down:
                chains.append((cell, middle, end))
    if face_down and state.advanced:
        chains = [chain for chain in chains if _few_face_down_neighbours(grid, face_down, chain)]
    return [(grid[a], grid[b], grid[c]) for a, b, c in chains]


def _few_face_down_neighbours(grid: dict[int, int], face_down: list[int], chain: tuple) -> bool:
    """At most one of the chain's cells lies next to a face-down card."""
    touching = 0
    for cell in chain:
        if any(grid.get(cell + step) in face_down for step in _STEPS):
            touching += 1
    return touching <= 1


def _chain_mask(chain: tuple) -> int:
    bits = _SYMBOL_BIT
    return bits[chain[0]] | bits[chain[1]] | bits[chain[2]]


def _news_possible(state: BreakingNewsState, grid: dict[int, int], cell: int) -> bool:
    """Whether a chain through the new card fits an object nobody has completed yet (public)."""
    masks: set[int] | frozenset[int] = _ALL_OBJECT_MASKS
    if state.stories:
        taken = {story.object for story in state.stories}
        masks = {OBJECT_MASK[o] for o in range(OBJECT_COUNT) if o not in taken}
    return any(_chain_mask(chain) in masks for chain in _chains_through(state, grid, cell))


# --- Stories --------------------------------------------------------------------------------


def missing_word(story: str, cards: list[int], language: str | None) -> str | None:
    """Why the story lacks one of the cards' words, or ``None`` when it has them all."""
    text = normalise_text(story)
    for card in cards:
        words = _FOLDED_WORDS[card]
        if language in words:
            if words[language] not in text:
                word = WORDS[card][language]
                return f"the story, told in {language}, lacks {word!r} (card {card})"
        elif not any(word in text for word in words.values()):
            shown = " / ".join(WORDS[card][lang] for lang in LANGUAGES)
            return f"the story lacks the word of card {card}: {shown}"
    return None


def canonical_story(cards: list[int] | tuple, language: str) -> str:
    """The plain story a driver without imagination tells: the three words in one language."""
    a, b, c = (WORDS[card][language] for card in cards)
    return f"Breaking News: {a}, {b}, {c}!"


def _story_problem(story: str, cards: list[int], language: str | None) -> Rejection | None:
    if len(story) > MAX_STORY_CHARS:
        return Rejection("story_too_long", f"a story has at most {MAX_STORY_CHARS} characters")
    if language is not None and not _LANGUAGE_CODE.fullmatch(language):
        return Rejection("bad_language", "a language is a code of 2-3 lowercase letters")
    missing = missing_word(story, cards, language)
    if missing:
        return Rejection("word_missing", missing)
    return None


def _story_points(state: BreakingNewsState, seat: int, obj: int, language: str | None) -> int:
    points = OBJECT_POINTS[obj]
    if (
        state.foreign_language_bonus
        and language is not None
        and state.home_languages is not None
        and language != state.home_languages[seat]
    ):
        points += 1
    return points


def stopwatch_adjustment(duration_ms: int) -> int:
    """-1 for a story under 15 s, +1 for one over 30 s."""
    if duration_ms < SHORT_STORY_MS:
        return -1
    return 1 if duration_ms > LONG_STORY_MS else 0


# --- Decide ---------------------------------------------------------------------------------


def _decide_place(state: BreakingNewsState, seat: int, action: PlaceCard) -> list | Rejection:
    card, x, y = action.card, action.x, action.y
    if card not in state.hands[seat]:
        return Rejection("not_in_hand", f"element card {card} is not in your hand")
    if not (-_REACH <= x <= _REACH and -_REACH <= y <= _REACH):
        return Rejection("off_table", f"({x}, {y}) is too far from the other cards")
    cell = cell_of(x, y)
    requirement = state.open_cells.get(cell)
    if requirement is None:
        if cell in state.grid:
            return Rejection("occupied", f"a card already lies on ({x}, {y})")
        return Rejection("no_neighbour", f"({x}, {y}) touches no card on the table")
    if not _fits(card, requirement):
        return Rejection("edges_mismatch", _mismatch(state, card, cell))
    events: list[Any] = [CardPlaced(seat, card, x, y)]
    grid = state.grid.copy()
    grid[cell] = card
    if _news_possible(state, grid, cell):
        return events
    return _finish_turn(state, seat, events, draws_object=requirement >> 16 >= 2)


def _mismatch(state: BreakingNewsState, card: int, cell: int) -> str:
    for side, step in enumerate(_STEPS):
        neighbour = state.grid.get(cell + step)
        if neighbour is None or neighbour in state.face_down:
            continue
        mine, theirs = EDGES[card][side], EDGES[neighbour][_OPPOSITE[side]]
        if mine != theirs:
            return (
                f"the {SIDES[side]} edge of card {card} is {COLOURS[mine]}, "
                f"but card {neighbour} there shows {COLOURS[theirs]}"
            )
    return f"card {card} does not fit there"


def _decide_pass(state: BreakingNewsState, seat: int, action: PassTurn) -> list | Rejection:
    hand = state.hands[seat]
    deck = state.element_deck + hand
    events: list[Any] = [HandReturned(seat, len(hand), list(hand))]
    events += [ElementDrawn(seat, card) for card in deck[:START_HAND]]
    stuck = state.passes_in_a_row + 1 >= state.seats + -(-len(state.element_deck) // 3)
    return _end_turn(state, seat, events, stalemate=stuck)


def _checked_news(
    state: BreakingNewsState, seat: int, obj: int, cards: list[int]
) -> tuple | Rejection:
    """The chain (middle second) that completes ``obj``, or why it does not."""
    if obj not in state.open_objects and obj not in state.object_hands[seat]:
        return Rejection("unknown_object", f"object {obj} is neither open nor in your hand")
    if len(cards) != 3 or len(set(cards)) != 3:
        return Rejection("not_a_chain", "name three different cards of the table")
    if state.played not in cards:
        return Rejection(
            "played_card_missing", f"the chain must include card {state.played}, just played"
        )
    chosen = set(cards)
    for chain in _chains_through(state, state.grid, state.positions[state.played]):
        if set(chain) == chosen:
            if _chain_mask(chain) != OBJECT_MASK[obj]:
                wanted = ", ".join(SYMBOLS[s] for s in OBJECT_SYMBOLS[obj])
                return Rejection(
                    "symbols_mismatch", f"object {obj} needs one card each of: {wanted}"
                )
            return chain
    if state.advanced and state.face_down:
        return Rejection(
            "not_a_chain",
            "those cards are not three connected face-up cards with at most one of them "
            "next to a face-down card",
        )
    return Rejection("not_a_chain", "those cards are not three connected face-up cards")


def _decide_complete(
    state: BreakingNewsState, seat: int, action: CompleteObject
) -> list | Rejection:
    if state.stopwatch:
        return Rejection(
            "call_first", "with the stopwatch, call the news (CallBreakingNews), then TellStory"
        )
    chain = _checked_news(state, seat, action.object, action.cards)
    if isinstance(chain, Rejection):
        return chain
    problem = _story_problem(action.story, action.cards, action.language)
    if problem:
        return problem
    points = _story_points(state, seat, action.object, action.language)
    return _complete(state, seat, action.object, chain, action.story, action.language, points)


def _complete(
    state: BreakingNewsState,
    seat: int,
    obj: int,
    chain: tuple | list,
    story: str,
    language: str | None,
    points: int,
    duration_ms: int | None = None,
) -> list:
    was_open = obj in state.open_objects
    events: list[Any] = [
        ObjectCompleted(seat, obj, list(chain), story, language, points, was_open, duration_ms)
    ]
    if state.advanced:
        events.append(CardTurnedFaceDown(chain[1]))
    if state.object_deck:
        top = state.object_deck[0]
        events.append(ObjectOpened(top) if was_open else ObjectDrawn(seat, top))
    target = completions_to_end(state.seats)
    starts_final_round = state.last_turn is None and state.completed[seat] + 1 == target
    if starts_final_round:
        events.append(FinalRoundStarted(seat, "objects_completed"))
    return _finish_turn(state, seat, events, False, starts_final_round)


def _touching(state: BreakingNewsState, card: int) -> int:
    cell = state.positions[card]
    return sum(cell + step in state.grid for step in _STEPS)


def _decide_decline(state: BreakingNewsState, seat: int, action: EndTurn) -> list | Rejection:
    return _finish_turn(state, seat, [], draws_object=_touching(state, state.played) >= 2)


def _decide_call(state: BreakingNewsState, seat: int, action: CallBreakingNews) -> list | Rejection:
    if not state.stopwatch:
        return Rejection("no_stopwatch", "without the stopwatch, use CompleteObject")
    chain = _checked_news(state, seat, action.object, action.cards)
    if isinstance(chain, Rejection):
        return chain
    return [BreakingNewsCalled(seat, action.object, list(chain), action.server_time_ms)]


def _decide_tell(state: BreakingNewsState, seat: int, action: TellStory) -> list | Rejection:
    if seat != state.seat_to_move:
        return Rejection("not_your_story", f"seat {state.seat_to_move} is telling the story")
    cards = state.call_cards
    problem = _story_problem(action.story, cards, action.language)
    if problem:
        return problem
    duration = max(0, action.server_time_ms - state.called_at_ms)
    obj = state.call_object
    points = _story_points(state, seat, obj, action.language) + stopwatch_adjustment(duration)
    return _complete(state, seat, obj, cards, action.story, action.language, points, duration)


def _decide_silence(state: BreakingNewsState, seat: int, action: ReportSilence) -> list | Rejection:
    teller = state.seat_to_move
    events: list[Any] = [StoryInterrupted(teller, seat)]
    return _finish_turn(state, teller, events, draws_object=_touching(state, state.played) >= 2)


def _decide_vote(state: BreakingNewsState, seat: int, action: VoteForStory) -> list | Rejection:
    if action.story not in state.candidates:
        return Rejection(
            "not_a_candidate", f"vote for one of the tied players' stories: {state.candidates}"
        )
    events: list[Any] = [VoteCast(seat, action.story)]
    if len(state.votes) + 1 < len(state.voters):
        return events
    votes = {**state.votes, seat: action.story}
    tallies = {teller: 0 for teller in _tied(state)}
    for story in votes.values():
        tallies[state.stories[story].seat] += 1
    most = max(tallies.values())
    leaders = [teller for teller, count in tallies.items() if count == most]
    steps = ["vote"]
    if len(leaders) > 1:
        leaders = _most_objects_in_hand(state, leaders)
        steps.append("objects_in_hand")
    events.append(GameEnded(state.final_reason or "", list(state.scores), leaders, steps))
    return events


def _finish_turn(
    state: BreakingNewsState,
    seat: int,
    events: list,
    draws_object: bool,
    final_round_started: bool = False,
) -> list:
    """The end of a turn with a placement: the object draw, the element draw, the end checks."""
    if draws_object and len(state.object_hands[seat]) < OBJECT_HAND_LIMIT and state.object_deck:
        events.append(ObjectDrawn(seat, state.object_deck[0]))
    if state.element_deck:
        events.append(ElementDrawn(seat, state.element_deck[0]))
    elif state.last_turn is None and not final_round_started:
        events.append(FinalRoundStarted(seat, "deck_empty"))
        final_round_started = True
    return _end_turn(state, seat, events, final_round_started)


def _end_turn(
    state: BreakingNewsState,
    seat: int,
    events: list,
    final_round_started: bool = False,
    stalemate: bool = False,
) -> list:
    """Close the turn; after the last turn (or in a stalemate) score and break ties."""
    events.append(TurnEnded(seat))
    last = not final_round_started and state.last_turn == state.turns
    if not (last or stalemate):
        return events
    final = _copy(state)
    for event in events:
        evolve(final, event)
    reason = "stalemate" if stalemate else final.final_reason
    events += _ending(final, reason or "")
    return events


def _tied(state: BreakingNewsState) -> list[int]:
    top = max(state.scores)
    return [seat for seat, score in enumerate(state.scores) if score == top]


def _most_objects_in_hand(state: BreakingNewsState, seats: list[int]) -> list[int]:
    most = max(len(state.object_hands[seat]) for seat in seats)
    return [seat for seat in seats if len(state.object_hands[seat]) == most]


def _ending(final: BreakingNewsState, reason: str) -> list:
    """The game's last events on the final state: the winners, or a vote to break a tie."""
    scores = list(final.scores)
    tied = _tied(final)
    if len(tied) == 1:
        return [GameEnded(reason, scores, tied, [])]
    if final.tiebreak == "vote":
        voters = [seat for seat in range(final.seats) if seat not in tied]
        stories = [index for index, story in enumerate(final.stories) if story.seat in tied]
        if voters and stories:
            return [VotingOpened(reason, tied, voters, stories)]
    return [GameEnded(reason, scores, _most_objects_in_hand(final, tied), ["objects_in_hand"])]


_STATE_ENCODER = msgspec.msgpack.Encoder()
_STATE_DECODER = msgspec.msgpack.Decoder(BreakingNewsState)


def _copy(state: BreakingNewsState) -> BreakingNewsState:
    """A deep copy, made once per game, to score the state after the last turn's events."""
    return _STATE_DECODER.decode(_STATE_ENCODER.encode(state))


_DECIDERS: dict[type, tuple[int, Any]] = {
    PlaceCard: (PLAY, _decide_place),
    PassTurn: (PLAY, _decide_pass),
    CompleteObject: (NEWS, _decide_complete),
    EndTurn: (NEWS, _decide_decline),
    CallBreakingNews: (NEWS, _decide_call),
    TellStory: (STORY, _decide_tell),
    ReportSilence: (STORY, _decide_silence),
    VoteForStory: (VOTE, _decide_vote),
}
_PHASE_HINTS = (
    "place a card (PlaceCard) or pass (PassTurn)",
    "complete an object or end the turn (EndTurn)",
    "the story is being told (TellStory or ReportSilence)",
    "the players vote on the tie (VoteForStory)",
    "the game is over",
)


def decide(state: BreakingNewsState, seat: int, action: Any) -> list | Rejection:
    """Check one action against the rules and return the events it causes."""
    phase = state.phase
    if phase == OVER:
        return Rejection("game_over", "the game is over")
    entry = _DECIDERS.get(type(action))
    if entry is None:
        return Rejection("unknown_action", f"{type(action).__name__} is not a Breaking News action")
    if not 0 <= seat < state.seats:
        return Rejection("unknown_seat", f"there is no seat {seat}")
    if phase == VOTE:
        if seat not in state.voters:
            return Rejection("not_a_voter", "only the players outside the tie vote")
        if seat in state.votes:
            return Rejection("already_voted", "you have already voted")
    elif phase != STORY and seat != state.seat_to_move:
        return Rejection("not_your_turn", f"it is seat {state.seat_to_move}'s turn")
    wanted, decider = entry
    if wanted != phase:
        return Rejection("wrong_phase", f"now is not the time: {_PHASE_HINTS[phase]}")
    return decider(state, seat, action)


# --- Legal actions --------------------------------------------------------------------------

_PASS = PassTurn()
_END_TURN = EndTurn()
_SILENCE = ReportSilence()


def legal_actions(state: BreakingNewsState, seat: int) -> list[Any]:
    """Every action ``decide`` accepts from ``seat``; completions carry a canonical story."""
    phase = state.phase
    if phase == PLAY:
        if seat != state.seat_to_move:
            return []
        return _placements(state, seat)
    if phase == NEWS:
        if seat != state.seat_to_move:
            return []
        return [_END_TURN, *_completions(state, seat)]
    if phase == STORY:
        if seat != state.seat_to_move:
            return [_SILENCE]
        cards = state.call_cards
        return [_SILENCE] + [
            TellStory(canonical_story(cards, language or "en"), language)
            for language in _story_languages(state)
        ]
    if phase == VOTE and seat in state.voters and seat not in state.votes:
        return [VoteForStory(story) for story in state.candidates]
    return []


def _placements(state: BreakingNewsState, seat: int) -> list[Any]:
    actions: list[Any] = [_PASS]
    append, xy = actions.append, _XY
    codes = [(card, _EDGE_CODE[card]) for card in state.hands[seat]]
    for cell, requirement in state.open_cells.items():
        mask, colours = requirement & 0xFF, (requirement >> 8) & 0xFF
        for card, code in codes:
            if code & mask == colours:
                x, y = xy[cell]
                append(PlaceCard(card, x, y))
    return actions


def _story_languages(state: BreakingNewsState) -> tuple[str | None, ...]:
    """Declared languages worth listing: each card language with the bonus, else none."""
    return LANGUAGES if state.foreign_language_bonus else (None,)


def _completions(state: BreakingNewsState, seat: int) -> list[Any]:
    objects = state.open_objects + state.object_hands[seat]
    actions: list[Any] = []
    for chain in _chains_through(state, state.grid, state.positions[state.played]):
        mask = _chain_mask(chain)
        for obj in objects:
            if OBJECT_MASK[obj] != mask:
                continue
            cards = list(chain)
            if state.stopwatch:
                actions.append(CallBreakingNews(obj, cards))
                continue
            for language in _story_languages(state):
                story = canonical_story(cards, language or "en")
                actions.append(CompleteObject(obj, cards, story, language))
    return actions


def to_move(state: BreakingNewsState) -> list[int]:
    """The seat to move; during a story every seat (anyone may report silence); voters."""
    phase = state.phase
    if phase == OVER:
        return []
    if phase == VOTE:
        return [seat for seat in state.voters if seat not in state.votes]
    if phase == STORY:
        teller = state.seat_to_move
        return [teller] + [seat for seat in range(state.seats) if seat != teller]
    return [state.seat_to_move]


def result(state: BreakingNewsState) -> Outcome | None:
    """Object points per seat; the winners after any tie-break."""
    if state.phase != OVER:
        return None
    return Outcome(list(state.scores), list(state.winners), state.end_reason or "")


# --- What each seat may see -----------------------------------------------------------------


def view(state: BreakingNewsState, seat: int | None) -> BreakingNewsView:
    """The table, the open objects, the stories and the viewer's own hands; never others'."""
    over = state.phase == OVER
    table = [
        TableCard(*_XY[cell], card in state.face_down, ELEMENT_CARDS[card])
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


REFUSALS = {
    "unknown_seat": "The acting seat is not a seat of the match: act as one of its seats.",
    "not_a_voter": "Tied players do not vote on the tie: wait for the other players' votes.",
    "already_voted": "You have voted on the tie already: wait for the other voters.",
    "wrong_phase": (
        "The action does not belong to this step of the game (place or pass, news, story, "
        "vote): send one the step takes, as the detail says."
    ),
    "not_in_hand": "The element card is not in your hand: place one of the cards you hold.",
    "off_table": "The square is far from every card: place the card next to a table card.",
    "occupied": "A card already lies on the square: place the card on a free square.",
    "no_neighbour": "The square touches no card of the table: place the card next to one.",
    "edges_mismatch": (
        "An edge of the card differs in colour from the face-up card it touches there: place "
        "it where every touching edge matches, or pass."
    ),
    "unknown_object": (
        "The object is neither open nor in your hand: complete an open object or one of yours."
    ),
    "not_a_chain": (
        "The cards named are not three different, connected face-up cards of the table (in the "
        "advanced game, at most one next to a face-down card): name such a chain."
    ),
    "played_card_missing": "The chain leaves out the card just placed: name a chain through it.",
    "symbols_mismatch": (
        "The chain's symbols are not the object's: name a chain with one card of each of its "
        "symbols."
    ),
    "call_first": (
        "With the stopwatch, an object is not completed at once: call the news "
        "(CallBreakingNews), then tell the story (TellStory)."
    ),
    "no_stopwatch": (
        "This table plays without the stopwatch, so there is no news to call: complete the "
        "object with CompleteObject."
    ),
    "story_too_long": f"The story is longer than {MAX_STORY_CHARS} characters: tell a shorter one.",
    "bad_language": (
        "The story's language is not a code of 2-3 lowercase letters: give such a code, or none."
    ),
    "word_missing": (
        "The story lacks the word of a chain card (in the story's language, if it names one): "
        "tell a story with all three words."
    ),
    "not_your_story": (
        "Another player is telling the story: wait, or report silence (ReportSilence)."
    ),
    "not_a_candidate": (
        "The vote names no story of the tied players: vote for one of their stories."
    ),
}
"""When the rules of Breaking News refuse a move, beyond ``COMMON_REFUSALS`` (see
``Game.refusals``)."""


GAME = Game(
    name="breaking_news",
    title="Breaking News",
    min_players=MIN_SEATS,
    max_players=MAX_SEATS,
    options=OPTIONS,
    action_type=BreakingNewsAction,
    event_type=BreakingNewsEvent,
    redacted_event_type=BreakingNewsRedactedEvent,
    state_type=BreakingNewsState,
    view_type=BreakingNewsView,
    setup=setup,
    decide=decide,
    evolve=evolve,
    legal_actions=legal_actions,
    to_move=to_move,
    view=view,
    redact=redact,
    result=result,
    refusals=REFUSALS,
    validate_options=validate_options,
    description=(
        "Journalists in South Tyrol join word cards by their coloured edges; three linked "
        "cards whose symbols match an object card make the news, told as a story."
    ),
)
