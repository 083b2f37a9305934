"""The unstored index of each seat's followers (``standing``): kept by ``evolve`` it equals one
built from scratch after every event of random games and after message 8 (which random play
hardly carries out), a decoded or copied state builds its own, and it never reaches a state's
encoding."""

from __future__ import annotations

import copy
import random

import msgspec
import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.messengers import CarryOutMessage, Spot
from services.rules.games.carcassonne.scoring import own_followers
from services.rules.games.carcassonne.standing import standing_of
from services.rules.games.carcassonne.state import CarcassonneState
from services.rules.games.playout import played_events
from tests.unit.services.rules.games.carcassonne.messengers_boards import (
    CLOSE_NORTH_EAST_CITY,
    act,
    draw_message,
    roads_and_farm,
)

TABLES = [
    (2, {"inns_cathedrals": True, "traders_builders": True}),
    (3, {"inns_cathedrals": True, "traders_builders": True, "messengers": True}),
    (2, {"messengers": True}),
]
"""Both expansions (the large follower), and The Messengers (message 8 sends one home)."""


def _from_scratch(state: CarcassonneState) -> list[list[int]]:
    """The seats' follower nodes read off a copy of the state's holders, sorted."""
    fresh = msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=CarcassonneState)
    return [sorted(nodes) for nodes in standing_of(fresh)]


@pytest.mark.parametrize(("seats", "options"), TABLES)
def test_kept_index_equals_one_built_from_scratch_after_every_event(
    seats: int, options: dict[str, bool]
) -> None:
    checked = 0
    for seed in range(6):
        for _event, state in played_events(GAME, seats, random.Random(seed), options):
            if "standing" not in state.__dict__:
                standing_of(state)  # evolve keeps only an index asked for
                continue
            kept = [sorted(nodes) for nodes in standing_of(state)]
            assert kept == _from_scratch(state)
            assert [len(nodes) for nodes in kept] == [
                len(own_followers(state, seat)) for seat in range(seats)
            ]
            checked += 1
    assert checked > 500


def test_message_8_sends_a_follower_home_from_the_kept_index() -> None:
    state, _ = draw_message(roads_and_farm([8, 1, 2, 3, 4, 5, 6, 7]), CLOSE_NORTH_EAST_CITY)
    before = len(standing_of(state)[0])
    state, _ = act(state, CarryOutMessage(0, Spot(1, 1, 1)))
    assert len(standing_of(state)[0]) == before - 1
    assert [sorted(nodes) for nodes in standing_of(state)] == _from_scratch(state)


def test_the_index_stays_out_of_encodings_and_copies() -> None:
    options = {"inns_cathedrals": True, "traders_builders": True}
    state = _state_with_followers_of_both_seats(options)
    unindexed = msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=CarcassonneState)
    kept = standing_of(state)
    assert any(kept)
    assert msgspec.msgpack.encode(state) == msgspec.msgpack.encode(unindexed)
    assert msgspec.json.encode(state) == msgspec.json.encode(unindexed)
    assert b"standing" not in msgspec.json.encode(state)
    for copied in (copy.copy(state), copy.deepcopy(state), msgspec.structs.replace(state)):
        assert "standing" not in copied.__dict__


def _state_with_followers_of_both_seats(options: dict[str, bool]) -> CarcassonneState:
    """The first state of a seeded game, its legal actions listed (so it has the index),
    where both seats have a follower on the board."""
    for _event, state in played_events(GAME, 2, random.Random(3), options):
        GAME.legal_actions(state, state.seat)
        if all(standing_of(state)):
            return state
    raise AssertionError("no state with followers of both seats")
