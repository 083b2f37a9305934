"""Who the match service wakes with a change it commits: the bots service only when a bot seat
may move (any of the seats to move, as in a simultaneous phase), the clocks service only while
a clock runs; matches with neither publish nothing beyond their events. And the clocks service
looks again only for a clock that runs out before its next look."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import msgspec

from services.clocks.worker import ClockWatch
from services.match.matches import Matches
from shared.domain import rules_api as api
from shared.domain.messages import BotTurnDue, ClockSet
from shared.infra.settings import Settings

SETTINGS = Settings(stream_prefix="wake")
BOT_TURNS, CLOCKS = "wake:{bot-turns}", "wake:{clocks}"


def wakeups(
    to_move: list[int], bots: dict[int, str], deadline_ms: int | None, *, over: bool = False
) -> list[tuple[str, Any]]:
    matches = Matches(SimpleNamespace(settings=SETTINGS))  # type: ignore[arg-type]
    progress = api.Progress(b"", to_move, {"winner": 0} if over else None)
    decoded = {BOT_TURNS: BotTurnDue, CLOCKS: ClockSet}
    return [
        (topic, msgspec.json.decode(payload, type=decoded[topic]))
        for topic, payload in matches._wakeups("m1", 7, progress, bots, deadline_ms)
    ]


def test_a_match_without_bots_or_clocks_wakes_nobody() -> None:
    assert wakeups([0], {}, None) == []


def test_a_bot_first_to_move_wakes_the_bots() -> None:
    assert wakeups([1], {1: "hanabi-heuristic"}, None) == [(BOT_TURNS, BotTurnDue("m1", 7))]


def test_a_bot_that_may_move_beside_a_person_wakes_the_bots() -> None:
    """Breaking News' vote: seats 0 and 1 vote at once, and the bot of seat 1 need not wait."""
    assert wakeups([0, 1], {1: "breaking_news-heuristic"}, None) == [
        (BOT_TURNS, BotTurnDue("m1", 7))
    ]


def test_bots_not_among_the_seats_to_move_wake_nobody() -> None:
    assert wakeups([0, 2], {1: "breaking_news-heuristic", 3: "breaking_news-heuristic"}, None) == []


def test_a_running_clock_wakes_the_clocks() -> None:
    assert wakeups([0], {}, 123) == [(CLOCKS, ClockSet("m1", 7, 123))]


def test_a_finished_match_wakes_nobody() -> None:
    assert wakeups([1], {1: "hanabi-heuristic"}, 123, over=True) == []


def test_the_watch_looks_again_only_for_a_clock_that_runs_out_before_its_next_look() -> None:
    watch = ClockWatch(None, None, None, SETTINGS)  # type: ignore[arg-type]
    woken = watch._woken
    watch._look_at_ms = 1_000
    watch.clock_set(msgspec.json.encode(ClockSet("m1", 3, 2_000)))
    watch.clock_set(b"{not json")
    assert not woken.is_set()
    watch.clock_set(msgspec.json.encode(ClockSet("m2", 5, 999)))
    assert woken.is_set()
    woken.clear()
    watch._look_at_ms = math.inf  # looking now: whatever is set meanwhile, look again
    watch.clock_set(msgspec.json.encode(ClockSet("m1", 4, 10**13)))
    assert woken.is_set()
