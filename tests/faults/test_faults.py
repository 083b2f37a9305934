"""Faults injected one at a time while matches are played and tables started; afterwards no
acknowledged move is lost or duplicated, the log verifies, every started table has its match,
the published stream is complete from the fault's end on, and play resumes within 5 s.

Sizes from the environment: PLAYTABLE_FAULT_SCALE (multiplies the durations),
PLAYTABLE_FAULT_MATCHES (concurrent matches, 20), PLAYTABLE_FAULT_THINK_S (0.25: each
match's wait after a move), PLAYTABLE_FAULT_WARMUP_S (2),
PLAYTABLE_FAULT_AFTER_S (4: load kept running after the fault's end, and until every match moved),
PLAYTABLE_FAULT_PAUSE_S (10: the rules worker's SIGSTOP).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

import pytest

from tests.faults import checks
from tests.faults.conftest import SCALE, THINK_S, FaultStack, env_float, env_int
from tools import integrity
from tools.traffic import Endpoints, Load, new_session

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

MATCHES = env_int("PLAYTABLE_FAULT_MATCHES", 20)
WARMUP_S = env_float("PLAYTABLE_FAULT_WARMUP_S", 2.0) * SCALE
AFTER_S = env_float("PLAYTABLE_FAULT_AFTER_S", 4.0) * SCALE
PAUSE_S = env_float("PLAYTABLE_FAULT_PAUSE_S", 10.0)
DOWN_S = 1.0
RECOVERY_LIMIT_S = 5.0
"""The promise (docs/reliability.md) on an idle machine; ``checks.busy_factor`` times it on
a busy one, where each process gets only a share of a core."""
RECOVERY_WAIT_S = 60.0
"""How long the load goes on after a fault for every match to move again, before the test
calls it never."""


def _restart(stack: FaultStack, name: str) -> None:
    stack.kill(name)
    time.sleep(DOWN_S)
    stack.start(name)
    stack.wait_healthy(name)


def _flush_redis(stack: FaultStack) -> None:
    client = stack.redis.client()
    try:
        client.flushall()
    finally:
        client.close()


def _restart_redis(stack: FaultStack) -> None:
    stack.redis.kill()
    time.sleep(DOWN_S)
    stack.redis.start()


def _restart_postgres(stack: FaultStack) -> None:
    stack.cluster.stop_immediate()
    time.sleep(DOWN_S)
    stack.cluster.start()


def _pause_rules(stack: FaultStack) -> None:
    stack.signal("rules", signal.SIGSTOP)
    try:
        time.sleep(PAUSE_S)
    finally:
        stack.signal("rules", signal.SIGCONT)


FAULTS: dict[str, tuple[int, Callable[[FaultStack], None]]] = {
    "kill-rules": (1, lambda stack: _restart(stack, "rules")),
    "kill-match": (1, lambda stack: _restart(stack, "match")),
    "kill-lobby": (1, lambda stack: _restart(stack, "lobby")),
    "kill-one-of-two-match": (2, lambda stack: stack.kill("match-2")),
    "redis-flushall": (1, _flush_redis),
    "redis-kill-restart": (1, _restart_redis),
    "postgres-stop-immediate": (1, _restart_postgres),
    "rules-sigstop": (1, _pause_rules),
}


async def under_fault(
    stack: FaultStack,
    fault: str,
    inject: Callable[[FaultStack], None],
    after_s: float = AFTER_S,
) -> checks.FaultReport:
    """Play the load, ``inject`` the fault (in a thread: it may block until the fault's end),
    keep playing for ``after_s`` (and until every match moved), and report what held
    (``tests/faults/test_pauses.py`` injects its own)."""
    session = new_session(stack.app_key, connections=MATCHES + 10)
    endpoints = Endpoints(stack.lobby_url, stack.match_urls)
    load = Load(session, endpoints, slots=MATCHES, seed=7, think_s=THINK_S)
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    tables_recovery: float | None = None
    try:
        await asyncio.sleep(WARMUP_S)
        began = time.monotonic()
        await asyncio.to_thread(inject, stack)
        ended = time.monotonic()
        during = load.moves_between(began, ended)
        versions_at_end = await asyncio.to_thread(integrity.versions_by_match, stack.database_url)
        started_by_end = list(load.tables)
        measuring = asyncio.create_task(
            asyncio.to_thread(
                integrity.wait_started_tables,
                stack.database_url,
                started_by_end,
                ended,
                RECOVERY_WAIT_S,
            )
        )
        busy = checks.busy_factor()
        while load.recovery_s(ended) is None and time.monotonic() < ended + RECOVERY_WAIT_S:
            await asyncio.sleep(0.1)  # until every match has moved since the fault
        await asyncio.sleep(max(0.0, ended + after_s - time.monotonic()))
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(running), timeout=20)
        except TimeoutError:
            running.cancel()
        tables_recovery = await measuring
    finally:
        stop.set()
        if not running.done():
            running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await session.close()

    logged = await asyncio.to_thread(integrity.check_log, stack.database_url, load)
    problems = list(logged.problems)
    problems += await asyncio.to_thread(checks.check_verify, stack)
    stopped = time.monotonic()
    tables = list(load.tables)
    busy = max(busy, checks.busy_factor())
    limit_s = RECOVERY_LIMIT_S * busy
    await asyncio.to_thread(
        integrity.wait_started_tables, stack.database_url, tables, stopped, limit_s
    )
    orphans = await asyncio.to_thread(integrity.tables_without_match, stack.database_url, tables)
    problems += [f"table {table} started, its match missing" for table in orphans]
    problems += await asyncio.to_thread(
        integrity.check_published,
        stack.database_url,
        stack.redis.url,
        stack.prefix,
        versions_at_end,
    )
    moves_recovery = load.recovery_s(ended)
    if moves_recovery is None or moves_recovery > limit_s:
        problems.append(
            f"moves resumed on every match only after {moves_recovery} s"
            f" (limit {limit_s:.1f} s: {RECOVERY_LIMIT_S} s, {busy:.1f} busy)"
        )
    if tables_recovery is None or tables_recovery > limit_s:
        problems.append(
            f"tables started by the fault's end had matches after {tables_recovery}"
            f" (limit {limit_s:.1f} s)"
        )
    problems += [f"unexpected answer: {answer}" for answer in load.unexpected[:20]]
    if not load.acks:
        problems.append("no move was acknowledged")
    return checks.FaultReport(
        fault=fault,
        acknowledged_moves=len(load.acks),
        lost=len(logged.lost),
        duplicated=len(logged.duplicated),
        unacknowledged_commits=len(logged.unacknowledged),
        recovery_moves_s=moves_recovery,
        recovery_tables_s=tables_recovery,
        moves_during_fault=during,
        failed_attempts=dict(load.errors),
        unexpected_answers=len(load.unexpected),
        gave_up=load.gave_up,
        problems=problems,
    )


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault(fault: str, make_stack: Callable[..., FaultStack]) -> None:
    stack = make_stack(match_processes=FAULTS[fault][0])
    result = asyncio.run(under_fault(stack, fault, FAULTS[fault][1]))
    checks.report(result)
    assert not result.problems, "\n".join(result.problems[:40])
