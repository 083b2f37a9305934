"""Hanabi's rules: setup, ``decide``, ``evolve``, the legal actions, who moves, the result."""

from __future__ import annotations

import random
from typing import Any

import msgspec

from services.rules.games.contract import (
    Outcome,
    Rejection,
    decide_in_turn,
    evolve_in_place,
)
from services.rules.games.hanabi.cards import (
    COLOUR_BITS,
    COLOUR_INDEX,
    HAND_SIZES,
    MAX_CLUE_TOKENS,
    MAX_FUSES,
    MAX_SEATS,
    RAINBOW_COLOUR_BITS,
    RANK_BIT,
    RANK_OF,
    RANKS,
    SUIT_OF,
    SUITS,
)
from services.rules.games.hanabi.options import deck_problem, normalise_options, standard_deck
from services.rules.games.hanabi.state import (
    CardDiscarded,
    CardDrawn,
    CardMisplayed,
    CardPlayed,
    ClueGiven,
    ClueRecord,
    DiscardCard,
    Event,
    FuseBurned,
    GameEnded,
    GameStarted,
    GiveColourClue,
    GiveRankClue,
    HanabiState,
    PlayCard,
)
from services.rules.games.hanabi.versions import CLUE_HISTORY_SINCE, RULES


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
            rules_version=RULES.current,
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
    if problem := RULES.problem(started.rules_version):
        return f"GameStarted: {problem}"
    dealt = setup({**resolved, "deck": resolved["deck"] or started.deck}, seats, random.Random())
    if [msgspec.structs.replace(dealt[0], rules_version=started.rules_version)] != [started]:
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
        clues=[] if event.rules_version >= CLUE_HISTORY_SINCE else None,
    )


def nameable_colours(state: HanabiState) -> int:
    return 5 if state.rainbow else state.suits


def _colour_bits(state: HanabiState) -> tuple[int, ...]:
    return RAINBOW_COLOUR_BITS if state.rainbow else COLOUR_BITS


def _end_of_turn(
    state: HanabiState, seat: int, events: list[Event], score: int, draws: bool
) -> list[Event]:
    """Draw if the move emptied a hand slot and the deck lasts; end after the final round."""
    turn = state.turns + 1
    if draws and state.drawn < len(state.deck):
        order = state.drawn
        code = state.deck[order]
        events.append(CardDrawn(seat, order, SUITS[SUIT_OF[code]], RANK_OF[code]))
    elif state.last_turn == turn:
        events.append(GameEnded("deck_out", score))
    return events


def _decide_play(state: HanabiState, seat: int, action: PlayCard) -> list[Event] | Rejection:
    card = action.card
    if card not in state.hands[seat]:
        return Rejection("not_in_hand", f"card {card} is not in your hand")
    code = state.deck[card]
    suit, rank = SUIT_OF[code], RANK_OF[code]
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
    events: list[Event] = [CardDiscarded(seat, card, SUITS[SUIT_OF[code]], RANK_OF[code])]
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
    colour = COLOUR_INDEX.get(action.colour)
    if colour is None or colour >= state.suits:
        return Rejection("unknown_colour", f"{action.colour!r} is not a colour of this game")
    if colour >= nameable_colours(state):
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
    touched = [order for order in state.hands[action.target] if RANK_OF[deck[order]] == rank]
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
    slots = []
    for place, order in enumerate(state.hands[event.target], 1):
        if order in touched:
            clued[order] |= bit
            slots.append(place)
        else:
            excluded[order] |= bit
    if state.clues is not None:
        state.clues.append(
            ClueRecord(
                state.turns, event.seat, event.target, touched, slots, event.colour, event.rank
            )
        )
    _next_turn(state)


def _evolve_played(state: HanabiState, event: CardPlayed) -> None:
    state.hands[event.seat].remove(event.card)
    code = state.deck[event.card]
    rank = RANK_OF[code]
    state.fireworks[SUIT_OF[code]] = rank
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
        every_colour = (1 << nameable_colours(state)) - 1
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
                    ranks |= RANK_BIT[code]
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
