"""The Dingo Ate the Baby (seed 003): fill your ranch up to the day's target, never over it.

A match is a series of days. Each day a d10 + 10 sets the target, every player gets one face-up
card on their ranch (right of their starting card) and two hidden cards in hand. On a turn a
player does one of four things:

- ``PlayCard(card, ranch=own seat)``: any colour onto the own ranch;
- ``PlayCard(card, ranch=other seat)``: onto an opponent's ranch, only in the colour of their
  starting card or of a card already on their ranch;
- ``DestroyProtected()``: the own protected (leftmost) ranch card, only with more than one;
- ``DiscardCard(card)``.

A played card with an effect may remove one card (``target``) from *any* ranch, chosen by the
player, who may also decline (``target=None``). The target must be of a kind the effect names,
and never a protected card or the card directly left of a moon. Playing onto the own ranch a
colour already there also allows destroying the own protected card (``destroy_protected``).
Removed and discarded cards go to the discard pile; the day ends the moment it holds twice as
many cards as there are players (6 with two, by default), or when a player cannot draw back up
to two because the draw pile is empty. Each player within the target scores one point per
player beaten; the game ends on the day a total passes the target score (15).

Cards are data (``seeds/dingo/cards.json``, with every invented choice in the README beside
it): actions and events name cards by id (``"red-baby-1"``); the state holds int codes (the
card's index in that file) and every per-card fact lives in a precomputed table.

Chance: ``setup`` draws a per-match seed with its ``rng`` and records it, hidden, in
``GameStarted``. Day ``d`` shuffles all 60 cards and rolls its die with
``random.Random(f"{seed}:{d}")`` unless the ``deck_order`` / ``die_rolls`` options fix that
day. The resulting order and roll are recorded in ``DayStarted``, so replay needs no RNG.
``redact`` shows each seat ``DayDealt`` instead: the ranch cards, its own hand, the pile size.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec

from services.rules.games.contract import (
    SEEDS_DIR,
    Game,
    OptionSpec,
    Outcome,
    Rejection,
    decide_in_turn,
    evolve_in_place,
)

CARD_FILE = SEEDS_DIR / "dingo" / "cards.json"
HAND_SIZE = 2
DIE_SIDES = 10
TARGET_BASE = 10
MAX_SEATS = 5
KEYWORDS = ("scare", "chase", "destroy", "eat", "stomp")
"""The seed's removal keywords (Erschrecken, Verfolgen, Zerstören, Fressen, Stampfen)."""


# --- Card data ------------------------------------------------------------------------------


class Card(msgspec.Struct, frozen=True, gc=False):
    """One card as clients see it; ``removes`` lists the kinds its effect may remove."""

    id: str
    colour: str
    kind: str
    value: int
    keyword: str | None
    removes: tuple[str, ...]
    guards_left: bool


def load_cards(
    path: Path = CARD_FILE,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Card, ...]]:
    """The colours (in starting-card order), the kinds and the cards (code = index),
    checked for the rules' assumptions."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    colours, kinds = tuple(data["colours"]), data["kinds"]
    if any(kind not in kinds for entry in kinds.values() for kind in entry["removes"]):
        raise ValueError("an effect removes an unknown kind")
    cards = []
    for entry in data["cards"]:
        kind = kinds[entry["kind"]]
        card = Card(
            id=entry["id"],
            colour=entry["colour"],
            kind=entry["kind"],
            value=entry["value"],
            keyword=kind["keyword"],
            removes=tuple(kind["removes"]),
            guards_left=kind.get("guards_left", False),
        )
        if card.colour not in colours or (card.keyword is None) != (not card.removes):
            raise ValueError(f"card {card.id}: unknown colour or effect without keyword")
        if card.keyword is not None and card.keyword not in KEYWORDS:
            raise ValueError(f"card {card.id}: {card.keyword!r} is not a keyword of the seed")
        if card.guards_left and card.removes:
            raise ValueError(f"card {card.id}: a guarding card has no effect")
        cards.append(card)
    if len({card.id for card in cards}) != len(cards):
        raise ValueError("card ids must be unique")
    return colours, tuple(kinds), tuple(cards)


COLOURS, KINDS, CARDS = load_cards()
DECK_SIZE = len(CARDS)
CARD_ID = tuple(card.id for card in CARDS)
CARD_CODE = {card.id: code for code, card in enumerate(CARDS)}
_COLOUR_BIT = tuple(1 << COLOURS.index(card.colour) for card in CARDS)
_KIND_BIT = tuple(1 << KINDS.index(card.kind) for card in CARDS)
_VALUE = tuple(card.value for card in CARDS)
_REMOVES = tuple(sum(1 << KINDS.index(kind) for kind in card.removes) for card in CARDS)
"""Bitmask of the kinds a card's effect removes; 0 for a card without effect."""
_KEYWORD = tuple(card.keyword or "" for card in CARDS)
"""A card's effect keyword; read only for cards that have an effect."""
_GUARDS = tuple(card.guards_left for card in CARDS)
_CODES = range(DECK_SIZE)
_STARTING_BIT = tuple(1 << seat for seat in range(MAX_SEATS))
"""Seat ``s`` holds the starting card of colour ``COLOURS[s]``."""


# --- Actions (imperative) -------------------------------------------------------------------


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


# --- Options --------------------------------------------------------------------------------

OPTIONS = (
    OptionSpec(
        "target_score",
        "int",
        15,
        "The game ends after the day on which a player's total passes (exceeds) this score.",
        minimum=1,
        maximum=99,
    ),
    OptionSpec(
        "tiebreak",
        "enum",
        "extra_day",
        "Leaders tied at the end: share the win, or play extra days until one leads alone.",
        ["share", "extra_day"],
    ),
    OptionSpec(
        "two_player_six",
        "bool",
        True,
        "With two players a day ends at 6 cards on the discard pile instead of 4.",
    ),
    OptionSpec(
        "first_player",
        "int",
        None,
        "Seat of the first start player (who deals and moves first); random if not given.",
        minimum=0,
        maximum=MAX_SEATS - 1,
    ),
    OptionSpec(
        "deck_order",
        "list[str]",
        None,
        f"Deck orders for the first days, {DECK_SIZE} card ids per day in dealing order, "
        "concatenated; later days are shuffled.",
        secret=True,
    ),
    OptionSpec(
        "die_rolls",
        "list[int]",
        None,
        "The d10 rolls (1-10) of the first days, in order; later days are rolled.",
        secret=True,
    ),
)


def options_problem(options: dict[str, Any], seats: int) -> str | None:
    """Why the options cannot start a match of ``seats`` players, or None."""
    first = options.get("first_player")
    if first is not None and not 0 <= first < seats:
        return f"option 'first_player': there is no seat {first} with {seats} players"
    order = options.get("deck_order") or []
    if len(order) % DECK_SIZE:
        return f"option 'deck_order': needs {DECK_SIZE} card ids per day, got {len(order)}"
    every_card = sorted(CARD_ID)
    for start in range(0, len(order), DECK_SIZE):
        if sorted(order[start : start + DECK_SIZE]) != every_card:
            unknown = sorted(set(order[start : start + DECK_SIZE]) - set(CARD_CODE))
            what = f"unknown card ids {unknown[:3]}" if unknown else "a card is repeated"
            day = start // DECK_SIZE + 1
            return f"option 'deck_order': day {day} is not the whole deck ({what})"
    rolls = options.get("die_rolls") or []
    if any(not 1 <= roll <= DIE_SIDES for roll in rolls):
        return f"option 'die_rolls': every roll must be 1-{DIE_SIDES}"
    return None


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """Check the explicit first player, deck orders and die rolls."""
    problem = options_problem(options, seats)
    return Rejection("bad_option", problem) if problem else options


# --- Chance ---------------------------------------------------------------------------------


def day_chance(
    seed: int, day: int, given_decks: list[int], given_rolls: list[int]
) -> tuple[list[int], int]:
    """Day ``day``'s deck order (codes) and die roll: given in the options, else derived."""
    rng = random.Random(f"{seed}:{day}")
    roll = rng.randint(1, DIE_SIDES)
    if day <= len(given_rolls):
        roll = given_rolls[day - 1]
    start = (day - 1) * DECK_SIZE
    if start < len(given_decks):
        return given_decks[start : start + DECK_SIZE], roll
    keys = [rng.random() for _ in _CODES]  # a uniform shuffle, faster than rng.shuffle
    return sorted(_CODES, key=keys.__getitem__), roll


def deal(deck: list[int], seats: int, start: int) -> tuple[list[int], list[list[int]]]:
    """Each seat's ranch card and hand from a deck in dealing order (see ``DayStarted``)."""
    ranch_cards = [0] * seats
    hands: list[list[int]] = [[] for _ in range(seats)]
    for step in range(seats):
        seat = (start + step) % seats
        ranch_cards[seat] = deck[step]
        hands[seat] += (deck[seats + step], deck[2 * seats + step])
    return ranch_cards, hands


def _day_started(
    seats: int, first: int, seed: int, day: int, decks: list[int], rolls: list[int]
) -> DayStarted:
    deck, roll = day_chance(seed, day, decks, rolls)
    start = (first + day - 1) % seats
    ranch_cards, hands = deal(deck, seats, start)
    return DayStarted(
        day=day,
        start_player=start,
        roll=roll,
        target=roll + TARGET_BASE,
        ranches=[CARD_ID[code] for code in ranch_cards],
        hands=[[CARD_ID[code] for code in hand] for hand in hands],
        draw_pile=[CARD_ID[code] for code in deck[3 * seats :]],
    )


def setup(options: dict[str, Any], seats: int, rng: random.Random) -> list[Event]:
    """Record the rules and the match's chance seed, and deal the first day."""
    problem = options_problem(options, seats)
    if problem:
        raise ValueError(problem)
    first = options.get("first_player")
    if first is None:
        first = rng.randrange(seats)
    seed = rng.getrandbits(63)
    order = options.get("deck_order") or []
    rolls = options.get("die_rolls") or []
    started = GameStarted(
        seats=seats,
        first_player=first,
        discard_limit=6 if seats == 2 and options.get("two_player_six", True) else 2 * seats,
        target_score=options.get("target_score", 15),
        tiebreak=options.get("tiebreak", "extra_day"),
        chance_seed=seed,
        deck_order=list(order) or None,
        die_rolls=list(rolls) or None,
    )
    decks = [CARD_CODE[card] for card in order]
    return [started, _day_started(seats, first, seed, 1, decks, rolls)]


# --- Rules ----------------------------------------------------------------------------------


def ranch_value(ranch: list[int]) -> int:
    """The sum of the card values on a ranch (the starting card counts nothing)."""
    return sum(_VALUE[code] for code in ranch)


def day_points(values: list[int], target: int) -> list[int]:
    """One point per player beaten: a player within the target beats everyone over it and
    everyone with a lower value; a player over the target scores nothing."""
    points = []
    for value in values:
        if value > target:
            points.append(0)
        else:
            points.append(sum(1 for other in values if other > target or other < value))
    return points


def _colours_on(ranch: list[int]) -> int:
    bits = 0
    for code in ranch:
        bits |= _COLOUR_BIT[code]
    return bits


def _guarded(ranch: list[int], index: int, appended: int | None) -> bool:
    """Whether the card at ``index`` sits directly left of a moon (``appended``: a card about
    to join the right end of this ranch)."""
    following = ranch[index + 1] if index + 1 < len(ranch) else appended
    return following is not None and _GUARDS[following]


def _find_target(
    state: DingoState, code: int, ranch: int, target: str
) -> tuple[int, int] | Rejection:
    """The target's code and owner, or why the effect of ``code`` played onto ``ranch`` may
    not remove it. A card that is not on a ranch is refused alike wherever it is."""
    removes = _REMOVES[code]
    if not removes:
        return Rejection("no_effect", f"{CARD_ID[code]} has no effect")
    hit = CARD_CODE.get(target, -1)
    owner = next((seat for seat, cards in enumerate(state.ranches) if hit in cards), -1)
    if owner < 0:
        return Rejection("target_not_in_a_ranch", f"{target!r} is not on any ranch")
    if not _KIND_BIT[hit] & removes:
        card = CARDS[code]
        return Rejection(
            "wrong_target_kind",
            f"{card.id} can only {card.keyword} cards of kind {' or '.join(card.removes)}, "
            f"and {target} is a {CARDS[hit].kind}",
        )
    cards = state.ranches[owner]
    index = cards.index(hit)
    if index == 0:
        return Rejection("target_protected", f"{target} is a protected card")
    if _guarded(cards, index, code if owner == ranch else None):
        return Rejection("target_moon_guarded", f"{target} is guarded by the moon to its right")
    return hit, owner


def _decide_play(state: DingoState, seat: int, action: PlayCard) -> list[Event] | Rejection:
    code = CARD_CODE.get(action.card)
    hand = state.hands[seat]
    if code is None or code not in hand:
        return Rejection("not_in_hand", f"{action.card!r} is not in your hand")
    ranch = action.ranch
    if type(ranch) is not int or not 0 <= ranch < state.seats:
        return Rejection("unknown_seat", f"there is no seat {ranch!r}")
    bit = _COLOUR_BIT[code]
    if ranch != seat and not bit & (_STARTING_BIT[ranch] | _colours_on(state.ranches[ranch])):
        return Rejection(
            "colour_not_on_ranch",
            f"{action.card} matches neither the starting card nor a card of seat {ranch}'s ranch",
        )
    if action.destroy_protected:
        if ranch != seat:
            return Rejection("not_own_ranch", "only a card played onto your own ranch may do that")
        if not bit & _colours_on(state.ranches[seat]):
            return Rejection(
                "colour_not_on_ranch", f"{action.card}'s colour is not on your ranch yet"
            )
    events: list[Event] = [CardPlayed(seat, action.card, ranch)]
    changes = [(ranch, _VALUE[code])]
    discards = len(state.discards)
    if action.target is not None:
        found = _find_target(state, code, ranch, action.target)
        if isinstance(found, Rejection):
            return found
        hit, owner = found
        events.append(CardRemoved(seat, action.target, owner, _KEYWORD[code]))
        changes.append((owner, -_VALUE[hit]))
        discards += 1
        if discards >= state.discard_limit:
            return _end_day(state, events, changes, "discard_limit")
    if action.destroy_protected:
        protected = state.ranches[seat][0]
        events.append(ProtectedCardDestroyed(seat, CARD_ID[protected]))
        changes.append((seat, -_VALUE[protected]))
        if discards + 1 >= state.discard_limit:
            return _end_day(state, events, changes, "discard_limit")
    return _end_turn(state, seat, events, changes, len(hand) - 1)


def _decide_destroy(
    state: DingoState, seat: int, action: DestroyProtected
) -> list[Event] | Rejection:
    ranch = state.ranches[seat]
    if len(ranch) < 2:
        return Rejection("lone_ranch_card", "you may only destroy it with more than one card")
    protected = ranch[0]
    events: list[Event] = [ProtectedCardDestroyed(seat, CARD_ID[protected])]
    changes = [(seat, -_VALUE[protected])]
    if len(state.discards) + 1 >= state.discard_limit:
        return _end_day(state, events, changes, "discard_limit")
    return _end_turn(state, seat, events, changes, len(state.hands[seat]))


def _decide_discard(state: DingoState, seat: int, action: DiscardCard) -> list[Event] | Rejection:
    code = CARD_CODE.get(action.card)
    hand = state.hands[seat]
    if code is None or code not in hand:
        return Rejection("not_in_hand", f"{action.card!r} is not in your hand")
    events: list[Event] = [CardDiscarded(seat, action.card)]
    if len(state.discards) + 1 >= state.discard_limit:
        return _end_day(state, events, [], "discard_limit")
    return _end_turn(state, seat, events, [], len(hand) - 1)


def _end_turn(
    state: DingoState,
    seat: int,
    events: list[Event],
    changes: list[tuple[int, int]],
    hand_size: int,
) -> list[Event]:
    """Draw back up to two; a player who cannot, because the pile is empty, ends the day."""
    wanted = HAND_SIZE - hand_size
    pile = len(state.draw_pile) - state.drawn
    cards = [CARD_ID[code] for code in state.draw_pile[state.drawn : state.drawn + wanted]]
    events.append(TurnEnded(seat, len(cards), cards))
    if wanted > pile:
        return _end_day(state, events, changes, "draw_pile_empty")
    return events


def _end_day(
    state: DingoState, events: list[Event], changes: list[tuple[int, int]], reason: str
) -> list[Event]:
    """Score the day; then end the game, or deal the next day (an extra one to break a tie)."""
    values = [ranch_value(ranch) for ranch in state.ranches]
    for seat, change in changes:
        values[seat] += change
    points = day_points(values, state.target)
    totals = [total + point for total, point in zip(state.totals, points, strict=True)]
    events.append(DayEnded(state.day, reason, state.target, values, points, totals))
    best = max(totals)
    if best > state.target_score:
        leaders = [seat for seat, total in enumerate(totals) if total == best]
        if len(leaders) == 1:
            events.append(GameEnded("finished", totals, leaders))
            return events
        if state.tiebreak == "share":
            events.append(GameEnded("tie_shared", totals, leaders))
            return events
    events.append(
        _day_started(
            state.seats,
            state.first_player,
            state.chance_seed,
            state.day + 1,
            state.given_decks,
            state.given_rolls,
        )
    )
    return events


_DECIDERS: dict[type, Any] = {
    PlayCard: _decide_play,
    DestroyProtected: _decide_destroy,
    DiscardCard: _decide_discard,
}


decide = decide_in_turn(_DECIDERS, "Dingo")
"""Check one action against the rules and return the events it causes."""


# --- Evolve ---------------------------------------------------------------------------------


def _start(event: GameStarted) -> DingoState:
    if not 2 <= event.seats <= MAX_SEATS or not 0 <= event.first_player < event.seats:
        raise ValueError(f"GameStarted seats {event.seats} from seat {event.first_player}")
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
    if sorted(CARD_CODE.get(card, -1) for card in cards) != list(_CODES):
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


# --- Legal actions --------------------------------------------------------------------------

_DESTROY = DestroyProtected()
_DISCARDS = tuple(DiscardCard(card) for card in CARD_ID)


def _open_targets(ranches: list[list[int]]) -> list[int]:
    """Cards an effect may remove: neither protected nor directly left of a moon."""
    targets = []
    for ranch in ranches:
        last = len(ranch) - 1
        for index in range(1, last):
            if not _GUARDS[ranch[index + 1]]:
                targets.append(ranch[index])
        if last > 0:
            targets.append(ranch[last])
    return targets


def legal_actions(state: DingoState, seat: int) -> list[Any]:
    """Every action ``decide`` accepts from ``seat``: each play with every effect choice.

    A card that guards (a moon) has no effect, so playing one never changes the targets.
    """
    if state.end_reason is not None or seat != state.seat_to_move:
        return []
    ranches, hand = state.ranches, state.hands[seat]
    own = ranches[seat]
    actions: list[Any] = [_DISCARDS[code] for code in hand]
    if len(own) > 1:
        actions.append(_DESTROY)
    own_colours = _colours_on(own)
    opponents = [
        (other, _STARTING_BIT[other] | _colours_on(ranch))
        for other, ranch in enumerate(ranches)
        if other != seat
    ]
    targets = None
    for code in hand:
        card, bit, removes = CARD_ID[code], _COLOUR_BIT[code], _REMOVES[code]
        choices: list[str | None] = [None]
        if removes:
            if targets is None:
                targets = _open_targets(ranches)
            choices += [CARD_ID[hit] for hit in targets if _KIND_BIT[hit] & removes]
        for target in choices:
            actions.append(PlayCard(card, seat, target, False))
            if bit & own_colours:
                actions.append(PlayCard(card, seat, target, True))
            for other, colours in opponents:
                if bit & colours:
                    actions.append(PlayCard(card, other, target, False))
    return actions


def to_move(state: DingoState) -> list[int]:
    """The seat whose turn it is, or nobody once the game is over."""
    return [] if state.end_reason is not None else [state.seat_to_move]


def result(state: DingoState) -> Outcome | None:
    """The totals and the winner (or the leaders sharing the win), once the game is over."""
    if state.end_reason is None:
        return None
    return Outcome(list(state.totals), list(state.winners or ()), state.end_reason)


# --- What each seat may see -----------------------------------------------------------------


def _ranch_view(seat: int, ranch: list[int]) -> RanchView:
    open_colours = _STARTING_BIT[seat] | _colours_on(ranch)
    return RanchView(
        seat=seat,
        starting_colour=COLOURS[seat],
        cards=[CARDS[code] for code in ranch],
        value=ranch_value(ranch),
        protected=CARD_ID[ranch[0]],
        moon_guarded=[
            CARD_ID[code]
            for index, code in enumerate(ranch)
            if index and _guarded(ranch, index, None)
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


REFUSALS = {
    "not_in_hand": "The card played or discarded is not in your hand: name one of your cards.",
    "unknown_seat": "The ranch named is not a seat of the match: play onto a ranch at the table.",
    "colour_not_on_ranch": (
        "The card's colour is neither the opponent's starting colour nor on their ranch, or, to "
        "destroy your protected card, not on your ranch yet: play onto a ranch showing it."
    ),
    "not_own_ranch": (
        "You would destroy your protected card with a card played onto another ranch: do that "
        "only with a card played onto your own."
    ),
    "no_effect": "A target is named for a card without an effect: play it with no target.",
    "target_not_in_a_ranch": (
        "The target is not a card on any ranch: name a card lying on a ranch, or no target."
    ),
    "wrong_target_kind": (
        "The card's effect cannot remove a card of the target's kind: name a target of a kind "
        "the effect names, or none."
    ),
    "target_protected": (
        "The target is a protected (leftmost) ranch card, which no effect removes: name another "
        "target, or none."
    ),
    "target_moon_guarded": (
        "The target lies directly left of a moon, which guards it: name another target, or none."
    ),
    "lone_ranch_card": (
        "Your protected card is the only card on your ranch: destroy it once the ranch holds more."
    ),
}
"""When the rules of Dingo refuse a move, beyond ``COMMON_REFUSALS`` (see ``Game.refusals``)."""


GAME = Game(
    name="dingo",
    title="The Dingo Ate the Baby",
    min_players=2,
    max_players=MAX_SEATS,
    options=OPTIONS,
    action_type=DingoAction,
    event_type=DingoEvent,
    redacted_event_type=DingoRedactedEvent,
    state_type=DingoState,
    view_type=DingoView,
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
        "Fill your ranch up to the day's die-rolled target without going over, while babies, "
        "elephants, lions, dingoes, monkeys, sunlight and darkness scare, stomp, eat and "
        "chase the cards on everyone's ranch."
    ),
)
