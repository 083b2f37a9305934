"""Random playouts through the legal actions: the engine tests' and benchmarks' common driver."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
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


def played_events(
    game: Game, seats: int, rng: random.Random, options: dict[str, Any] | None = None
) -> Iterator[tuple[Any, Any]]:
    """Each event of one seeded random game to its end (set-up first) with the state it led
    to, yielded before the next event is applied (``evolve`` may change a state in place)."""
    resolved = game.resolve_options(options or {}, seats)
    if isinstance(resolved, Rejection):
        raise ValueError(resolved.detail)
    state = None
    events = game.setup(resolved, seats, rng)
    while True:
        for event in events:
            state = game.evolve(state, event)
            yield event, state
        if game.result(state) is not None:
            return
        seat = rng.choice(game.to_move(state))
        events = game.decide(state, seat, rng.choice(game.legal_actions(state, seat)))
        if isinstance(events, Rejection):
            raise AssertionError(f"{game.name}: legal action rejected: {events}")


def random_game(
    game: Game, seats: int, rng: random.Random, options: dict[str, Any] | None = None
) -> tuple[list[Any], Any]:
    """The events of one seeded random game to its end (set-up first) and the state they fold
    to: a match to export, verify or re-encode whole."""
    played = list(played_events(game, seats, rng, options))
    return [event for event, _ in played], played[-1][1]


def option_variants(game: Game) -> list[dict[str, Any]]:
    """The default options, then each switch flipped and each other choice of an enum, one at
    a time: the tables a game's rarer events need (The Messengers, a stopwatch)."""
    variants: list[dict[str, Any]] = [{}]
    for spec in game.options:
        if spec.type == "bool":
            variants.append({spec.name: not spec.default})
        elif spec.type == "enum":
            variants += [{spec.name: c} for c in spec.choices or [] if c != spec.default]
    return variants
