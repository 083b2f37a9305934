"""Carcassonne's per-match options and its setup: the shuffled stack and the first draw."""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.carcassonne import expansions, messengers
from services.rules.games.carcassonne.evolve import evolve
from services.rules.games.carcassonne.scoring import draw
from services.rules.games.carcassonne.state import StackShuffled
from services.rules.games.carcassonne.tiles import (
    LETTERS,
    PICTURES,
    START_TILE,
    TILE_INDEX,
    box_counts,
)
from services.rules.games.carcassonne.versions import RULES
from services.rules.games.contract import Rejection


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """A given tile order must use the letters of the tiles played (the base game's and the
    chosen expansions'), no more of each than the boxes hold; The Messengers' options follow
    ``messengers.validate_options``."""
    problem = messengers.validate_options(options)
    if problem is not None:
        return problem
    order = options["tile_order"]
    if order is None:
        return options
    if len(order) < 2:
        return Rejection("bad_option", "tile_order needs the start tile and at least one more")
    counts = box_counts(expansions.chosen(options))
    unknown = sorted(
        {letter for letter in order if letter not in TILE_INDEX or not counts[TILE_INDEX[letter]]}
    )
    if unknown:
        return Rejection("bad_option", f"tile_order: unknown tile letter(s) {', '.join(unknown)}")
    for letter, count in zip(LETTERS, counts, strict=True):
        if order.count(letter) > count:
            return Rejection("bad_option", f"tile_order: more than {count} tile(s) {letter}")
    return options


def setup(options: dict[str, Any], seats: int, rng: random.Random) -> list[Any]:
    """Shuffle the stack (or take ``tile_order``), lay the start tile and draw for seat 0;
    with Inns & Cathedrals or Traders & Builders their tiles are in the stack; with The
    Messengers, shuffle the messages (or take ``message_order``) after the tiles."""
    order = options.get("tile_order")
    if order:
        start, stack = order[0], list(order[1:])
    else:
        counts = box_counts(expansions.chosen(options))
        stack = [
            letter for letter, count in zip(LETTERS, counts, strict=True) for _ in range(count)
        ]
        stack.remove(START_TILE)
        rng.shuffle(stack)
        start = START_TILE
    started = StackShuffled(seats, start, stack, len(stack), PICTURES, RULES.current)
    events: list[Any] = [started]
    state = evolve(None, started)
    chosen = expansions.in_play(options)
    if chosen is not None:
        events.append(chosen)
        state = evolve(state, chosen)
    if options.get("messengers"):
        shuffled = messengers.shuffled_messages(options, rng)
        events.append(shuffled)
        state = evolve(state, shuffled)
    return [*events, *draw(state, 0, [])]
