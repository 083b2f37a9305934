"""The one registry of the bots' policies: every game's bots by name (``<game>-random``,
``<game>-heuristic``), as ``shared.domain.hosting.BOTS`` lists them in the catalogue."""

from __future__ import annotations

from services.bots.policies import (
    Policy,
    breaking_news,
    carcassonne,
    dingo,
    hanabi,
    random_choice,
)

HEURISTICS: dict[str, Policy] = {
    "hanabi": hanabi.heuristic,
    "carcassonne": carcassonne.heuristic,
    "dingo": dingo.heuristic,
    "breaking_news": breaking_news.heuristic,
}
"""Each game's heuristic bot, by game id."""

POLICIES: dict[str, Policy] = {
    name: policy
    for game, heuristic in HEURISTICS.items()
    for name, policy in ((f"{game}-random", random_choice), (f"{game}-heuristic", heuristic))
}
"""Every bot by name: each game's random bot, then its heuristic bot."""
