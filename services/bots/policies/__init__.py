"""The bots of every game, by name (``<game>-random``, ``<game>-heuristic``).

A policy is a pure function of what a client of that seat is shown: the seat's view and its
legal actions, as the API returns them (JSON), and a random generator; it answers one of the
actions (or, where an action takes free input such as a story, that action filled in). It never
sees the full state, so it cannot learn hidden information the seat may not see.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from typing import Any

View = dict[str, Any]
Action = dict[str, Any]
Policy = Callable[[View, list[Action], random.Random], Action]

GAMES = ("hanabi", "carcassonne", "dingo", "breaking_news")


def random_choice(view: View, actions: list[Action], rng: random.Random) -> Action:
    """Any legal action, uniformly: the baseline every heuristic is measured against."""
    return rng.choice(actions)


def load_policies() -> dict[str, Policy]:
    """Every game's random bot, and its heuristic bot where its module has one."""
    policies: dict[str, Policy] = {}
    for game in GAMES:
        policies[f"{game}-random"] = random_choice
        try:
            module = importlib.import_module(f"services.bots.policies.{game}")
        except ModuleNotFoundError:
            continue
        policies[f"{game}-heuristic"] = module.heuristic
    return policies
