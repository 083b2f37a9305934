"""Carcassonne engine speed: random 2-player games per second and legal moves on a full board.

The floors are marked ``speed``: left out of the default run (run with ``-m speed``; ``playtable
bench engine`` measures the same). Run with ``-s`` to see the measured figures. Targets: 320
games/s and under 1 ms for the legal moves of one tile on a 60-tile board, on one core.
"""

from __future__ import annotations

import random
import statistics
import time

import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.state import CarcassonneState
from services.rules.games.playout import play_until, random_playout


def board_with_tiles(tiles: int, seed: int, seats: int = 2) -> CarcassonneState:
    """A seeded random game stopped once ``tiles`` tiles (the start tile included) lie."""
    return play_until(GAME, seats, random.Random(seed), lambda state: len(state.codes) >= tiles)


def games_per_second(games: int, seed: int) -> float:
    rng = random.Random(seed)
    began = time.process_time()
    for _ in range(games):
        random_playout(GAME, 2, rng)
    return games / (time.process_time() - began)


@pytest.mark.speed
def test_random_two_player_games_per_second():
    best = max(games_per_second(60, seed) for seed in range(3))
    print(f"\ncarcassonne: {best:.0f} random 2-player games/s (best of 3 runs of 60)")
    assert best > 60


def test_legal_moves_on_a_sixty_tile_board_are_all_decided():
    for seed in range(5):
        state = board_with_tiles(60, seed)
        assert len(state.codes) == 60 and GAME.result(state) is None
        seat = GAME.to_move(state)[0]
        actions = GAME.legal_actions(state, seat)
        assert actions and all(isinstance(GAME.decide(state, seat, a), list) for a in actions)


@pytest.mark.speed
def test_legal_moves_on_a_sixty_tile_board_take_well_under_a_millisecond():
    timings = []
    for seed in range(5):
        state = board_with_tiles(60, seed)
        seat = GAME.to_move(state)[0]
        for _ in range(300):
            began = time.perf_counter()
            GAME.legal_actions(state, seat)
            timings.append(time.perf_counter() - began)
    median = statistics.median(timings)
    print(f"\ncarcassonne: legal moves on a 60-tile board, median {median * 1e6:.1f} us")
    assert median < 0.005
