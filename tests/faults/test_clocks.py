"""Turn timers under faults: clocks service copies killed with SIGKILL again and again, two of
them at once, and Redis wiped, while many clocked matches run out. Every timeout must fire once
(never twice, never lost), and late by no more than a restart's delay."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.faults.conftest import FaultStack, env_int
from tools import clock_load
from tools.traffic import new_session

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

MATCHES = env_int("PLAYTABLE_FAULT_CLOCKS", 60)
PER_MOVE_S = (2, 6)


def timeouts_through_kills_and_a_wiped_redis(make_stack) -> clock_load.Timeouts:
    """Many clocked matches run out while the clocks' copies are killed again and again and
    Redis is wiped: each timeout fired once, none lost, the log verified."""
    stack: FaultStack = make_stack(match_processes=2)
    for name in ("clocks", "clocks-2"):
        stack.start(name)

    async def scenario() -> clock_load.Timeouts:
        async with new_session(stack.app_key) as session:
            match_ids = await clock_load.open_clocked_matches(
                session, stack.lobby_url, MATCHES, PER_MOVE_S
            )
            began = time.monotonic()
            kills = 0
            while time.monotonic() - began < PER_MOVE_S[1] + 2:
                victim = ("clocks", "clocks-2")[kills % 2]
                stack.kill(victim)
                await asyncio.sleep(0.3)
                stack.start(victim)
                kills += 1
                if kills == 6:
                    client = stack.redis.client()
                    try:
                        client.flushall()
                    finally:
                        client.close()
                await asyncio.sleep(0.4)
            running = await clock_load.wait_all_finished(
                session, stack.match_url(), match_ids, timeout_s=60
            )
            assert not running, f"{len(running)} matches never timed out"
            return await clock_load.collect_timeouts(session, stack.match_url(), match_ids)

    timeouts = asyncio.run(scenario())
    print(timeouts.report())
    assert timeouts.doubled == [] and timeouts.lost == []
    assert len(timeouts.delays_ms) == MATCHES
    verified = stack.verify()
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return timeouts


def test_timeouts_fire_once_through_kills_and_a_wiped_redis(make_stack) -> None:
    timeouts_through_kills_and_a_wiped_redis(make_stack)  # and all fired within the wait


@pytest.mark.speed  # an upper bound on time: left out of the default run
def test_timeouts_fire_late_by_no_more_than_a_restart(make_stack) -> None:
    timeouts = timeouts_through_kills_and_a_wiped_redis(make_stack)
    assert max(timeouts.delays_ms) < 10_000  # a restart, a re-drive: seconds, not minutes
