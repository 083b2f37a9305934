"""Malformed requests to every lobby and match route while matches are played: each refused
with a 4xx problem document (never a 5xx), and the load's acknowledged moves still verify.
Size from PLAYTABLE_FAULT_BARRAGE (requests, 800), PLAYTABLE_FAULT_MATCHES (20) and
PLAYTABLE_FAULT_THINK_S (0.25)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.faults import checks
from tests.faults.conftest import THINK_S, FaultStack, env_int
from tools import integrity
from tools.hostile.barrage import barrage, summarize_barrage
from tools.hostile.malformed import Known
from tools.traffic import Endpoints, Load, new_session

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

REQUESTS = env_int("PLAYTABLE_FAULT_BARRAGE", 800)
MATCHES = env_int("PLAYTABLE_FAULT_MATCHES", 20)


async def _barrage(stack: FaultStack) -> tuple[dict[str, Any], list[str]]:
    session = new_session(stack.app_key, connections=MATCHES + 10, timeout=15)
    endpoints = Endpoints(stack.lobby_url, stack.match_urls)
    load = Load(session, endpoints, slots=MATCHES, seed=3, think_s=THINK_S)
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    try:
        table_id, match_id, tokens = await load.open_table("hanabi", 2)
        await load.wait_for_match(match_id)
        known = Known(table_id=table_id, match_id=match_id, token=tokens[0])
        began = time.monotonic()
        answers = await barrage(endpoints, known, REQUESTS, concurrency=8, timeout=15)
        ended = time.monotonic()
        stop.set()
        await asyncio.wait_for(asyncio.shield(running), timeout=30)
    finally:
        stop.set()
        if not running.done():
            running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await session.close()
    summary = summarize_barrage(answers)
    summary["load_moves_per_s"] = round(load.moves_between(began, ended) / (ended - began), 1)
    summary["seconds"] = round(ended - began, 1)
    problems = [
        f"{a.request.label}: {a.request.method} {a.request.path[:120]} -> {a.status}"
        f" {a.content_type} {a.body[:200]}"
        for a in answers
        if not a.acceptable
    ]
    logged = await asyncio.to_thread(integrity.check_log, stack.database_url, load)
    problems += logged.problems
    problems += await asyncio.to_thread(checks.check_verify, stack)
    return summary, problems


def test_malformed_requests_get_4xx_problems(make_stack: Callable[..., FaultStack]) -> None:
    stack = make_stack()
    summary, problems = asyncio.run(_barrage(stack))
    checks.report({"barrage": True, **summary, "problems": len(problems)})
    assert not problems, "\n".join(list(dict.fromkeys(problems))[:60])
