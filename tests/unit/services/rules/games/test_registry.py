"""One registry of the games and one of the bots' policies, agreeing with the catalogue's light
list of games and bots (``shared.domain.hosting.BOTS``), which the engine-less services use."""

from __future__ import annotations

import json
import subprocess
import sys

from services.bots.policies import random_choice
from services.bots.policies.registry import HEURISTICS, POLICIES
from services.rules.games.registry import GAMES
from shared.domain.hosting import BOTS


def test_the_registries_and_the_catalogue_list_the_same_games_and_bots() -> None:
    assert list(GAMES) == list(BOTS) == list(HEURISTICS)
    assert all(game.name == name for name, game in GAMES.items())
    assert list(POLICIES) == [bot.name for bots in BOTS.values() for bot in bots]
    for game in GAMES:
        assert POLICIES[f"{game}-random"] is random_choice
        assert POLICIES[f"{game}-heuristic"] is HEURISTICS[game]


def test_the_services_without_an_engine_import_no_game_and_no_bot() -> None:
    """The lobby, match, clocks and webhooks processes and the ``playtable`` command know the
    games through the rules service: importing them loads no engine and no policy."""
    code = (
        "import json, sys\n"
        "import services.lobby.app, services.match.app, services.clocks.worker\n"
        "import services.webhooks.dispatch_loop, services.operator.cli\n"
        "print(json.dumps(sorted(m for m in sys.modules"
        " if m.startswith(('services.rules', 'services.bots')))))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(found) == []
