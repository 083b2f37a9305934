"""The one registry of the games: every game playtable runs, by its catalogue name (game id),
and the community file formats some of them read and write.

Each game is a package of ``services.rules.games`` imported here by name, so readers and tools
see every one; every consumer (the rules service, the bots, the operator's tools) imports the
games from here. A new game is a package and a line here, its bots a line in
``services.bots.policies.registry`` and its entry in ``shared.domain.hosting.BOTS`` (the light
list of games and bots the lobby and match services use: they run no engine, and never import
this).
"""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple

from services.rules.games import breaking_news, carcassonne, dingo, hanabi
from services.rules.games.carcassonne import turns as carcassonne_turns
from services.rules.games.contract import Game
from services.rules.games.hanabi import live as hanabi_live

GAMES: dict[str, Game] = {
    game.name: game for game in (hanabi.GAME, carcassonne.GAME, dingo.GAME, breaking_news.GAME)
}
"""The games by name, in catalogue order."""


class ExchangeFormat(NamedTuple):
    """A game's community file format: its name, and the module that reads and writes it.

    Such a module offers ``export_events(events, players) -> dict`` and
    ``import_game(document) -> (players, options, actions)`` raising ``ValueError`` when the
    document is not one it reads (its result may add ``actors``: the seat of each action, None
    for the seat to move, for actions any seat may take); and, if the format declares outcomes
    (points, scores) beside the actions, ``disagreement(document, events) -> str | None``: the
    first one its replay contradicts.
    """

    name: str
    module: ModuleType


EXCHANGE_FORMATS: dict[str, ExchangeFormat] = {
    "hanabi": ExchangeFormat("hanab.live", hanabi_live),
    "carcassonne": ExchangeFormat("carcassonne-turns", carcassonne_turns),
}
"""The games that have a community file format, by game id."""
