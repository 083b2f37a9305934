"""Racing writers: 20 clients send a move at the same expected version at the same moment.

(a) different Idempotency-Keys: exactly one 201, every other answer a 409 stale-version;
(b) one key and body (a retry storm): every answer the first's 201, one commit;
Breaking News with the stopwatch, during a story (every seat may act): different seats race,
exactly one 201. With one and with two match processes. Rounds from PLAYTABLE_FAULT_RACE_ROUNDS
(20 per configuration; Breaking News: PLAYTABLE_FAULT_RACE_STORIES, 10).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest

from tests.faults import checks
from tests.faults.conftest import FaultStack, env_int
from tools import integrity
from tools.hostile.racing import RaceResult, race_round, warm_connections
from tools.traffic import TRANSPORT_ERRORS, Ack, Endpoints, GaveUp, Load, new_session

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

ROUNDS = env_int("PLAYTABLE_FAULT_RACE_ROUNDS", 20)
STORIES = env_int("PLAYTABLE_FAULT_RACE_STORIES", 10)
CLIENTS = 20


def _round_problems(result: RaceResult, mode: str) -> list[str]:
    if mode == "same-key":
        first = (result.statuses[0], result.bodies[0])
        if result.statuses[0] != 201 or any(
            (status, body) != first
            for status, body in zip(result.statuses, result.bodies, strict=True)
        ):
            return [f"v{result.version}: answers differ: {sorted(set(result.statuses))}"]
        return []
    problems = []
    if result.created != 1:
        problems.append(f"v{result.version}: {result.created} answers 201")
    others = [t for t in result.problem_types() if t != "stale-version"]
    if others:
        problems.append(f"v{result.version}: losers answered {sorted(set(others))}")
    return problems


def _record(load: Load, match_id: str, result: RaceResult) -> None:
    """The winners as acknowledged moves (one per distinct body), for the log checks."""
    seen: list[Any] = []
    for status, body in zip(result.statuses, result.bodies, strict=True):
        if status == 201 and body not in seen:
            seen.append(body)
            types = tuple(str(event.get("type")) for event in body["events"])
            key = f"race-{match_id}-{result.version}-{len(seen)}"
            load.acks.append(Ack(match_id, key, result.version, body["version"], types, 0.0, 0))


def _commits(result: RaceResult) -> int:
    """Distinct accepted bodies: each a commit (one key answers its one commit each time)."""
    bodies: list[Any] = []
    for status, body in zip(result.statuses, result.bodies, strict=True):
        if status == 201 and body not in bodies:
            bodies.append(body)
    return len(bodies)


async def _story(load: Load, match_id: str, tokens: list[str], rng: random.Random) -> bool:
    """Play Breaking News until a story runs (every seat may act: the teller tells, the others
    may report silence); False if it ended."""
    for _ in range(400):
        info = (await load.send("match", "GET", f"/matches/{match_id}")).json()
        if info["status"] != "running":
            return False
        if info["view"]["phase"] == "story":
            return True
        if await load.move(0, match_id, tokens, rng) is None:
            return False
    return False


async def _race(stack: FaultStack, mode: str) -> dict[str, Any]:
    session = new_session(stack.app_key, connections=CLIENTS * 2 + 10)
    load = Load(session, Endpoints(stack.lobby_url, stack.match_urls), slots=1, give_up_s=30)
    rng = random.Random(11)
    game, players, options, rounds = ("hanabi", 2, {}, ROUNDS)
    if mode == "breaking-news-seats":
        game, players, options, rounds = ("breaking_news", 3, {"stopwatch": True}, STORIES)
    results: list[RaceResult] = []
    problems: list[str] = []
    match_id: str | None = None
    tokens: list[str] = []
    try:
        await warm_connections(session, stack.match_urls, CLIENTS)
        while len(results) < rounds:
            if match_id is None:
                _, match_id, tokens = await load.open_table(game, players, options)
                await load.wait_for_match(match_id)
            seats = None
            if mode == "breaking-news-seats":
                if not await _story(load, match_id, tokens, rng):
                    match_id = None
                    continue
                seats = list(range(players))  # the teller, and listeners reporting silence
            result = await race_round(
                session,
                stack.match_urls,
                match_id,
                tokens,
                rng,
                clients=CLIENTS,
                same_key=mode == "same-key",
                seats=seats,
            )
            if result is None:
                match_id = None
                continue
            results.append(result)
            _record(load, match_id, result)
            problems += _round_problems(result, mode)
        # the next move at the new version succeeds
        if match_id is not None:
            before = len(load.acks)
            if await load.move(0, match_id, tokens, rng) is not None and len(load.acks) == before:
                problems.append(f"match {match_id}: the move after the races failed")
    except (GaveUp, *TRANSPORT_ERRORS) as error:
        problems.append(f"client: {error!r}")
    finally:
        await session.close()
    logged = await asyncio.to_thread(integrity.check_log, stack.database_url, load)
    problems += logged.problems
    problems += await asyncio.to_thread(checks.check_verify, stack)
    problems += [f"unexpected answer: {answer}" for answer in load.unexpected[:10]]
    return {
        "racing": mode,
        "match_processes": len(stack.match_urls),
        "rounds": len(results),
        "rounds_with_several_201": sum(1 for r in results if r.created > 1 and r.keys > 1),
        "rounds_with_several_commits": sum(1 for r in results if _commits(r) > 1),
        "rounds_with_no_201": sum(1 for r in results if r.created == 0),
        "max_201_in_a_round": max((r.created for r in results), default=0),
        "problems": problems,
    }


CONFIGURATIONS = [
    ("different-keys", 1),
    ("different-keys", 2),
    ("same-key", 1),
    ("same-key", 2),
    ("breaking-news-seats", 1),
]


@pytest.mark.parametrize(("mode", "match_processes"), CONFIGURATIONS)
def test_racing_writers(
    mode: str, match_processes: int, make_stack: Callable[..., FaultStack]
) -> None:
    stack = make_stack(match_processes=match_processes)
    summary = asyncio.run(_race(stack, mode))
    checks.report({**summary, "problems": summary["problems"][:20]})
    assert summary["rounds"] > 0
    assert not summary["problems"], "\n".join(summary["problems"][:40])
