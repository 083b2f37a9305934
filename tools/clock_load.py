"""Live clocks under load: many clocked matches left to run out, and what their timeouts did.

``playtable bench clocks`` measures with it, and the fault suite kills the clocks service under
it: each match is a 2-seat Hanabi table whose clock forfeits it, so every match must end with
exactly one ``TurnTimedOut``, soon after its deadline.
"""

from __future__ import annotations

import asyncio
import random
import statistics
from datetime import datetime

import aiohttp
import msgspec

from tools.traffic import ok_json


class Timeouts(msgspec.Struct):
    """What the clocks did to the matches: each one's firing delay (ms after its deadline),
    the matches that timed out more than once, and those still running."""

    delays_ms: list[float]
    doubled: list[str]
    lost: list[str]

    def report(self) -> str:
        ordered = sorted(self.delays_ms) or [0.0]
        p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
        return (
            f"{len(self.delays_ms)} timeouts fired: delay after the deadline p50"
            f" {statistics.median(ordered):.0f} ms, p99 {p99:.0f} ms, max {ordered[-1]:.0f} ms;"
            f" fired twice: {len(self.doubled)}, lost: {len(self.lost)}"
        )


async def open_clocked_matches(
    session: aiohttp.ClientSession,
    lobby: str,
    count: int,
    per_move_s: tuple[int, int],
    concurrency: int = 16,
) -> list[str]:
    """``count`` started matches whose per-move clock (a whole number of seconds in the range,
    drawn per match) forfeits them."""
    rng = random.Random(count)
    limits = [rng.randint(*per_move_s) for _ in range(count)]
    gate = asyncio.Semaphore(concurrency)

    async def one(limit: int) -> str:
        async with gate:
            table = {
                "game": "hanabi",
                "seats": 2,
                "hosting": {"clock": {"per_move_s": limit}, "on_timeout": "forfeit"},
            }
            created = await ok_json(await session.post(f"{lobby}/tables", json=table))
            table_id = created["table_id"]
            tokens = []
            for seat in range(2):
                joined = await session.post(
                    f"{lobby}/tables/{table_id}/seats", json={"name": f"clock{seat}"}
                )
                tokens.append((await ok_json(joined))["token"])
            auth = {"Authorization": f"Bearer {tokens[0]}"}
            started = await session.post(f"{lobby}/tables/{table_id}/start", headers=auth)
            return (await ok_json(started))["match_id"]

    return list(await asyncio.gather(*(one(limit) for limit in limits)))


async def collect_timeouts(
    session: aiohttp.ClientSession, match: str, match_ids: list[str], concurrency: int = 16
) -> Timeouts:
    """Each match's timeouts from its log (``TurnTimedOut``: its deadline, and when it was
    recorded)."""
    gate = asyncio.Semaphore(concurrency)
    delays: list[float] = []
    doubled: list[str] = []
    lost: list[str] = []

    async def one(match_id: str) -> None:
        async with gate:
            page = await ok_json(
                await session.get(f"{match}/matches/{match_id}/events", params={"limit": "500"})
            )
        fired = [item for item in page["items"] if item["type"] == "TurnTimedOut"]
        if not fired:
            lost.append(match_id)
        if len(fired) > 1:
            doubled.append(match_id)
        for item in fired[:1]:
            recorded = datetime.fromisoformat(item["recorded_at"]).timestamp() * 1000
            delays.append(recorded - item["data"]["deadline_ms"])

    await asyncio.gather(*(one(match_id) for match_id in match_ids))
    return Timeouts(delays, doubled, lost)


async def wait_all_finished(
    session: aiohttp.ClientSession, match: str, match_ids: list[str], timeout_s: float
) -> list[str]:
    """Wait until every match has finished (or ``timeout_s``); the ones still running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    running = list(match_ids)
    while running and loop.time() < deadline:
        still = []
        for match_id in running:
            info = await ok_json(await session.get(f"{match}/matches/{match_id}"))
            if info["status"] != "finished":
                still.append(match_id)
        running = still
        if running:
            await asyncio.sleep(0.5)
    return running
