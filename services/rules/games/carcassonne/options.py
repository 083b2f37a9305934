"""Carcassonne's per-match options and its setup: the shuffled stack and the first draw."""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.carcassonne import messengers
from services.rules.games.carcassonne.evolve import evolve
from services.rules.games.carcassonne.scoring import draw
from services.rules.games.carcassonne.state import StackShuffled
from services.rules.games.carcassonne.tiles import (
    COUNTS,
    LETTERS,
    PICTURES,
    START_TILE,
    TILE_INDEX,
)
from services.rules.games.carcassonne.versions import RULES
from services.rules.games.contract import Rejection


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """A given tile order must use base-game letters, no more of each than the box holds;
    the expansion's options follow ``messengers.validate_options``."""
    problem = messengers.validate_options(options, seats)
    if problem is not None:
        return problem
    order = options["tile_order"]
    if order is None:
        return options
    if len(order) < 2:
        return Rejection("bad_option", "tile_order needs the start tile and at least one more")
    unknown = sorted({letter for letter in order if letter not in TILE_INDEX})
    if unknown:
        return Rejection("bad_option", f"tile_order: unknown tile letter(s) {', '.join(unknown)}")
    for letter, count in zip(LETTERS, COUNTS, strict=True):
        if order.count(letter) > count:
            return Rejection("bad_option", f"tile_order: more than {count} tile(s) {letter}")
    return options


def setup(options: dict[str, Any], seats: int, rng: random.Random) -> list[Any]:
    """Shuffle the stack (or take ``tile_order``), lay the start tile and draw for seat 0;
    with The Messengers, shuffle the messages (or take ``message_order``) after the tiles."""
    order = options.get("tile_order")
    if order:
        start, stack = order[0], list(order[1:])
    else:
        stack = [
            letter for letter, count in zip(LETTERS, COUNTS, strict=True) for _ in range(count)
        ]
        stack.remove(START_TILE)
        rng.shuffle(stack)
        start = START_TILE
    started = StackShuffled(seats, start, stack, len(stack), PICTURES, RULES.current)
    state = evolve(None, started)
    if not options.get("messengers"):
        return [started, *draw(state, 0, [])]
    shuffled = messengers.shuffled_messages(options, rng)
    state = evolve(state, shuffled)
    return [started, shuffled, *draw(state, 0, [])]
