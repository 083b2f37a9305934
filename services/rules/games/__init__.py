"""The games the rules service can run: each a package of this one (``hanabi``, ``carcassonne``,
``dingo``, ``breaking_news``), listed by ``services.rules.games.registry`` (``GAMES``, by
catalogue name). Each game's ``public`` module is its published view for other services."""

from __future__ import annotations

from services.rules.games.contract import Game


def load_games() -> dict[str, Game]:
    """Every game by name: a copy of ``registry.GAMES``, importing the engines when first asked
    (importing one game's module leaves the others unloaded)."""
    from services.rules.games.registry import GAMES

    return dict(GAMES)
