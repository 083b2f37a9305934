"""The one registry of the games: every game playtable runs, by its catalogue name (game id).

Each game's module is imported here by name, so readers and tools see every one; a new game is
a line here, its bots a line in ``services.bots.policies.registry`` and its entry in
``shared.domain.hosting.BOTS`` (the light list of games and bots the lobby and match services use:
they run no engine, and never import this).
"""

from __future__ import annotations

from services.rules.games import breaking_news, carcassonne, dingo, hanabi
from services.rules.games.contract import Game

GAMES: dict[str, Game] = {
    game.name: game for game in (hanabi.GAME, carcassonne.GAME, dingo.GAME, breaking_news.GAME)
}
"""The games by name, in catalogue order."""
