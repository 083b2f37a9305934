"""Hanabi's actions, events, state and views: the msgspec Structs the engine exchanges."""

from __future__ import annotations

import msgspec


class Action(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag=True):
    """Base of every Hanabi action; the tag is the class name."""


class PlayCard(Action, frozen=True):
    """Play the card of this order from your hand onto the fireworks."""

    card: int


class DiscardCard(Action, frozen=True):
    """Discard the card of this order from your hand to regain a clue token."""

    card: int


class GiveColourClue(Action, frozen=True):
    """Point out every card of one colour in another player's hand."""

    target: int
    colour: str


class GiveRankClue(Action, frozen=True):
    """Point out every card of one rank in another player's hand."""

    target: int
    rank: int


HanabiAction = PlayCard | DiscardCard | GiveColourClue | GiveRankClue


# --- Events (past tense) --------------------------------------------------------------------


class Event(msgspec.Struct, frozen=True, tag_field="type", tag=True):
    """Base of every Hanabi event; the tag is the class name."""


class GameStarted(Event, frozen=True):
    """The rules in force and the whole deck in draw order: the only chance in a match."""

    seats: int
    suits: int
    rainbow: bool
    rainbow_short: bool
    empty_clues: bool
    deck: list[int]
    rules_version: int = 1
    """The rules the match is played and folded under, for good: 1 (every match dealt before
    the field: the state keeps no clue history) or 2 (it keeps every clue, ``clues``). A new
    deal takes ``versions.RULES.current``; a recorded one folds by its own."""


class SeenCard(msgspec.Struct, frozen=True):
    """A card by order, with its identity when the viewer may see it (else ``None``)."""

    order: int
    suit: str | None = None
    rank: int | None = None


class CardsDealt(Event, frozen=True):
    """``GameStarted`` as one seat may see it: the rules, the deck size and the visible hands."""

    seats: int
    suits: int
    rainbow: bool
    rainbow_short: bool
    empty_clues: bool
    deck_size: int
    hands: list[list[SeenCard]]


class ClueGiven(Event, frozen=True):
    """A clue and the orders of the cards it touched (public: everyone sees the pointing)."""

    seat: int
    target: int
    touched: list[int]
    colour: str | None = None
    rank: int | None = None


class CardPlayed(Event, frozen=True):
    """A card extended its firework."""

    seat: int
    card: int
    suit: str
    rank: int


class CardMisplayed(Event, frozen=True):
    """A played card fitted no firework and went to the discard pile."""

    seat: int
    card: int
    suit: str
    rank: int


class FuseBurned(Event, frozen=True):
    """A misplay burned a fuse; ``fuses_burned`` counts them so far."""

    fuses_burned: int


class CardDiscarded(Event, frozen=True):
    """A card was discarded and a clue token regained."""

    seat: int
    card: int
    suit: str
    rank: int


class CardDrawn(Event, frozen=True):
    """A seat drew the next card; ``suit``/``rank`` are ``None`` for whoever may not see it."""

    seat: int
    card: int
    suit: str | None = None
    rank: int | None = None


class GameEnded(Event, frozen=True):
    """The game is over: ``perfect``, ``strike_out`` or ``deck_out``, with the final score."""

    reason: str
    score: int


_PlayEvent = (
    ClueGiven | CardPlayed | CardMisplayed | FuseBurned | CardDiscarded | CardDrawn | GameEnded
)
"""The events after the deal, shown to every seat as they are stored."""
HanabiEvent = GameStarted | _PlayEvent
HanabiRedactedEvent = CardsDealt | _PlayEvent
"""The events as ``redact`` shows them: ``CardsDealt`` stands for ``GameStarted``."""


# --- State ----------------------------------------------------------------------------------


class ClueRecord(msgspec.Struct, frozen=True):
    """A clue as the whole table saw it given: public, like the ``ClueGiven`` it folds from.

    ``turn`` counts from 0 (the view's ``turns`` when it was given); ``slots`` are the touched
    cards' places, from 1, in the target's hand as it was listed then (oldest first).
    """

    turn: int
    seat: int
    target: int
    touched: list[int]
    slots: list[int]
    colour: str | None = None
    rank: int | None = None


class HanabiState(msgspec.Struct, tag_field="type", tag=True):
    """The full, secret state. Cards are int codes and orders; ``evolve`` mutates the lists.

    Clue knowledge is four bitmasks per card order: colours (bit = colour index) and ranks
    (bit = rank - 1) a clue said the card is, and those a clue said it is not.
    """

    seats: int
    suits: int
    rainbow: bool
    rainbow_short: bool
    empty_clues: bool
    deck: list[int]
    hands: list[list[int]]
    drawn: int
    fireworks: list[int]
    discards: list[int]
    clue_tokens: int
    fuses_burned: int
    score: int
    seat_to_move: int
    turns: int
    last_turn: int | None
    colours_clued: list[int]
    colours_excluded: list[int]
    ranks_clued: list[int]
    ranks_excluded: list[int]
    end_reason: str | None = None
    clues: list[ClueRecord] | None = None
    """Every clue so far, in the order given, folded from the ``ClueGiven`` events; None in a
    match dealt under rules version 1, which kept none (its stored states have no such field,
    and its fold must stay theirs)."""


# --- Views ----------------------------------------------------------------------------------


class CardView(msgspec.Struct, frozen=True):
    """A card in a hand: its identity if the viewer may see it, and what clues revealed."""

    order: int
    suit: str | None
    rank: int | None
    clued_colours: tuple[str, ...]
    excluded_colours: tuple[str, ...]
    clued_ranks: tuple[int, ...]
    excluded_ranks: tuple[int, ...]
    possible_suits: tuple[str, ...]
    possible_ranks: tuple[int, ...]


class HanabiView(msgspec.Struct, frozen=True, tag_field="type", tag=True):
    """The table as one seat (or a spectator, ``seat=None``) may see it."""

    seat: int | None
    seats: int
    suits: list[str]
    clue_colours: list[str]
    empty_clues: bool
    clue_tokens: int
    fuses_burned: int
    fireworks: dict[str, int]
    score: int
    deck_size: int
    discards: list[SeenCard]
    hands: list[list[CardView]]
    seat_to_move: int | None
    turns: int
    turns_left: int | None
    end_reason: str | None
    undrawn: list[SeenCard] | None
    variant: tuple[str, ...]
    """The table's rules beyond the base game, in words: the suits, how multicolour behaves,
    whether a clue may touch no card."""
    clues: list[ClueRecord] | None
    """Every clue so far, oldest first: who clued whom, what, which cards, on which turn; null
    in a match dealt before the clue history was kept (rules version 1)."""
