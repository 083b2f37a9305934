"""Hanabi: the cooperative fireworks game (R&R Games rules, seed 002) with its sixth-suit variants.

Encodings, chosen so that matches line up card for card with hanab.live (see ``hanabi_live``):

- Suits, in this order: red, yellow, green, blue, white, multicolour. Indices 0-4 are the slots
  of hanab.live's "No Variant" (Red, Yellow, Green, Blue, Purple): our white sits in the Purple
  slot, because hanab.live's own "White" suit is a special suit that no colour clue touches.
  The sixth suit sits in hanab.live's sixth slot (Teal, Rainbow or Dark Rainbow).
- A card's identity is the int ``suit_index * 10 + rank``: 11 is a red 1, 35 the blue 5,
  53 a multicolour 3. The ``deck`` option and ``GameStarted.deck`` use these codes.
- A card's *order* is its index in draw order, as on hanab.live: the deal gives seat 0 the first
  hand (orders 0..h-1), seat 1 the next, and so on; the first card drawn afterwards has order
  ``seats * h``. Actions name cards by order, never by hand slot. Hands list orders oldest first.
- Clue colour indices are the suit indices of the nameable colours.

Variants and how the options combine (``validate_options`` normalises them):

- ``suits: 6`` adds multicolour as an ordinary sixth colour of 10 cards, which clues can name.
- ``rainbow`` makes the sixth suit multicolour in the rules' sense: every colour clue touches it
  and it cannot be named. It implies ``suits: 6``.
- ``rainbow_short`` keeps one multicolour card per rank (5 cards). It implies ``rainbow``.
- ``empty_clues`` allows clues that touch no card (they still cost a token and give negative
  information).
- ``deck`` replays a known deal: every card code in draw order, a permutation of the variant's
  deck.

Rulings: a discard is refused at 8 clue tokens; a 5 completing a firework regains a token unless
all 8 are available; after the last card is drawn every seat, the drawer included, plays exactly
one more turn; the game ends at once on the maximum score (``perfect``) or on the third fuse
(``strike_out``: score 0 and no winner); otherwise it ends after that final round
(``deck_out``). The game is cooperative: unless it struck out, every seat is a winner.

Hidden information: a seat never sees its own cards, only their orders and what clues revealed;
spectators see no card in any hand while the match runs; nobody sees the deck order, only its
size. Once the game is over, views show everything.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import msgspec

from services.rules.games.contract import (
    Game,
    OptionSpec,
    Outcome,
    Rejection,
    decide_in_turn,
    evolve_in_place,
)

SUITS = ("red", "yellow", "green", "blue", "white", "multicolour")
MULTICOLOUR = 5
RANKS = (1, 2, 3, 4, 5)
COPIES_PER_RANK = (3, 2, 2, 2, 1)
MAX_CLUE_TOKENS = 8
MAX_FUSES = 3
HAND_SIZES = {2: 5, 3: 5, 4: 4, 5: 4}
MAX_SEATS = 5
_CODES = range(len(SUITS) * 10)
_COLOUR_INDEX = {name: index for index, name in enumerate(SUITS)}

# Per-card-code lookup tables: the hot path never divides or branches on the variant per card.
_SUIT_OF = tuple(code // 10 for code in _CODES)
_RANK_OF = tuple(code % 10 for code in _CODES)
_RANK_BIT = tuple(1 << (code % 10 - 1) if code % 10 else 0 for code in _CODES)
_COLOUR_BITS = tuple(1 << (code // 10) for code in _CODES)
"""Which colour clues touch a card when every suit is an ordinary colour."""
_RAINBOW_COLOUR_BITS = tuple(
    0b11111 if code // 10 == MULTICOLOUR else 1 << (code // 10) for code in _CODES
)
"""Which colour clues touch a card when the sixth suit is multicolour (touched by all five)."""


# --- Actions (imperative) -------------------------------------------------------------------


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


# --- Options --------------------------------------------------------------------------------

OPTIONS = (
    OptionSpec("suits", "enum", 5, "Number of suits: 6 adds multicolour as a sixth suit.", [5, 6]),
    OptionSpec(
        "rainbow",
        "bool",
        False,
        "The sixth suit is multicolour: every colour clue touches it and it cannot be named "
        "(implies 6 suits).",
    ),
    OptionSpec(
        "rainbow_short",
        "bool",
        False,
        "Only one multicolour card per rank, 5 in all (implies rainbow).",
    ),
    OptionSpec("empty_clues", "bool", False, "Allow clues that touch no card."),
    OptionSpec(
        "deck",
        "list[int]",
        None,
        "Explicit deck in draw order, each card coded suit_index*10 + rank with suits "
        "red, yellow, green, blue, white, multicolour = 0..5; must be the variant's whole deck.",
        secret=True,
    ),
)


@functools.cache
def _sorted_deck(suits: int, rainbow_short: bool) -> tuple[int, ...]:
    deck: list[int] = []
    for suit in range(suits):
        copies = (1,) * 5 if rainbow_short and suit == MULTICOLOUR else COPIES_PER_RANK
        for rank, count in zip(RANKS, copies, strict=True):
            deck.extend([suit * 10 + rank] * count)
    return tuple(deck)


def standard_deck(suits: int, rainbow_short: bool) -> list[int]:
    """Every card code of a variant, sorted: 3/2/2/2/1 per suit, 1 per rank if short."""
    return list(_sorted_deck(suits, rainbow_short))


def normalise_options(options: dict[str, Any]) -> dict[str, Any]:
    """Apply the implications rainbow_short => rainbow => 6 suits."""
    rainbow_short = bool(options.get("rainbow_short", False))
    rainbow = rainbow_short or bool(options.get("rainbow", False))
    suits = 6 if rainbow else options.get("suits", 5)
    return {
        **options,
        "suits": suits,
        "rainbow": rainbow,
        "rainbow_short": rainbow_short,
        "empty_clues": bool(options.get("empty_clues", False)),
        "deck": options.get("deck"),
    }


def deck_problem(deck: list[int], suits: int, rainbow_short: bool) -> str | None:
    """Why ``deck`` is not a permutation of the variant's deck, or ``None`` if it is."""
    expected = standard_deck(suits, rainbow_short)
    if len(deck) != len(expected):
        return f"deck must hold {len(expected)} cards for this variant, not {len(deck)}"
    counts: dict[int, int] = {}
    for code in expected:
        counts[code] = counts.get(code, 0) + 1
    for code in deck:
        if code not in counts:
            return (
                f"deck card {code} is not a card of this variant "
                f"(codes are suit_index*10 + rank, {suits} suits)"
            )
        counts[code] -= 1
        if counts[code] < 0:
            return f"deck holds too many copies of card {code}"
    return None


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """Normalise the variant flags and check an explicit deck against the variant."""
    resolved = normalise_options(options)
    deck = resolved["deck"]
    if deck is not None:
        problem = deck_problem(deck, resolved["suits"], resolved["rainbow_short"])
        if problem:
            return Rejection("bad_option", f"option 'deck': {problem}")
    return resolved


# --- Engine ---------------------------------------------------------------------------------


def setup(options: dict[str, Any], seats: int, rng: random.Random) -> list[Event]:
    """Shuffle with ``rng`` (or take the explicit deck) and record the whole deck."""
    resolved = normalise_options(options)
    suits, short = resolved["suits"], resolved["rainbow_short"]
    if resolved["deck"] is not None:
        problem = deck_problem(resolved["deck"], suits, short)
        if problem:
            raise ValueError(problem)
        deck = list(resolved["deck"])
    else:
        deck = standard_deck(suits, short)
        rng.shuffle(deck)
    return [
        GameStarted(
            seats=seats,
            suits=suits,
            rainbow=resolved["rainbow"],
            rainbow_short=short,
            empty_clues=resolved["empty_clues"],
            deck=deck,
        )
    ]


def deal_problem(events: list[Any], options: dict[str, Any], seats: int) -> str | None:
    """Why ``events`` are not a deal of ``options`` to ``seats``: one ``GameStarted`` with the
    options' variant and the variant's whole deck (the options' own deck, if they name one)."""
    if len(events) != 1 or not isinstance(events[0], GameStarted):
        return "the set-up is one GameStarted event"
    started = events[0]
    resolved = normalise_options(options)
    problem = deck_problem(started.deck, resolved["suits"], resolved["rainbow_short"])
    if problem:
        return f"GameStarted: {problem}"
    if setup({**resolved, "deck": resolved["deck"] or started.deck}, seats, random.Random()) != [
        started
    ]:
        return f"GameStarted does not deal these options to {seats} players"
    return None


def _start(event: GameStarted) -> HanabiState:
    seats, size = event.seats, HAND_SIZES[event.seats]
    cards = len(event.deck)
    return HanabiState(
        seats=seats,
        suits=event.suits,
        rainbow=event.rainbow,
        rainbow_short=event.rainbow_short,
        empty_clues=event.empty_clues,
        deck=list(event.deck),
        hands=[list(range(seat * size, (seat + 1) * size)) for seat in range(seats)],
        drawn=seats * size,
        fireworks=[0] * event.suits,
        discards=[],
        clue_tokens=MAX_CLUE_TOKENS,
        fuses_burned=0,
        score=0,
        seat_to_move=0,
        turns=0,
        last_turn=None,
        colours_clued=[0] * cards,
        colours_excluded=[0] * cards,
        ranks_clued=[0] * cards,
        ranks_excluded=[0] * cards,
    )


def _nameable_colours(state: HanabiState) -> int:
    return 5 if state.rainbow else state.suits


def _colour_bits(state: HanabiState) -> tuple[int, ...]:
    return _RAINBOW_COLOUR_BITS if state.rainbow else _COLOUR_BITS


def _end_of_turn(
    state: HanabiState, seat: int, events: list[Event], score: int, draws: bool
) -> list[Event]:
    """Draw if the move emptied a hand slot and the deck lasts; end after the final round."""
    turn = state.turns + 1
    if draws and state.drawn < len(state.deck):
        order = state.drawn
        code = state.deck[order]
        events.append(CardDrawn(seat, order, SUITS[_SUIT_OF[code]], _RANK_OF[code]))
    elif state.last_turn == turn:
        events.append(GameEnded("deck_out", score))
    return events


def _decide_play(state: HanabiState, seat: int, action: PlayCard) -> list[Event] | Rejection:
    card = action.card
    if card not in state.hands[seat]:
        return Rejection("not_in_hand", f"card {card} is not in your hand")
    code = state.deck[card]
    suit, rank = _SUIT_OF[code], _RANK_OF[code]
    if state.fireworks[suit] + 1 == rank:
        score = state.score + 1
        events: list[Event] = [CardPlayed(seat, card, SUITS[suit], rank)]
        if score == 5 * state.suits:
            events.append(GameEnded("perfect", score))
            return events
        return _end_of_turn(state, seat, events, score, True)
    fuses = state.fuses_burned + 1
    events = [CardMisplayed(seat, card, SUITS[suit], rank), FuseBurned(fuses)]
    if fuses == MAX_FUSES:
        events.append(GameEnded("strike_out", 0))
        return events
    return _end_of_turn(state, seat, events, state.score, True)


def _decide_discard(state: HanabiState, seat: int, action: DiscardCard) -> list[Event] | Rejection:
    card = action.card
    if card not in state.hands[seat]:
        return Rejection("not_in_hand", f"card {card} is not in your hand")
    if state.clue_tokens >= MAX_CLUE_TOKENS:
        return Rejection("clue_tokens_full", "you cannot discard while all 8 clue tokens are free")
    code = state.deck[card]
    events: list[Event] = [CardDiscarded(seat, card, SUITS[_SUIT_OF[code]], _RANK_OF[code])]
    return _end_of_turn(state, seat, events, state.score, True)


def _clue_problem(state: HanabiState, seat: int, target: Any) -> Rejection | None:
    if type(target) is not int or not 0 <= target < state.seats:
        return Rejection("unknown_seat", f"there is no seat {target!r}")
    if target == seat:
        return Rejection("clue_to_self", "you cannot give a clue to yourself")
    if state.clue_tokens == 0:
        return Rejection("no_clue_tokens", "no clue token is left: play or discard")
    return None


def _give_clue(
    state: HanabiState,
    seat: int,
    target: int,
    touched: list[int],
    colour: str | None,
    rank: int | None,
) -> list[Event] | Rejection:
    if not touched and not state.empty_clues:
        return Rejection("empty_clue", "that clue touches no card, and empty clues are off")
    events: list[Event] = [ClueGiven(seat, target, touched, colour, rank)]
    return _end_of_turn(state, seat, events, state.score, False)


def _decide_colour_clue(
    state: HanabiState, seat: int, action: GiveColourClue
) -> list[Event] | Rejection:
    problem = _clue_problem(state, seat, action.target)
    if problem:
        return problem
    colour = _COLOUR_INDEX.get(action.colour)
    if colour is None or colour >= state.suits:
        return Rejection("unknown_colour", f"{action.colour!r} is not a colour of this game")
    if colour >= _nameable_colours(state):
        return Rejection(
            "unnamable_colour", "multicolour cannot be named: every colour clue touches it"
        )
    bits, deck, bit = _colour_bits(state), state.deck, 1 << colour
    touched = [order for order in state.hands[action.target] if bits[deck[order]] & bit]
    return _give_clue(state, seat, action.target, touched, action.colour, None)


def _decide_rank_clue(
    state: HanabiState, seat: int, action: GiveRankClue
) -> list[Event] | Rejection:
    problem = _clue_problem(state, seat, action.target)
    if problem:
        return problem
    rank = action.rank
    if rank not in RANKS:
        return Rejection("unknown_rank", f"{rank!r} is not a rank (1-5)")
    deck = state.deck
    touched = [order for order in state.hands[action.target] if _RANK_OF[deck[order]] == rank]
    return _give_clue(state, seat, action.target, touched, None, rank)


_DECIDERS: dict[type, Any] = {
    PlayCard: _decide_play,
    DiscardCard: _decide_discard,
    GiveColourClue: _decide_colour_clue,
    GiveRankClue: _decide_rank_clue,
}


decide = decide_in_turn(_DECIDERS, "Hanabi")
"""Check one action against the rules and return the events it causes."""


def _next_turn(state: HanabiState) -> None:
    state.turns += 1
    state.seat_to_move = (state.seat_to_move + 1) % state.seats


def _evolve_clue(state: HanabiState, event: ClueGiven) -> None:
    state.clue_tokens -= 1
    if event.rank is not None:
        clued, excluded = state.ranks_clued, state.ranks_excluded
        bit = 1 << (event.rank - 1)
    else:
        clued, excluded = state.colours_clued, state.colours_excluded
        bit = 1 << SUITS.index(event.colour)
    touched = event.touched
    for order in state.hands[event.target]:
        if order in touched:
            clued[order] |= bit
        else:
            excluded[order] |= bit
    _next_turn(state)


def _evolve_played(state: HanabiState, event: CardPlayed) -> None:
    state.hands[event.seat].remove(event.card)
    code = state.deck[event.card]
    rank = _RANK_OF[code]
    state.fireworks[_SUIT_OF[code]] = rank
    state.score += 1
    if rank == 5 and state.clue_tokens < MAX_CLUE_TOKENS:
        state.clue_tokens += 1
    _next_turn(state)


def _evolve_misplayed(state: HanabiState, event: CardMisplayed) -> None:
    state.hands[event.seat].remove(event.card)
    state.discards.append(event.card)
    _next_turn(state)


def _evolve_fuse(state: HanabiState, event: FuseBurned) -> None:
    state.fuses_burned = event.fuses_burned


def _evolve_discarded(state: HanabiState, event: CardDiscarded) -> None:
    state.hands[event.seat].remove(event.card)
    state.discards.append(event.card)
    state.clue_tokens += 1
    _next_turn(state)


def _evolve_drawn(state: HanabiState, event: CardDrawn) -> None:
    state.hands[event.seat].append(event.card)
    state.drawn += 1
    if state.drawn == len(state.deck):
        state.last_turn = state.turns + state.seats


def _evolve_ended(state: HanabiState, event: GameEnded) -> None:
    state.end_reason = event.reason


_EVOLVERS: dict[type, Any] = {
    ClueGiven: _evolve_clue,
    CardPlayed: _evolve_played,
    CardMisplayed: _evolve_misplayed,
    FuseBurned: _evolve_fuse,
    CardDiscarded: _evolve_discarded,
    CardDrawn: _evolve_drawn,
    GameEnded: _evolve_ended,
}


evolve = evolve_in_place(_start, _EVOLVERS)
"""Apply one stored event, mutating ``state`` in place (``GameStarted`` creates it)."""


# Legal actions are shared frozen instances: building them is the hot path of every playout.
_MAX_CARDS = len(SUITS) * 10
_PLAYS = tuple(PlayCard(order) for order in range(_MAX_CARDS))
_DISCARDS = tuple(DiscardCard(order) for order in range(_MAX_CARDS))
_COLOUR_CLUES = tuple(
    tuple(
        tuple(GiveColourClue(target, SUITS[c]) for c in range(len(SUITS)) if mask >> c & 1)
        for mask in range(1 << len(SUITS))
    )
    for target in range(MAX_SEATS)
)
_RANK_CLUES = tuple(
    tuple(
        tuple(GiveRankClue(target, rank) for rank in RANKS if mask >> (rank - 1) & 1)
        for mask in range(1 << len(RANKS))
    )
    for target in range(MAX_SEATS)
)


def legal_actions(state: HanabiState, seat: int) -> list[Any]:
    """Every action ``decide`` accepts from ``seat``; each distinct clue once."""
    if state.end_reason is not None or seat != state.seat_to_move:
        return []
    hand = state.hands[seat]
    actions: list[Any] = [_PLAYS[order] for order in hand]
    tokens = state.clue_tokens
    if tokens < MAX_CLUE_TOKENS:
        actions += [_DISCARDS[order] for order in hand]
    if tokens:
        deck, hands = state.deck, state.hands
        colour_bits = _colour_bits(state)
        every_colour = (1 << _nameable_colours(state)) - 1
        for target in range(state.seats):
            if target == seat:
                continue
            if state.empty_clues:
                colours, ranks = every_colour, 0b11111
            else:
                colours = ranks = 0
                for order in hands[target]:
                    code = deck[order]
                    colours |= colour_bits[code]
                    ranks |= _RANK_BIT[code]
            actions += _COLOUR_CLUES[target][colours]
            actions += _RANK_CLUES[target][ranks]
    return actions


def to_move(state: HanabiState) -> list[int]:
    """The seat whose turn it is, or nobody once the game is over."""
    return [] if state.end_reason is not None else [state.seat_to_move]


def final_score(state: HanabiState) -> int:
    """The score as it stands: the fireworks' sum, or 0 after a strike-out."""
    return 0 if state.end_reason == "strike_out" else state.score


def result(state: HanabiState) -> Outcome | None:
    """Everyone shares the score; everyone wins unless the fuses all burned."""
    if state.end_reason is None:
        return None
    seats = range(state.seats)
    winners = [] if state.end_reason == "strike_out" else list(seats)
    return Outcome([final_score(state)] * state.seats, winners, state.end_reason)


# --- What each seat may see -----------------------------------------------------------------


def _seen(order: int, code: int, visible: bool) -> SeenCard:
    if visible:
        return SeenCard(order, SUITS[_SUIT_OF[code]], _RANK_OF[code])
    return SeenCard(order)


_COLOURS_IN_MASK = tuple(
    tuple(SUITS[c] for c in range(len(SUITS)) if mask >> c & 1) for mask in range(1 << len(SUITS))
)
_RANKS_IN_MASK = tuple(
    tuple(rank for rank in RANKS if mask >> (rank - 1) & 1) for mask in range(1 << len(RANKS))
)


@functools.cache
def _possible_suits(suits: int, rainbow: bool, clued: int, excluded: int) -> tuple[str, ...]:
    """Suits every clued colour touches and no excluded colour touches."""
    colour_bits = _RAINBOW_COLOUR_BITS if rainbow else _COLOUR_BITS
    touching = [colour_bits[suit * 10 + 1] for suit in range(suits)]
    return tuple(
        SUITS[suit]
        for suit, bits in enumerate(touching)
        if bits & clued == clued and not bits & excluded
    )


@functools.cache
def _possible_ranks(clued: int, excluded: int) -> tuple[int, ...]:
    """Ranks no clue excluded, narrowed to the clued rank if there is one."""
    allowed = (clued or 0b11111) & ~excluded
    return _RANKS_IN_MASK[allowed]


def _card_view(state: HanabiState, order: int, visible: bool) -> CardView:
    colours_in, colours_out = state.colours_clued[order], state.colours_excluded[order]
    ranks_in, ranks_out = state.ranks_clued[order], state.ranks_excluded[order]
    code = state.deck[order]
    return CardView(
        order,
        SUITS[_SUIT_OF[code]] if visible else None,
        _RANK_OF[code] if visible else None,
        _COLOURS_IN_MASK[colours_in],
        _COLOURS_IN_MASK[colours_out],
        _RANKS_IN_MASK[ranks_in],
        _RANKS_IN_MASK[ranks_out],
        _possible_suits(state.suits, state.rainbow, colours_in, colours_out),
        _possible_ranks(ranks_in, ranks_out),
    )


def view(state: HanabiState, seat: int | None) -> HanabiView:
    """The table for ``seat``: others' hands, own clue knowledge; everything once over."""
    over = state.end_reason is not None
    deck = state.deck
    hands = [
        [_card_view(state, order, over or (seat is not None and holder != seat)) for order in hand]
        for holder, hand in enumerate(state.hands)
    ]
    turns_left = None if state.last_turn is None else state.last_turn - state.turns
    return HanabiView(
        seat=seat,
        seats=state.seats,
        suits=list(SUITS[: state.suits]),
        clue_colours=list(SUITS[: _nameable_colours(state)]),
        empty_clues=state.empty_clues,
        clue_tokens=state.clue_tokens,
        fuses_burned=state.fuses_burned,
        fireworks=dict(zip(SUITS, state.fireworks, strict=False)),
        score=final_score(state),
        deck_size=len(deck) - state.drawn,
        discards=[_seen(order, deck[order], True) for order in state.discards],
        hands=hands,
        seat_to_move=None if over else state.seat_to_move,
        turns=state.turns,
        turns_left=None if over else turns_left,
        end_reason=state.end_reason,
        undrawn=(
            [_seen(order, deck[order], True) for order in range(state.drawn, len(deck))]
            if over
            else None
        ),
    )


def _dealt(event: GameStarted, seat: int | None) -> CardsDealt:
    size = HAND_SIZES[event.seats]
    hands = [
        [
            _seen(order, event.deck[order], seat is not None and holder != seat)
            for order in range(holder * size, (holder + 1) * size)
        ]
        for holder in range(event.seats)
    ]
    return CardsDealt(
        seats=event.seats,
        suits=event.suits,
        rainbow=event.rainbow,
        rainbow_short=event.rainbow_short,
        empty_clues=event.empty_clues,
        deck_size=len(event.deck) - event.seats * size,
        hands=hands,
    )


def redact(event: Any, seat: int | None) -> Any:
    """Hide the deck order from everyone and a drawn card from its drawer and spectators."""
    kind = type(event)
    if kind is CardDrawn:
        if seat is None or seat == event.seat:
            return CardDrawn(event.seat, event.card)
        return event
    if kind is GameStarted:
        return _dealt(event, seat)
    return event


REFUSALS = {
    "not_in_hand": (
        "The card played or discarded is not in your hand: name one of your own cards by its order."
    ),
    "clue_tokens_full": (
        "You discard while all 8 clue tokens are free: give a clue or play a card instead."
    ),
    "unknown_seat": "The clue's target is not a seat of the match: clue a seat at the table.",
    "clue_to_self": "The clue's target is your own seat: clue another player.",
    "no_clue_tokens": "No clue token is left for a clue: play or discard a card instead.",
    "empty_clue": (
        "The clue touches none of the target's cards and this table plays without empty "
        "clues: give a clue that touches at least one card."
    ),
    "unknown_colour": "The clue names a colour this game does not have: name one of its colours.",
    "unnamable_colour": (
        "The clue names multicolour, which the rainbow variants never name because every colour "
        "clue touches it: name another colour."
    ),
    "unknown_rank": "The clue names a rank other than 1 to 5: name a rank from 1 to 5.",
}
"""When the rules of Hanabi refuse a move, beyond ``COMMON_REFUSALS`` (see ``Game.refusals``)."""


GAME = Game(
    cooperative=True,
    name="hanabi",
    title="Hanabi",
    min_players=2,
    max_players=MAX_SEATS,
    options=OPTIONS,
    action_type=HanabiAction,
    event_type=HanabiEvent,
    redacted_event_type=HanabiRedactedEvent,
    state_type=HanabiState,
    view_type=HanabiView,
    setup=setup,
    deal_problem=deal_problem,
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
        "Cooperative fireworks: clue your partners about the cards they hold but cannot see, "
        "and build the five (or six) colours from 1 to 5 together."
    ),
)
