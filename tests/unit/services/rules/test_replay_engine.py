"""``ReplaySpan``: folding events onto a snapshot shows exactly the view of each state reached."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from services.rules.engine import GameCodec, RulesEngine
from services.rules.games import load_games
from shared.domain import rules_api as api

ENGINE = RulesEngine(load_games())
CASES = [
    ("hanabi", 3, {}),
    ("carcassonne", 2, {}),
    ("carcassonne", 3, {"messengers": True}),
    ("dingo", 3, {}),
    ("breaking_news", 3, {}),
]


def recorded_game(name: str, seats: int, options: dict[str, Any]) -> tuple[list[Any], int]:
    """The events of one seeded random game, in order, and how many of them set it up."""
    game = ENGINE.codec(name).game
    resolved = game.resolve_options(options, seats)
    events = game.setup(resolved, seats, random.Random(4))
    set_up = len(events)
    rng = random.Random(5)
    state = game.fold(events)
    while game.result(state) is None:
        seat = rng.choice(game.to_move(state))
        decided = game.decide(state, seat, rng.choice(game.legal_actions(state, seat)))
        events += decided
        state = game.fold(decided, state)
    return events, set_up


def stored_game(
    name: str, seats: int, options: dict[str, Any]
) -> tuple[GameCodec, list[Any], int, list[msgspec.Raw]]:
    """A recorded game with its events as stored (JSON)."""
    codec = ENGINE.codec(name)
    events, set_up = recorded_game(name, seats, options)
    return codec, events, set_up, [msgspec.Raw(codec.json.encode(event)) for event in events]


@pytest.mark.parametrize(("name", "seats", "options"), CASES)
def test_replay_from_a_snapshot_shows_the_view_at_that_version(
    name: str, seats: int, options: dict[str, Any]
) -> None:
    codec, events, set_up, raws = stored_game(name, seats, options)
    game = codec.game
    middle = len(events) // 2
    snapshots = {at: codec.progress(game.fold(events[:at])).state for at in (set_up, middle)}
    for version in (set_up, set_up + 1, middle, middle + 1, len(events) - 1, len(events)):
        expected = game.fold(events[:version])
        base = middle if version >= middle else set_up
        tail = raws[base:version]
        for seat in (None, 0, seats - 1):
            replayed = ENGINE.handle(api.ReplaySpan(name, snapshots[base], tail, seat))[-1]
            assert bytes(replayed.view) == codec.json.encode(game.view(expected, seat))
            assert replayed.to_move == game.to_move(expected)
            assert msgspec.json.decode(replayed.state) is None
        over = game.result(expected)
        assert (replayed.result is None) == (over is None)


@pytest.mark.parametrize(("name", "seats", "options"), CASES)
def test_full_replay_is_the_complete_state_as_json(
    name: str, seats: int, options: dict[str, Any]
) -> None:
    codec, events, set_up, raws = stored_game(name, seats, options)
    final = codec.game.fold(events)
    snapshot = codec.progress(codec.game.fold(events[:set_up])).state
    replayed = msgspec.json.decode(
        msgspec.json.encode(
            ENGINE.handle(api.ReplaySpan(name, snapshot, raws[set_up:], None, full=True))
        ),
        type=list[api.Replayed],
    )[-1]
    assert msgspec.json.decode(replayed.state) == msgspec.json.decode(
        codec.json.encode(msgspec.to_builtins(final))
    )
    assert replayed.result == msgspec.to_builtins(codec.game.result(final))


@pytest.mark.parametrize(("name", "seats", "options"), CASES)
def test_a_span_shows_every_version_between_two_snapshots(
    name: str, seats: int, options: dict[str, Any]
) -> None:
    codec, events, set_up, raws = stored_game(name, seats, options)
    game = codec.game
    base = min(set_up + 10, len(events) - 40)
    snapshot = codec.progress(game.fold(events[:base])).state
    span = ENGINE.handle(api.ReplaySpan(name, snapshot, raws[base : base + 40], 1))
    assert len(span) == 41
    for version, replayed in enumerate(span, start=base):
        expected = game.view(game.fold(events[:version]), 1)
        assert bytes(replayed.view) == codec.json.encode(expected), version
