"""Benchmarks of clients that misbehave beside a normal load: racing moves at one version
(``bench race``), malformed requests (``bench malformed``), both the fault suite's traffic
(``tools/hostile/``), and one client flooding the lobby (``bench flood``, the rate limits of
``shared/edge/ratelimit.py``)."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid

from tools.bench.common import percentiles
from tools.traffic import Endpoints, Load, new_session


async def bench_race(
    lobby: str, matches: list[str], app_key: str, rounds: int, clients: int
) -> int:
    """Rounds of ``clients`` moves at one expected version, each under its own key: exactly
    one may be accepted; prints the rounds that accepted more than one."""
    from tools.hostile import racing

    session = new_session(app_key, connections=clients * len(matches) + 10)
    load = Load(session, Endpoints(lobby, matches), slots=1)
    rng = random.Random(1)
    results: list[racing.RaceResult] = []
    match_id: str | None = None
    tokens: list[str] = []
    began = time.perf_counter()
    try:
        await racing.warm_connections(session, matches, clients)
        while len(results) < rounds:
            if match_id is None:
                _, match_id, tokens = await load.open_table("hanabi", 2)
                await load.wait_for_match(match_id)
            result = await racing.race_round(
                session, matches, match_id, tokens, rng, clients=clients
            )
            if result is None:
                match_id = None
                continue
            results.append(result)
            if result.created > 1:
                print(f"match {match_id} v{result.version}: {result.created} answers 201")
    finally:
        await session.close()
    several = sum(1 for result in results if result.created > 1)
    none = sum(1 for result in results if result.created == 0)
    print(
        f"race: {len(results)} rounds of {clients} clients over {len(matches)} match"
        f" process(es) in {time.perf_counter() - began:.1f} s: {several} rounds with more than"
        f" one 201, {none} with none"
    )
    return 1 if several else 0


async def bench_malformed(
    lobby: str, matches: list[str], app_key: str, requests: int, concurrent: int
) -> int:
    """The malformed-request barrage while ``concurrent`` matches play: 5xx answers, answers
    that are not 4xx problems, and the load's moves/s meanwhile."""
    from tools.hostile import barrage, malformed

    endpoints = Endpoints(lobby, matches)
    session = new_session(app_key, connections=concurrent + 10)
    load = Load(session, endpoints, slots=concurrent)
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    try:
        table_id, match_id, tokens = await load.open_table("hanabi", 2)
        await load.wait_for_match(match_id)
        await asyncio.sleep(1.0)
        quiet_began = time.monotonic()
        await asyncio.sleep(5.0)  # the load alone, to compare with
        began = time.monotonic()
        known = malformed.Known(table_id, match_id, tokens[0])
        answers = await barrage.barrage(endpoints, known, requests)
        ended = time.monotonic()
    finally:
        stop.set()
        await asyncio.gather(running, return_exceptions=True)
        await session.close()
    summary = barrage.summarize_barrage(answers)
    quiet = load.moves_between(quiet_began, began) / (began - quiet_began)
    during = load.moves_between(began, ended) / (ended - began)
    print(
        f"malformed: {len(answers)} requests in {ended - began:.1f} s"
        f" ({len(answers) / (ended - began):,.0f}/s) beside {concurrent} matches:"
        f" {summary['5xx']} answered 5xx, {summary['not_4xx_problem']} not a 4xx problem;"
        f" the load made {during:,.1f} moves/s meanwhile, {quiet:,.1f} moves/s alone before"
    )
    print(json.dumps(summary))
    return 1 if summary["5xx"] else 0


# --- flood (rate limits, shared/edge/ratelimit.py) ------------------------------------------------


async def bench_flood(
    lobby: str,
    path: str,
    seconds: float,
    connections: int,
    rate: float,
    flood_from: str,
    normal_from: str,
) -> int:
    """A client floods ``path`` from ``connections`` connections as fast as it can, with an
    ``X-API-Key`` of its own and from its own source address, while a normal client sends
    ``rate`` requests a second from another: what the flooder got, and whether the normal
    client noticed (its latency, any 429). Exit 1 if the normal client was refused."""
    from collections import Counter

    import aiohttp

    def client(source: str, limit: int) -> aiohttp.ClientSession:
        local_addr = (source, 0) if source else None
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, local_addr=local_addr)
        )

    url = f"{lobby}{path}"
    flooder = {"X-API-Key": f"bench-flood-{uuid.uuid4().hex}"}
    flooded: Counter[int] = Counter()
    answered: Counter[int] = Counter()
    latencies: list[float] = []
    stop_at = time.perf_counter() + seconds
    async with client(flood_from, connections) as flooding, client(normal_from, 2) as normal:

        async def flood() -> None:
            while time.perf_counter() < stop_at:
                async with flooding.get(url, headers=flooder) as response:
                    await response.read()
                    flooded[response.status] += 1

        async def steady() -> None:
            due = time.perf_counter()
            while due < stop_at:
                began = time.perf_counter()
                async with normal.get(url) as response:
                    await response.read()
                    answered[response.status] += 1
                latencies.append(time.perf_counter() - began)
                due += 1 / rate
                await asyncio.sleep(max(0.0, due - time.perf_counter()))

        began = time.perf_counter()
        await asyncio.gather(*(flood() for _ in range(connections)), steady())
        elapsed = time.perf_counter() - began
    sent = sum(flooded.values())
    others = {status: count for status, count in sorted(flooded.items()) if status != 429}
    print(
        f"flood: GET {path} for {elapsed:.1f} s. Flooder ({connections} connections from"
        f" {flood_from or 'any address'}, own X-API-Key): {sent} requests"
        f" ({sent / elapsed:,.0f}/s), {flooded[429]} answered 429, others {others}."
        f" Normal client ({rate:g}/s from"
        f" {normal_from or 'any address'}): {percentiles(latencies)}, {answered[429]} answered"
        f" 429, by status {dict(sorted(answered.items()))}"
    )
    return 1 if answered[429] else 0
