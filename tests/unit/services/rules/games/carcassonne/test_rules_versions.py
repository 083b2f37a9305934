"""Message 4 under each of Carcassonne's rules versions: each version keeps its own reading of
when message 4 carried out goes under the message stack (``carcassonne.versions``). A match
is started as a log recording that version would start it (``StackShuffled.rules_version``)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.messengers import (
    CarryOutMessage,
    ChooseFigure,
    MessageDrawn,
    MessageResolved,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.state import StackShuffled
from services.rules.games.carcassonne.versions import (
    RULES,
    FiguresSummedHoldingMessage,
    MessageResolvedAtOnce,
)
from tests.unit.services.rules.games.carcassonne.messengers_boards import (
    CLOSE_BOTH_CITIES,
    CLOSE_START_CITY,
    act,
    draw_message,
    put_figures,
    two_cities,
)

RECORDED = Path(__file__).parents[1] / "recorded"


def under(version: int, state):
    state.rules_version = RULES.in_state(version)  # as StackShuffled(rules_version=version) would
    return state


@pytest.mark.parametrize(
    ("version", "during", "after"),
    [
        (1, ([5, 6, 3, 2, 1, 7, 4, 8], 0), [5, 6, 3, 2, 1, 7, 4, 8]),
        (2, ([5, 6, 3, 2, 1, 7, 8], 4), [5, 6, 3, 2, 1, 7, 8, 4]),
        (3, ([5, 6, 3, 2, 1, 7, 8], 4), [5, 6, 3, 2, 1, 7, 8, 4]),
    ],
)
def test_message_4_goes_under_the_stack_at_once_only_under_version_1(version, during, after):
    """RULES.md's example: message 8 is drawn during message 4's extra turn. Version 1 put 4
    under the stack as it was carried out, above 8; since version 2 it waits for the turn."""
    state, _ = draw_message(
        under(version, two_cities(messages=[4, 8, 5, 6, 3, 2, 1, 7])), CLOSE_START_CITY
    )
    state, _ = act(state, CarryOutMessage())
    put_figures(state, 0, 5, 1)
    state, _ = act(state, CLOSE_BOTH_CITIES)
    state, _ = act(state, ChooseFigure(1))
    state, _ = act(state, ChooseFigure(0))
    events = GAME.decide(state, 0, TakeMessagePoints(1))
    in_turn = GAME.fold(events[:-1], state)
    assert (in_turn.messengers.stack, in_turn.messengers.held) == during
    assert GAME.fold(events[-1:], in_turn).messengers.stack == after


@pytest.mark.parametrize(("version", "held"), [(1, 0), (2, 4), (RULES.current, 0)])
def test_message_4_whose_extra_turn_ends_the_match_stays_out_only_under_version_2(version, held):
    state, _ = draw_message(
        under(version, two_cities(messages=[4, 6, 1, 2, 3, 5, 7, 8], after=("U",))),
        CLOSE_START_CITY,
    )
    state, _ = act(state, CarryOutMessage())
    extra = next(a for a in GAME.legal_actions(state, 0) if a.follower is None)
    state, _ = act(state, extra)
    assert GAME.result(state) is not None
    assert state.messengers.held == held and (4 in state.messengers.stack) == (held == 0)


def recorded_log(name: str) -> list:
    fixture = json.loads((RECORDED / f"{name}.json").read_text())
    return [msgspec.convert(event["data"], GAME.event_type) for event in fixture["match"]["events"]]


def test_a_log_recorded_before_versions_is_read_first_by_the_version_its_log_allows():
    """Version 1 when its tiles use the first pictures and its draws agree, else version 3;
    the other readings follow, for ``playtable verify``. A versioned log has one reading."""
    first_pictures = recorded_log("2a2c6b4-carcassonne-running")
    readings = GAME.all_readings(first_pictures)
    assert [type(reading[0]) for reading in readings] == [StackShuffled] * 3
    # stopped in message 4's extra turn: no FiguresSummed for version 2's reading to change
    assert [kinds(reading) for reading in readings] == [{MessageResolvedAtOnce}, set(), set()]
    assert GAME.fold(readings[0]).messengers.held == 0  # version 1: under the stack at once
    assert GAME.fold(readings[1]).messengers.held == 4
    second_pictures = recorded_log("a7c6a03-carcassonne-running")
    assert GAME.as_folded(second_pictures) is second_pictures
    versioned = [msgspec.structs.replace(first_pictures[0], rules_version=1), *first_pictures[1:]]
    assert GAME.all_readings(versioned) == [versioned]
    assert GAME.fold(versioned).messengers.held == 0 and GAME.fold(versioned).rules_version == 1


def kinds(log: list) -> set[type]:
    """The in-memory event types a reading made."""
    return {type(event) for event in log} & {MessageResolvedAtOnce, FiguresSummedHoldingMessage}


def test_a_log_whose_draws_disagree_with_version_1s_stack_is_read_as_version_3_first():
    """The log's chance decides: once the message stack comes round, a draw that is not the
    top of version 1's stack (message 4 went under at once) rules version 1 out."""
    log = recorded_log("2a2c6b4-carcassonne-running")  # stopped in message 4's extra turn
    seat = log[-1].seat
    stack = GAME.fold(log).messengers.stack  # version 3: message 4 held out of it
    round_of_draws = [
        event
        for message in stack
        for event in (MessageDrawn(seat, message), MessageResolved(seat, message, True, 2))
    ]
    agreeing = [*log, *round_of_draws, MessageDrawn(seat, 4)]
    assert GAME.fold(GAME.as_folded(agreeing)).messengers.message == 4
    assert kinds(GAME.as_folded(agreeing)) == {MessageResolvedAtOnce}
    disagreeing = [*log, *round_of_draws, MessageDrawn(seat, stack[0])]
    assert GAME.as_folded(disagreeing) is disagreeing
