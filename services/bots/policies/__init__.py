"""The bots of every game, by name (``<game>-random``, ``<game>-heuristic``).

A policy is a pure function of what a client of that seat is shown: the seat's view and its
legal actions, as the API returns them (JSON), and a random generator; it answers one of the
actions (or, where an action takes free input such as a story, that action filled in), or None
where the seat may move but need not and the bot lets the moment pass (in a simultaneous phase
every seat to move is asked). It never sees the full state, so it cannot learn hidden
information the seat may not see.

Each game's heuristic is the ``heuristic`` of its module here; ``registry`` lists them all.
Policies use a game's data only through its published view
(``services.rules.games.<game>.public``), never the engine's other modules.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

View = dict[str, Any]
Action = dict[str, Any]
Policy = Callable[[View, list[Action], random.Random], Action | None]


def random_choice(view: View, actions: list[Action], rng: random.Random) -> Action:
    """Any legal action, uniformly: the baseline every heuristic is measured against."""
    return rng.choice(actions)


def load_policies() -> dict[str, Policy]:
    """Every bot by name: a copy of ``registry.POLICIES``, importing the policies when first
    asked (importing one game's policy leaves the others unloaded)."""
    from services.bots.policies.registry import POLICIES

    return dict(POLICIES)
