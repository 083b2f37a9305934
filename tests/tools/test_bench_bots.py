"""bench bots' Hanabi figure: timing the bot leaves its play unchanged, and every decision it
made is counted."""

import random
from typing import Any

from services.bots.arena import play_match, self_play
from services.bots.policies.hanabi import heuristic
from services.rules.games.hanabi import GAME
from tools.bench.engine import timed_self_play


def test_timed_self_play_scores_as_the_arena_and_counts_each_decision() -> None:
    seeds = range(3)
    scores, decisions, cpu = timed_self_play(("hanabi", "hanabi-heuristic", 3, seeds))
    assert scores == self_play(("hanabi", "hanabi-heuristic", 3, seeds))
    calls: list[int] = []

    def counted(view: dict[str, Any], actions: list[dict[str, Any]], rng: random.Random) -> Any:
        calls.append(1)
        return heuristic(view, actions, rng)

    for seed in seeds:
        play_match(GAME, [counted] * 3, seed)
    assert decisions == len(calls) > 0
    assert cpu > 0
