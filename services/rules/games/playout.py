"""Random playouts through the legal actions: the engine tests' and benchmarks' common driver."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from services.rules.games.contract import Game, Outcome, Rejection

StepCheck = Callable[[Any, int, Any, list[Any]], None]
"""Called after each move with (state, seat, action, events) to assert invariants."""


def random_playout(
    game: Game,
    seats: int,
    rng: random.Random,
    options: dict[str, Any] | None = None,
    *,
    check: StepCheck | None = None,
    max_moves: int = 100_000,
) -> tuple[Any, Outcome, int]:
    """Play one game to the end choosing uniformly among the legal actions.

    Returns the final state, its outcome and the number of moves played. Every chosen action
    must be accepted by ``decide``: a rejection of a listed legal action is an engine bug.
    """
    resolved = game.resolve_options(options or {}, seats)
    if isinstance(resolved, Rejection):
        raise ValueError(resolved.detail)
    state = game.fold(game.setup(resolved, seats, rng))
    moves = 0
    while (outcome := game.result(state)) is None:
        if moves >= max_moves:
            raise RuntimeError(f"{game.name}: no end after {max_moves} moves")
        seat = rng.choice(game.to_move(state))
        action = rng.choice(game.legal_actions(state, seat))
        events = game.decide(state, seat, action)
        if isinstance(events, Rejection):
            raise AssertionError(f"{game.name}: legal action {action!r} rejected: {events}")
        for event in events:
            state = game.evolve(state, event)
        if check is not None:
            check(state, seat, action, events)
        moves += 1
    return state, outcome, moves


def play_until(
    game: Game,
    seats: int,
    rng: random.Random,
    reached: Callable[[Any], bool],
    options: dict[str, Any] | None = None,
) -> Any:
    """A seeded random game stopped at the first state where ``reached(state)`` holds
    (mid-game positions for benchmarks and tests, e.g. a board of 60 tiles)."""
    resolved = game.resolve_options(options or {}, seats)
    if isinstance(resolved, Rejection):
        raise ValueError(resolved.detail)
    state = game.fold(game.setup(resolved, seats, rng))
    while not reached(state):
        if game.result(state) is not None:
            raise ValueError(f"{game.name}: the game ended before the state was reached")
        seat = rng.choice(game.to_move(state))
        events = game.decide(state, seat, rng.choice(game.legal_actions(state, seat)))
        if isinstance(events, Rejection):
            raise AssertionError(f"{game.name}: legal action rejected: {events}")
        state = game.fold(events, state)
    return state
