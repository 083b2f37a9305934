"""Dingo engine speed: random 3-player games and moves per second on one core.

Marked ``speed``: left out of the default run (run with ``-m speed``; ``playtable bench engine``
measures the same). Run with ``-s`` to see the measured figures. Target: 30,000 moves/s with
``playout.random_playout``.
"""

from __future__ import annotations

import random
import time

import pytest

from services.rules.games.dingo import GAME
from services.rules.games.playout import random_playout

pytestmark = pytest.mark.speed  # left out of the default run: see pyproject.toml


def games_and_moves_per_second(games: int, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    moves = 0
    began = time.process_time()
    for _ in range(games):
        moves += random_playout(GAME, 3, rng)[2]
    elapsed = time.process_time() - began
    return games / elapsed, moves / elapsed


def test_random_three_player_games_per_second():
    runs = [games_and_moves_per_second(150, seed) for seed in range(3)]
    games, moves = max(runs, key=lambda run: run[1])
    print(f"\ndingo: {games:.0f} random 3-player games/s, {moves:.0f} moves/s (best of 3)")
    assert moves > 10_000
