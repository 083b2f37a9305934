"""The lobby service: catalogue, tables and seats over HTTP; starts matches through Redis.

``create_app`` composes it: settings, runtime, the domain (``Lobby``) and the routes by resource
(``routes/``)."""

from __future__ import annotations

from litestar import Litestar

from services.lobby.feed import TableFeeds
from services.lobby.lobby import Lobby
from services.lobby.routes.apps import AppsController
from services.lobby.routes.games import GamesController
from services.lobby.routes.seats import SeatsController
from services.lobby.routes.tables import TablesController
from shared.edge.access import access_guard, authenticator
from shared.edge.app import service_app
from shared.edge.feed import FeedHub
from shared.edge.runtime import Runtime
from shared.infra import tracing
from shared.infra.settings import Settings
from shared.infra.streams import LOBBY_EVENTS_STREAM


def create_app(settings: Settings | None = None) -> Litestar:
    """Compose the lobby: settings, runtime, domain and HTTP routes, in one place."""
    settings = settings or Settings.from_env()
    tracing.configure(settings, "lobby")
    runtime = Runtime(settings)
    lobby = Lobby(runtime)
    feeds = FeedHub(runtime, settings.stream(LOBBY_EVENTS_STREAM))
    return service_app(
        "lobby",
        settings.instance_id,
        [GamesController, TablesController, SeatsController, AppsController],
        {"lobby": lobby, "table_feeds": TableFeeds(lobby.tables, feeds)},
        on_startup=[lobby.start, feeds.start],
        on_shutdown=[runtime.close],
        ready=runtime.ready,
        metrics=runtime.metrics,
        settings=settings,
        guards=[
            access_guard(
                authenticator(lambda: runtime.pool, settings),
                "tables",
                {"table_id": lobby.tables.app_of},
            )
        ],
    )
