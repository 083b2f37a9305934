"""The one registry of the bots' policies: every game's bots by name (``<game>-random``,
``<game>-heuristic``), as ``shared.domain.hosting.BOTS`` lists them in the catalogue.

It lists policies, not games: the games are those of ``services.rules.games.registry``, in its
order, and each has its heuristic here (a game without one fails at import)."""

from __future__ import annotations

from services.bots.policies import (
    Policy,
    breaking_news,
    carcassonne,
    dingo,
    hanabi,
    random_choice,
)
from services.rules.games.registry import GAMES

_HEURISTIC_OF: dict[str, Policy] = {
    "hanabi": hanabi.heuristic,
    "carcassonne": carcassonne.heuristic,
    "dingo": dingo.heuristic,
    "breaking_news": breaking_news.heuristic,
}

HEURISTICS: dict[str, Policy] = {game: _HEURISTIC_OF[game] for game in GAMES}
"""Each game's heuristic bot, by game id, in the games' catalogue order."""

POLICIES: dict[str, Policy] = {
    name: policy
    for game, heuristic in HEURISTICS.items()
    for name, policy in ((f"{game}-random", random_choice), (f"{game}-heuristic", heuristic))
}
"""Every bot by name: each game's random bot, then its heuristic bot."""
