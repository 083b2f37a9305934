"""The rules engine's event samples (``EventSamples``): one of every event type of every game,
only ever as a spectator sees it, and the same on every run."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from services.rules.engine import RulesEngine, event_types
from services.rules.games import load_games
from services.rules.games.contract import struct_tags
from services.webhooks.samples import event_types as webhook_event_types
from shared.domain import rules_api as api
from shared.domain.hosting import HOSTING_EVENT_TYPES
from shared.domain.messages import MATCH_FINISHED, TABLE_EVENT_TYPES

GAMES = load_games()


@pytest.fixture(scope="module")
def samples() -> dict[str, api.GameSamples]:
    reply = RulesEngine(GAMES).handle(api.EventSamples())
    return {game.game: game for game in msgspec.convert(reply, list[api.GameSamples])}


def shown(samples: dict[str, api.GameSamples], game: str) -> dict[str, Any]:
    """Each event type's sample data of ``game``, decoded as what redaction may return."""
    decode = msgspec.json.Decoder(GAMES[game].redacted_event_type).decode
    return {event.type: decode(event.data) for event in samples[game].events}


def test_every_game_has_one_sample_of_each_event_type(samples: dict[str, api.GameSamples]) -> None:
    assert list(samples) == list(GAMES)
    for name, game in GAMES.items():
        own = sorted(struct_tags(game.event_type))
        assert [event.type for event in samples[name].events] == own
        assert set(shown(samples, name)) == set(own)
        # feeds and webhooks name the seats' events of every match too (samples made up)
        assert event_types(game) == sorted({*own, *HOSTING_EVENT_TYPES})
        assert samples[name].result["scores"] and samples[name].last_version > 1


def test_samples_are_the_same_on_every_run(samples: dict[str, api.GameSamples]) -> None:
    again = RulesEngine(GAMES).handle(api.EventSamples())
    assert msgspec.json.encode(again) == msgspec.json.encode(list(samples.values()))


def test_samples_show_no_hidden_information(samples: dict[str, api.GameSamples]) -> None:
    """No hand, deck or stack order, nor a card drawn: what only a seat (or no one) sees."""
    hanabi = shown(samples, "hanabi")
    dealt = msgspec.to_builtins(hanabi["GameStarted"])
    assert "deck" not in dealt
    cards = [card for hand in dealt["hands"] for card in hand]
    assert cards and all(card["suit"] is None and card["rank"] is None for card in cards)
    assert hanabi["CardDrawn"].suit is None and hanabi["CardDrawn"].rank is None
    carcassonne = shown(samples, "carcassonne")
    assert carcassonne["StackShuffled"].stack is None
    assert carcassonne["MessagesShuffled"].order is None
    dingo = shown(samples, "dingo")
    assert dingo["DayStarted"].hand is None and dingo["TurnEnded"].cards is None
    assert dingo["GameStarted"].deck_order is None
    news = shown(samples, "breaking_news")
    assert news["ElementDrawn"].card is None and news["ObjectDrawn"].object is None


def test_webhook_event_types_are_every_type_a_subscription_may_name(
    samples: dict[str, api.GameSamples],
) -> None:
    infos = webhook_event_types(list(samples.values()))
    names = [info.type for info in infos]
    expected = {*TABLE_EVENT_TYPES, MATCH_FINISHED}
    expected.update(name for game in GAMES.values() for name in event_types(game))
    assert names == sorted(expected)
    for info in infos:
        body = msgspec.json.decode(info.sample)
        assert list(body) == ["type", "timestamp", "stream_id", "version", "game", "data"]
        assert body["type"] == info.type
        assert info.games == [
            name for name, game in GAMES.items() if info.type in event_types(game)
        ]
        # a match's event names the game whose event ``data`` is; a table's none
        assert (body["game"] is None) == (body["stream_id"].startswith("table-"))
        assert body["game"] in {None, *info.games} or info.type == MATCH_FINISHED
