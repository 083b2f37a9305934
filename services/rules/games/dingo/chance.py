"""Dingo's chance: each day's shuffle and die roll, the deal, and ``setup``."""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.dingo.cards import (
    CARD_CODE,
    CARD_ID,
    CODES,
    DECK_SIZE,
    DIE_SIDES,
    TARGET_BASE,
)
from services.rules.games.dingo.options import options_problem
from services.rules.games.dingo.state import DayStarted, Event, GameStarted
from services.rules.games.dingo.versions import RULES


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
    keys = [rng.random() for _ in CODES]  # a uniform shuffle, faster than rng.shuffle
    return sorted(CODES, key=keys.__getitem__), roll


def deal(deck: list[int], seats: int, start: int) -> tuple[list[int], list[list[int]]]:
    """Each seat's ranch card and hand from a deck in dealing order (see ``DayStarted``)."""
    ranch_cards = [0] * seats
    hands: list[list[int]] = [[] for _ in range(seats)]
    for step in range(seats):
        seat = (start + step) % seats
        ranch_cards[seat] = deck[step]
        hands[seat] += (deck[seats + step], deck[2 * seats + step])
    return ranch_cards, hands


def day_started(
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
        rules_version=RULES.current,
    )
    decks = [CARD_CODE[card] for card in order]
    return [started, day_started(seats, first, seed, 1, decks, rolls)]
