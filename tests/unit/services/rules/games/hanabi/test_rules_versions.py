"""Hanabi's rules versions: a match folds by the version it was dealt under, for good. Version
1 is every match recorded before the clue history was kept (its ``GameStarted`` has no
``rules_version``): it must fold to the states stored back then, which have no ``clues``, so
``playtable verify`` finds them equal and an upgrade rewrites none of them."""

from __future__ import annotations

import msgspec
import pytest

from services.rules.engine import RulesEngine
from services.rules.games.hanabi import GAME
from services.rules.games.hanabi.state import GameStarted
from services.rules.games.hanabi.versions import RULES
from services.rules.games.registry import GAMES
from tests.unit.services.rules.games.hanabi.test_views import played

CODEC = RulesEngine(GAMES).codec("hanabi")


def recorded_before_versions(log: list) -> list:
    """The log as a release before rules versions recorded it: ``GameStarted`` without the
    field, read back from its stored JSON."""
    stored = msgspec.json.decode(msgspec.json.encode(log))
    del stored[0]["rules_version"]
    return msgspec.json.decode(msgspec.json.encode(stored), type=list[GAME.event_type])


def stored_before_versions(state) -> bytes:
    """The state's snapshot as that release stored it: no ``clues`` field."""
    fields = msgspec.to_builtins(state)
    del fields["clues"]
    return msgspec.msgpack.encode(fields)


def test_a_new_deal_records_the_current_rules_and_keeps_the_clue_history() -> None:
    log, state = played(seed=3, moves=20, options={})
    assert log[0].rules_version == RULES.current == 2
    assert state.clues and GAME.view(state, 0).clues == state.clues


def test_a_match_recorded_before_versions_folds_as_it_was_stored() -> None:
    log, _ = played(seed=3, moves=20, options={})
    old_log = recorded_before_versions(log)
    assert old_log[0].rules_version == 1
    folded = GAME.fold(old_log)
    assert folded.clues is None
    assert GAME.view(folded, 0).clues is None and GAME.view(folded, None).clues is None
    # the snapshot that release stored decodes to this very fold: verify finds them equal
    assert CODEC.state(stored_before_versions(folded)) == folded
    # and the match plays on under its own rules: a move folds, no history appears
    seat = GAME.to_move(folded)[0]
    for event in GAME.decide(folded, seat, GAME.legal_actions(folded, seat)[-1]):
        folded = GAME.evolve(folded, event)
    assert folded.clues is None


def test_a_match_file_of_either_version_imports_and_an_unknown_one_is_refused() -> None:
    log, _ = played(seed=4, moves=2, options={})
    options = GAME.resolve_options({"deck": log[0].deck}, 2)
    for version in (1, RULES.current):
        started = msgspec.structs.replace(log[0], rules_version=version)
        assert GAME.deal_problem([started], options, 2) is None
    future = msgspec.structs.replace(log[0], rules_version=RULES.current + 1)
    assert "no rules version" in GAME.deal_problem([future], options, 2)


@pytest.mark.parametrize("version", [1, RULES.current])
def test_the_deal_is_the_same_under_every_version(version: int) -> None:
    """Only how clues fold changed: the deck, hands and turns of a version 1 match are those
    a version 2 deal of the same deck gives."""
    log, state = played(seed=6, moves=24, options={})
    replayed = GAME.fold([msgspec.structs.replace(log[0], rules_version=version), *log[1:]])
    same = msgspec.structs.replace(replayed, clues=state.clues)
    assert same == state
    assert isinstance(log[0], GameStarted)
