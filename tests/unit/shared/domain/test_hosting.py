"""Hosted play's pure parts: the clocks' arithmetic, and how the rules engine treats the events a
match records about its seats (folds skip them, everyone sees them, a forfeit ends the match)."""

from __future__ import annotations

import dataclasses
import random

import msgspec
import pytest

from services.rules.engine import RulesEngine
from services.rules.games import load_games
from services.rules.games.playout import played_events
from shared.domain import rules_api as api
from shared.domain.hosting import (
    BotTookOver,
    Clocks,
    ClockUpdated,
    MatchForfeited,
    PlayerLeft,
    TimeControl,
    clock_view,
    deadline_ms,
    forfeit_result,
    run_clocks,
    seat_deadlines,
    start_clocks,
)

PER_MOVE = TimeControl(per_move_s=30)
FISCHER = TimeControl(bank_s=300, increment_s=5)
T0 = 1_000_000


def test_a_time_control_is_one_kind_or_the_other() -> None:
    assert PER_MOVE.problem() is None
    assert FISCHER.problem() is None
    assert TimeControl().problem() is not None
    assert TimeControl(per_move_s=30, bank_s=300).problem() is not None
    assert TimeControl(per_move_s=30, increment_s=5).problem() is not None


def test_a_per_move_clock_starts_afresh_each_turn() -> None:
    clocks = start_clocks(PER_MOVE, 2, [0], set(), T0)
    assert clocks.running_since_ms == [T0, None]
    assert deadline_ms(PER_MOVE, clocks) == T0 + 30_000
    after = run_clocks(PER_MOVE, clocks, moved=0, to_move=[1], unclocked=set(), now_ms=T0 + 12_000)
    assert after.running_since_ms == [None, T0 + 12_000]
    assert after.remaining_ms == [30_000, 30_000]
    assert deadline_ms(PER_MOVE, after) == T0 + 42_000


def test_a_fischer_bank_is_charged_the_move_and_credited_the_increment() -> None:
    clocks = start_clocks(FISCHER, 2, [0], set(), T0)
    after = run_clocks(FISCHER, clocks, moved=0, to_move=[1], unclocked=set(), now_ms=T0 + 20_000)
    assert after.remaining_ms == [300_000 - 20_000 + 5_000, 300_000]
    again = run_clocks(FISCHER, after, moved=1, to_move=[0], unclocked=set(), now_ms=T0 + 21_000)
    assert again.remaining_ms == [285_000, 300_000 - 1_000 + 5_000]
    assert seat_deadlines(FISCHER, again) == {0: T0 + 21_000 + 285_000}


def test_an_extra_turn_restarts_the_movers_clock() -> None:
    clocks = start_clocks(FISCHER, 2, [0], set(), T0)
    after = run_clocks(FISCHER, clocks, moved=0, to_move=[0], unclocked=set(), now_ms=T0 + 10_000)
    assert after.running_since_ms == [T0 + 10_000, None]
    assert after.remaining_ms[0] == 295_000


def test_in_a_simultaneous_phase_the_others_clocks_keep_running() -> None:
    clocks = start_clocks(PER_MOVE, 3, [0, 1, 2], set(), T0)
    after = run_clocks(
        PER_MOVE, clocks, moved=1, to_move=[0, 2], unclocked=set(), now_ms=T0 + 5_000
    )
    assert after.running_since_ms == [T0, None, T0]
    assert deadline_ms(PER_MOVE, after) == T0 + 30_000


def test_bots_run_no_clock() -> None:
    clocks = start_clocks(PER_MOVE, 2, [1], {1}, T0)
    assert clocks.running_since_ms == [None, None]
    assert deadline_ms(PER_MOVE, clocks) is None
    running = start_clocks(PER_MOVE, 2, [0], set(), T0)
    handed = run_clocks(PER_MOVE, running, moved=None, to_move=[0], unclocked={0}, now_ms=T0 + 1)
    assert handed.running_since_ms == [None, None]


def test_the_view_counts_down_from_the_servers_time() -> None:
    clocks = Clocks(remaining_ms=[100_000, 50_000], running_since_ms=[None, T0])
    shown = clock_view(FISCHER, clocks, T0 + 20_000)
    assert shown.on_clock == [1]
    assert shown.remaining_ms == [100_000, 30_000]
    assert shown.deadline_ms == T0 + 50_000
    assert shown.server_time_ms == T0 + 20_000
    late = clock_view(FISCHER, clocks, T0 + 60_000)
    assert late.remaining_ms[1] == 0


def test_a_forfeit_is_won_by_the_others_unless_the_game_is_cooperative() -> None:
    assert forfeit_result(3, [1], "timeout", cooperative=False) == {
        "scores": [0, 0, 0],
        "winners": [0, 2],
        "reason": "forfeit",
        "forfeited": [1],
    }
    abandoned = forfeit_result(2, [0], "abandoned", cooperative=True)
    assert abandoned["winners"] == [] and abandoned["reason"] == "abandoned"


@pytest.fixture(scope="module")
def engine() -> RulesEngine:
    return RulesEngine(load_games())


def _encoded(event: object) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(event))


def _hanabi_log(moves: int) -> list[msgspec.Raw]:
    """A random Hanabi match's first events (set-up and ``moves`` more), as stored."""
    played = played_events(load_games()["hanabi"], 2, random.Random(7))
    return [_encoded(event) for _, (event, _) in zip(range(moves), played, strict=False)]


HOSTING = [
    _encoded(PlayerLeft(seat=1, player="Bob", policy="bot")),
    _encoded(BotTookOver(seat=1, bot="hanabi-heuristic", reason="left")),
    _encoded(
        ClockUpdated(
            moved=None,
            used_ms=None,
            remaining_ms=[1, 2],
            on_clock=[0],
            deadline_ms=5,
            server_time_ms=4,
        )
    ),
]


def test_folds_skip_the_seats_events(engine: RulesEngine) -> None:
    log = _hanabi_log(70)
    mixed = log[:60] + HOSTING + log[60:]
    plain = engine.handle(api.Fold(game="hanabi", events=log))
    folded = engine.handle(api.Fold(game="hanabi", events=mixed))
    assert folded == plain


def test_everyone_sees_the_seats_events_as_recorded(engine: RulesEngine) -> None:
    for seat in (None, 0, 1):
        shown = engine.handle(api.RedactEvents(game="hanabi", events=HOSTING, seat=seat))
        assert [bytes(raw) for raw in shown] == [bytes(raw) for raw in HOSTING]


def test_a_forfeit_ends_the_match_in_folds_and_replays(engine: RulesEngine) -> None:
    log = _hanabi_log(12)
    result = forfeit_result(2, [1], "timeout", cooperative=True)
    forfeited = _encoded(MatchForfeited(seats=[1], reason="timeout", result=result))
    progress = engine.handle(api.Fold(game="hanabi", events=[*log, forfeited]))
    assert progress.result == result and progress.to_move == []
    base = engine.handle(api.Fold(game="hanabi", events=log))
    span = engine.handle(
        api.ReplaySpan(game="hanabi", state=base.state, events=[forfeited], seat=0, full=False)
    )
    assert span[0].result is None and span[0].to_move
    assert span[1].result == result and span[1].to_move == []


def test_exports_leave_the_seats_events_out(engine: RulesEngine) -> None:
    played = played_events(load_games()["hanabi"], 2, random.Random(3))
    log = [_encoded(event) for event, _ in played]
    players = ["Alice", "Bob"]
    plain = engine.handle(api.ExportMatch(game="hanabi", events=log, players=players))
    mixed = log[:30] + HOSTING + log[30:]
    assert engine.handle(api.ExportMatch(game="hanabi", events=mixed, players=players)) == plain


def test_the_ending_a_forfeit_gives_depends_on_the_game(engine: RulesEngine) -> None:
    hanabi = engine.handle(api.EndEarly(game="hanabi", seats=2, forfeited=[0], reason="timeout"))
    dingo = engine.handle(api.EndEarly(game="dingo", seats=3, forfeited=[0], reason="abandoned"))
    assert hanabi["winners"] == [] and dingo["winners"] == [1, 2]
    assert dingo["reason"] == "abandoned"


def test_a_move_after_its_seats_deadline_isout_of_time() -> None:
    from services.match.snapshot import Snapshot
    from services.match.timing import out_of_time
    from shared.domain.hosting import Hosting

    clocks = start_clocks(PER_MOVE, 2, [0], set(), T0)
    snapshot = Snapshot(
        match_id="m",
        table_id=None,
        game="hanabi",
        players=["a", "b"],
        seat_by_token_hash={},
        version=3,
        state=b"",
        to_move=[0],
        status="running",
        result=None,
        hosting=Hosting(clock=PER_MOVE),
        clocks=clocks,
    )
    assert not out_of_time(snapshot, 0, T0 + 30_000)  # on the deadline: still in time
    assert out_of_time(snapshot, 0, T0 + 30_001)
    assert not out_of_time(snapshot, 1, T0 + 60_000)  # not on the clock
    unclocked = dataclasses.replace(snapshot, hosting=Hosting(), clocks=None)
    assert not out_of_time(unclocked, 0, T0 + 10**9)
