"""The contract documents game data by each game's declared types
(``tools/contract/``): what ``redact``, ``view`` and a full replay really produce
must decode as those types."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from services.rules.games import load_games
from services.rules.games.playout import random_playout

GAMES = load_games()


@pytest.mark.parametrize("name", sorted(GAMES))
def test_redactions_views_and_states_are_of_the_declared_types(name: str) -> None:
    game = GAMES[name]
    shown_event = msgspec.json.Decoder(game.redacted_event_type)
    view = msgspec.json.Decoder(game.view_type)
    state = msgspec.json.Decoder(game.state_type)
    seats = game.min_players
    audiences: list[int | None] = [*range(seats), None]

    def shows_declared_types(current: Any, _seat: int, _action: Any, events: list[Any]) -> None:
        for audience in audiences:
            for event in events:
                shown_event.decode(msgspec.json.encode(game.redact(event, audience)))
            view.decode(msgspec.json.encode(game.view(current, audience)))
        state.decode(msgspec.json.encode(msgspec.to_builtins(current)))

    rng = random.Random(7)
    resolved = game.resolve_options({}, seats)
    set_up = game.setup(resolved, seats, rng)
    shows_declared_types(game.fold(set_up), 0, None, set_up)
    random_playout(game, seats, rng, check=shows_declared_types)
