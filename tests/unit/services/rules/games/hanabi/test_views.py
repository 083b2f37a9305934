"""Hanabi's views: the variant in words, the clue history, and that neither (nor anything else
in a view) tells a seat its own cards or a spectator any hand while the match runs."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.hanabi import GAME
from services.rules.games.hanabi.state import (
    ClueRecord,
    DiscardCard,
    GameStarted,
    GiveColourClue,
    GiveRankClue,
    HanabiState,
    PlayCard,
)
from tests.unit.services.rules.games.hanabi.test_rules import B, G, R, W, Y, act, start


def test_the_clue_history_says_who_clued_whom_what_which_slots_and_when():
    front = [R + 1, Y + 1, R + 2, Y + 2, R + 3, Y + 3, R + 3, G + 1, B + 3, W + 1, G + 1]
    state = start(2, front)
    act(state, 0, GiveRankClue(1, 3))
    act(state, 1, GiveColourClue(0, "red"))
    act(state, 0, PlayCard(0))  # the red 1: the hand shifts, the green 1 drawn goes last
    act(state, 1, GiveColourClue(0, "red"))
    expected = [
        ClueRecord(turn=0, seat=0, target=1, touched=[5, 6, 8], slots=[1, 2, 4], rank=3),
        ClueRecord(1, 1, 0, [0, 2, 4], [1, 3, 5], colour="red"),
        ClueRecord(3, 1, 0, [2, 4], [2, 4], colour="red"),
    ]
    for seat in (0, 1, None):
        assert GAME.view(state, seat).clues == expected


def test_the_clue_history_folds_from_the_events_alone():
    """A recorded match folds to the same history, however its state was reached."""
    log, state = played(seed=5, moves=30, options={})
    assert state.clues and GAME.fold(log) == state
    decoded = msgspec.json.decode(msgspec.json.encode(log), type=list[GAME.event_type])
    assert GAME.fold(decoded).clues == state.clues
    clues = [event for event in log if type(event).__name__ == "ClueGiven"]
    assert [(c.seat, c.target, c.touched, c.colour, c.rank) for c in clues] == [
        (c.seat, c.target, c.touched, c.colour, c.rank) for c in state.clues
    ]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({}, ("5 suits", "a clue must touch at least one card")),
        (
            {"suits": 6, "empty_clues": True},
            (
                "6 suits",
                "multicolour: a sixth colour, clued like the others",
                "empty clues: a clue may touch no card",
            ),
        ),
        (
            {"rainbow": True},
            (
                "6 suits",
                "multicolour: every colour clue touches it and none names it",
                "a clue must touch at least one card",
            ),
        ),
        (
            {"rainbow_short": True},
            (
                "6 suits",
                "multicolour: every colour clue touches it and none names it, one card per rank",
                "a clue must touch at least one card",
            ),
        ),
    ],
)
def test_the_variant_is_the_tables_options_in_words(options, words):
    state = GAME.fold(GAME.setup(GAME.resolve_options(options, 3), 3, random.Random(1)))
    assert GAME.view(state, 0).variant == words
    assert GAME.view(state, None).variant == words


@pytest.mark.parametrize("options", [{}, {"rainbow": True}, {"suits": 6, "empty_clues": True}])
@pytest.mark.parametrize("seat", [0, 1, 2, None])
def test_a_view_is_the_same_whatever_the_cards_its_viewer_cannot_see(options, seat):
    """Refold the same events over a deck whose cards hidden from ``seat`` (its own hand, every
    hand for a spectator, and the undrawn deck) are shuffled among themselves: that seat's view,
    the variant, the clue history and the per-card clue knowledge included, is unchanged, while
    a seat that can see those cards sees the difference."""
    log, state = played(seed=11, moves=24, options=options, seats=3)
    assert any(clue.target == (seat or 0) for clue in state.clues)
    hidden = hidden_orders(state, seat)
    shuffled = swapped(log, state, hidden)
    other = GAME.fold(shuffled)
    assert [other.deck[order] for order in hidden] != [state.deck[order] for order in hidden]
    assert encoded_view(other, seat) == encoded_view(state, seat)
    onlooker = 1 if seat == 0 else 0
    assert encoded_view(other, onlooker) != encoded_view(state, onlooker)


def played(seed: int, moves: int, options: dict, seats: int = 2) -> tuple[list, HanabiState]:
    """A match of ``moves`` random moves that never burn a fuse: its event log and state."""
    rng = random.Random(seed)
    log = GAME.setup(GAME.resolve_options(options, seats), seats, rng)
    state = GAME.fold(log)
    for move in range(moves):
        seat = GAME.to_move(state)[0]
        log += act(state, seat, rng.choice(safe_moves(state, seat, clue=move % 2 == 1)))
    assert GAME.result(state) is None, "the match ended: play fewer moves"
    return log, state


def safe_moves(state: HanabiState, seat: int, clue: bool) -> list:
    """The legal plays that fit a firework, else the clues (every other turn, so that each
    seat gets some) or discards, else any clue."""
    legal = GAME.legal_actions(state, seat)
    fits = [
        action
        for action in legal
        if isinstance(action, PlayCard)
        and state.fireworks[state.deck[action.card] // 10] + 1 == state.deck[action.card] % 10
    ]
    clues = [action for action in legal if isinstance(action, GiveColourClue | GiveRankClue)]
    discards = [action for action in legal if isinstance(action, DiscardCard)]
    return fits or (clues if clue else discards) or clues or discards


def hidden_orders(state: HanabiState, seat: int | None) -> list[int]:
    """The orders of the cards ``seat`` may not see: its own hand (every hand for a spectator)
    and the cards still to draw."""
    hands = state.hands if seat is None else [state.hands[seat]]
    return [order for hand in hands for order in hand] + list(range(state.drawn, len(state.deck)))


def swapped(log: list, state: HanabiState, orders: list[int]) -> list:
    """``log`` with a deck whose cards at ``orders`` are rotated among themselves."""
    deck = list(state.deck)
    codes = [deck[order] for order in orders]
    turn = next(i for i in range(1, len(codes)) if codes[i:] + codes[:i] != codes)
    for order, code in zip(orders, codes[turn:] + codes[:turn], strict=True):
        deck[order] = code
    started = log[0]
    assert isinstance(started, GameStarted)
    return [msgspec.structs.replace(started, deck=deck), *log[1:]]


def encoded_view(state: HanabiState, seat: int | None) -> bytes:
    return msgspec.json.encode(GAME.view(state, seat))
