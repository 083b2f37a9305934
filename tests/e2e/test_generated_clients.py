"""Clients generated from the committed contract play every game to the end.

The contract is only as good as the clients generators make of it. Each run regenerates a Python
client (openapi-python-client) and a TypeScript one (@hey-api/openapi-ts, checked by
``tsc --strict``) from openapi/openapi.json, expects no generator warning, and plays one match of
every game through the generated models and functions alone, reading its events, a replay and the
export afterwards. The generated code is built here, never committed.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.clients.python_client import Generation, generate_python_client, import_python_client
from tests.clients.typescript_client import (
    PLAY_CARDS,
    Build,
    build_typescript_client,
    node_missing,
    play,
)
from tests.e2e.conftest import Gateway

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.shares_gateway,
    # a generated client that Python warns of on import is one a future Python refuses
    pytest.mark.filterwarnings("error::SyntaxWarning"),
]

MATCHES: list[tuple[str, dict[str, bool]]] = [
    ("hanabi", {}),
    ("carcassonne", {}),
    ("carcassonne", {"messengers": True}),
    ("dingo", {}),
    ("breaking_news", {}),
]


def match_spec(game: str, options: dict[str, bool]) -> str:
    """The player's argument for a match: ``game`` then ``:option`` per option switched on."""
    return ":".join([game, *options])


def gateway_url(gateway: Gateway) -> str:
    """The one public URL, as an app would configure it (no trailing slash)."""
    return str(gateway.client.base_url).rstrip("/")


@pytest.fixture(scope="module")
def python_generation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Generation, Path]:
    into = tmp_path_factory.mktemp("python-client")
    return generate_python_client(into), into


@pytest.fixture(scope="module")
def python_player(python_generation: tuple[Generation, Path]) -> ModuleType:
    generation, into = python_generation
    assert generation.returncode == 0, generation.warnings
    return import_python_client(into)


@pytest.fixture(scope="module")
def typescript_build() -> Build:
    reason = node_missing()
    if reason:
        pytest.skip(reason)
    return build_typescript_client()


def test_every_catalogue_game_is_played(gateway: Gateway) -> None:
    catalogue = {game["name"]: game for game in gateway.client.get("/games").json()}
    assert set(catalogue) == {game for game, _ in MATCHES}
    for game, options in MATCHES:
        assert set(options) <= {option["name"] for option in catalogue[game]["options"]}


def test_python_client_generates_without_warnings(
    python_generation: tuple[Generation, Path],
) -> None:
    generation, _ = python_generation
    assert generation.returncode == 0
    assert generation.warnings == ""


@pytest.mark.parametrize(
    ("game", "options"), MATCHES, ids=[match_spec(game, options) for game, options in MATCHES]
)
def test_python_client_plays_to_the_end(
    gateway: Gateway, python_player: ModuleType, game: str, options: dict[str, Any]
) -> None:
    played = python_player.play_match(gateway_url(gateway), gateway.stack.app_key, game, options)

    assert played.status == "finished"
    assert played.moves > 0
    assert played.events > played.moves
    if game == "hanabi":
        assert played.hand_built_actions >= 1


def test_python_client_sends_each_games_play_card_to_its_own_game(
    gateway: Gateway, python_player: ModuleType
) -> None:
    """``PlayCard`` is a Hanabi action and a Dingo one: each built with its game's classes
    reaches its own game, and the other game's match refuses it with nothing changed."""
    played = python_player.play_a_card_in_hanabi_and_dingo(
        gateway_url(gateway), gateway.stack.app_key
    )

    assert [card.game for card in played] == ["hanabi", "dingo"]
    for card in played:
        prefix = "Hanabi" if card.game == "hanabi" else "Dingo"
        assert card.action_model == f"{prefix}PlayCard"
        assert card.refused_elsewhere == (422, "wrong-game", True)
        assert card.accepted_as == f"{prefix}ActionAccepted"
        assert card.event_models and all(name.startswith(prefix) for name in card.event_models)
    hanabi, dingo = (set(card.event_models) for card in played)
    assert hanabi & {"HanabiCardPlayed", "HanabiCardMisplayed"}
    assert "DingoCardPlayed" in dingo


def test_typescript_client_generates_without_warnings(typescript_build: Build) -> None:
    assert typescript_build.generator_warnings == ""


def test_typescript_client_plays_every_game_to_the_end(
    gateway: Gateway, typescript_build: Build
) -> None:
    specs = [match_spec(game, options) for game, options in MATCHES]

    returncode, summaries, errors = play(gateway_url(gateway), gateway.stack.app_key, specs)

    assert returncode == 0, errors
    assert sorted(match_spec(s["game"], s["options"]) for s in summaries) == sorted(specs)
    for summary in summaries:
        assert summary["status"] == "finished", summary
        assert summary["events"] > summary["moves"] > 0, summary
    hanabi = next(summary for summary in summaries if summary["game"] == "hanabi")
    assert hanabi["hand_built_actions"] >= 1


def test_typescript_client_sends_each_games_play_card_to_its_own_game(
    gateway: Gateway, typescript_build: Build
) -> None:
    """The same through the TypeScript client, whose compiler also refuses a Dingo
    ``PlayCard`` in a Hanabi move (``@ts-expect-error`` in play.ts)."""
    returncode, summaries, errors = play(gateway_url(gateway), gateway.stack.app_key, [PLAY_CARDS])

    assert returncode == 0, errors
    assert [summary["game"] for summary in summaries] == ["hanabi", "dingo"]
    for summary in summaries:
        assert summary["refused_elsewhere"] == [422, "wrong-game", True], summary
        assert summary["accepted"] == 201, summary
        assert summary["answer_game"] == summary["game"], summary
    hanabi, dingo = (set(summary["event_types"]) for summary in summaries)
    assert hanabi & {"CardPlayed", "CardMisplayed"}
    assert "CardPlayed" in dingo
