"""Dingo's actions, events, state and views: the msgspec Structs the engine exchanges."""

from __future__ import annotations

import msgspec

from services.rules.games.dingo.cards import Card


class Action(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag=True):
    """Base of every Dingo action; the tag is the class name."""


class PlayCard(Action, frozen=True, gc=False):
    """Play a hand card onto the ranch of seat ``ranch`` (your own or an opponent's).

    ``target``: the card its effect removes (any ranch), or None to decline the effect.
    ``destroy_protected``: also destroy your protected card (own ranch, colour already there).
    """

    card: str
    ranch: int
    target: str | None = None
    destroy_protected: bool = False


class DestroyProtected(Action, frozen=True, gc=False):
    """Destroy the protected card of your own ranch (needs more than one ranch card)."""


class DiscardCard(Action, frozen=True, gc=False):
    """Discard a hand card: it fills the discard pile and you draw a new one."""

    card: str


DingoAction = PlayCard | DestroyProtected | DiscardCard


# --- Events (past tense) --------------------------------------------------------------------


class Event(msgspec.Struct, frozen=True, tag_field="type", tag=True):
    """Base of every Dingo event; the tag is the class name."""


class GameStarted(Event, frozen=True):
    """The rules in force. ``chance_seed``, ``deck_order`` and ``die_rolls`` decide every day's
    shuffle and roll; they are None in every redacted copy."""

    seats: int
    first_player: int
    discard_limit: int
    target_score: int
    tiebreak: str
    chance_seed: int | None
    deck_order: list[str] | None
    die_rolls: list[int] | None
    rules_version: int | None = None
    """The rules the match is played under, for good (``versions.RULES``); None in a log
    recorded before versions, which folds by version 1."""


class DayStarted(Event, frozen=True):
    """A day's die roll and target and the whole deal: the face-up ranch card and the hand of
    each seat, and the draw pile top first (secret: see ``DayDealt``).

    The deck is dealt from the top: one ranch card to each seat from the start player on,
    clockwise; then two rounds of one hand card each in the same order; the rest is the pile.
    """

    day: int
    start_player: int
    roll: int
    target: int
    ranches: list[str]
    hands: list[list[str]]
    draw_pile: list[str]


class DayDealt(Event, frozen=True):
    """``DayStarted`` as one seat may see it: the ranch cards (by seat), its own hand
    (None for spectators) and the size of the draw pile; every hand holds two cards."""

    day: int
    start_player: int
    roll: int
    target: int
    ranches: list[str]
    hand: list[str] | None
    draw_pile: int


class CardPlayed(Event, frozen=True, gc=False):
    """``seat`` put a hand card on the right end of the ranch of seat ``ranch``."""

    seat: int
    card: str
    ranch: int


class CardRemoved(Event, frozen=True, gc=False):
    """The effect of ``seat``'s card removed ``card`` from the ranch of seat ``ranch``."""

    seat: int
    card: str
    ranch: int
    keyword: str


class ProtectedCardDestroyed(Event, frozen=True, gc=False):
    """``seat`` destroyed its own protected card; the next card becomes protected."""

    seat: int
    card: str


class CardDiscarded(Event, frozen=True, gc=False):
    """``seat`` discarded a hand card onto the (face-up) discard pile."""

    seat: int
    card: str


class TurnEnded(Event, frozen=True):
    """``seat`` drew back up to two: ``drawn`` cards, named in ``cards`` for the drawer only."""

    seat: int
    drawn: int
    cards: list[str] | None


class DayEnded(Event, frozen=True):
    """The day is scored. ``reason``: ``discard_limit`` or ``draw_pile_empty``."""

    day: int
    reason: str
    target: int
    values: list[int]
    points: list[int]
    totals: list[int]


class GameEnded(Event, frozen=True):
    """The match is over: ``finished`` (one leader) or ``tie_shared``."""

    reason: str
    totals: list[int]
    winners: list[int]


_PlayEvent = (
    CardPlayed
    | CardRemoved
    | ProtectedCardDestroyed
    | CardDiscarded
    | TurnEnded
    | DayEnded
    | GameEnded
)
"""The events of a day's play, shown to every seat as they are stored."""
DingoEvent = GameStarted | DayStarted | _PlayEvent
DingoRedactedEvent = GameStarted | DayDealt | _PlayEvent
"""The events as ``redact`` shows them: ``DayDealt`` stands for ``DayStarted``."""


# --- State ----------------------------------------------------------------------------------


class DingoState(msgspec.Struct, tag_field="type", tag=True):
    """The full, secret state. Cards are int codes; ranches list their cards left to right
    (index 0 is the protected card); ``evolve`` mutates the lists in place."""

    seats: int
    first_player: int
    discard_limit: int
    target_score: int
    tiebreak: str
    chance_seed: int
    given_decks: list[int]
    given_rolls: list[int]
    totals: list[int]
    day: int = 0
    roll: int = 0
    target: int = 0
    start_player: int = 0
    seat_to_move: int = 0
    draw_pile: list[int] = []
    drawn: int = 0
    hands: list[list[int]] = []
    ranches: list[list[int]] = []
    discards: list[int] = []
    last_day: DayEnded | None = None
    winners: list[int] | None = None
    end_reason: str | None = None


# --- Views ----------------------------------------------------------------------------------


class RanchView(msgspec.Struct, frozen=True):
    """One seat's ranch: its starting colour, cards left to right, value and protections."""

    seat: int
    starting_colour: str
    cards: list[Card]
    value: int
    protected: str
    moon_guarded: list[str]
    open_colours: list[str]
    """Colours an opponent may play onto this ranch."""


class DingoView(msgspec.Struct, frozen=True, tag_field="type", tag=True):
    """The table as one seat (or a spectator, ``seat=None``) may see it."""

    seat: int | None
    seats: int
    day: int
    roll: int
    target: int
    start_player: int
    seat_to_move: int | None
    ranches: list[RanchView]
    hand: list[Card] | None
    hand_sizes: list[int]
    hands: list[list[Card]] | None
    """Every hand, shown only once the game is over."""
    draw_pile: int
    discards: list[Card]
    discard_limit: int
    totals: list[int]
    target_score: int
    tiebreak: str
    tie_break_day: bool
    last_day: DayEnded | None
    winners: list[int] | None
    end_reason: str | None
