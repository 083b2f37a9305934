"""No backlog outlives a fault at load: tables started and matches played while 1 s clocks run
out, every service restarted in turn; within 10 s of the restart's end, match creation and the
clocks' lateness are back under 2 s at the 99th percentile (both scaled by
``checks.busy_factor()``), no timeout fired twice, every started table has its match, no
acknowledged move is lost, and the log verifies (``tools/backlog.py`` measures)."""

from __future__ import annotations

import asyncio
import signal

import pytest

from tests.faults import checks
from tests.faults.conftest import FaultStack, env_int
from tools import backlog

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

MATCHES = env_int("PLAYTABLE_FAULT_BACKLOG_MATCHES", 20)
CLOCKS_PER_S = 6.0
LIMIT_S = 2.0
RECOVERY_S = 10.0
RESTARTED = ("rules", "match", "lobby", "clocks")


def rolling_restart(stack: FaultStack) -> None:
    """Each service stopped (SIGTERM) and started again, once the one before answers."""
    for name in RESTARTED:
        stack.signal(name, signal.SIGTERM)
        stack.processes[name].wait(timeout=20)
        stack.start(name)
        stack.wait_healthy(name)


def test_creation_and_clocks_catch_up_within_seconds_of_a_rolling_restart(make_stack) -> None:
    stack: FaultStack = make_stack()
    stack.start("clocks")
    busy = checks.busy_factor()
    report = asyncio.run(
        backlog.measure(
            stack.lobby_url,
            stack.match_urls,
            stack.app_key,
            stack.database_url,
            ("rolling-restart", lambda: rolling_restart(stack)),
            slots=MATCHES,
            clocks_per_s=CLOCKS_PER_S,
            warmup_s=3.0,
            after_s=min(RECOVERY_S * busy, 15.0) + 3.0,
            limit_s=LIMIT_S * busy,
        )
    )
    print("\n".join(report.lines()))
    checks.report({"fault": "backlog", "recovered_s": report.recovered_s, "busy": busy})
    assert report.problems == []
    recovered = report.recovered_s
    assert recovered is not None and recovered <= RECOVERY_S * max(busy, checks.busy_factor())
    assert checks.check_verify(stack) == []
