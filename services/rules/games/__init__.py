"""The games the rules service can run, by catalogue name."""

from __future__ import annotations

import importlib

from services.rules.games.contract import Game

GAME_MODULES = ("hanabi", "carcassonne", "dingo", "breaking_news")
"""Module names under this package; each exposes ``GAME``."""


def load_games() -> dict[str, Game]:
    """Import every game module and index its ``GAME`` by name."""
    games = [importlib.import_module(f"{__name__}.{module}").GAME for module in GAME_MODULES]
    return {game.name: game for game in games}
