"""What each seat of a Hanabi match may see: its view of the state and of each event."""

from __future__ import annotations

import functools
from typing import Any

from services.rules.games.hanabi.cards import (
    COLOUR_BITS,
    HAND_SIZES,
    RAINBOW_COLOUR_BITS,
    RANK_OF,
    RANKS,
    SUIT_OF,
    SUITS,
)
from services.rules.games.hanabi.rules import final_score, nameable_colours
from services.rules.games.hanabi.state import (
    CardDrawn,
    CardsDealt,
    CardView,
    GameStarted,
    HanabiState,
    HanabiView,
    SeenCard,
)


def _seen(order: int, code: int, visible: bool) -> SeenCard:
    if visible:
        return SeenCard(order, SUITS[SUIT_OF[code]], RANK_OF[code])
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
    colour_bits = RAINBOW_COLOUR_BITS if rainbow else COLOUR_BITS
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
        SUITS[SUIT_OF[code]] if visible else None,
        RANK_OF[code] if visible else None,
        _COLOURS_IN_MASK[colours_in],
        _COLOURS_IN_MASK[colours_out],
        _RANKS_IN_MASK[ranks_in],
        _RANKS_IN_MASK[ranks_out],
        _possible_suits(state.suits, state.rainbow, colours_in, colours_out),
        _possible_ranks(ranks_in, ranks_out),
    )


@functools.cache
def _variant(suits: int, rainbow: bool, rainbow_short: bool, empty_clues: bool) -> tuple[str, ...]:
    """The table's options in words, as a player would explain them before the first turn."""
    if rainbow_short:
        sixth = ["multicolour: every colour clue touches it and none names it, one card per rank"]
    elif rainbow:
        sixth = ["multicolour: every colour clue touches it and none names it"]
    elif suits == 6:
        sixth = ["multicolour: a sixth colour, clued like the others"]
    else:
        sixth = []
    clues = (
        "empty clues: a clue may touch no card"
        if empty_clues
        else "a clue must touch at least one card"
    )
    return (f"{suits} suits", *sixth, clues)


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
        clue_colours=list(SUITS[: nameable_colours(state)]),
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
        variant=_variant(state.suits, state.rainbow, state.rainbow_short, state.empty_clues),
        clues=None if state.clues is None else list(state.clues),
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
