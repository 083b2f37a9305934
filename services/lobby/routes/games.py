"""The catalogue's routes: the games, their player counts, options and bots."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath

from services.lobby import schemas as s
from services.lobby.lobby import Lobby
from shared.edge.contract import (
    problem_responses,
)


class GamesController(Controller):
    path = "/games"
    tags = ["catalogue"]

    @get(
        "/",
        operation_id="listGames",
        summary="The games with their player counts and options",
        responses=problem_responses(503),
    )
    async def list_games(self, lobby: NamedDependency[Lobby]) -> list[s.GameInfo]:
        return list((await lobby.catalogue()).values())

    @get(
        "/{game:str}",
        operation_id="getGame",
        summary="One game's catalogue entry",
        responses=problem_responses(404, 503),
    )
    async def get_game(self, lobby: NamedDependency[Lobby], game: FromPath[str]) -> s.GameInfo:
        return await lobby.game(game)
