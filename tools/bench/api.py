"""Benchmarks through the running services: moves per second, their latency and CPU per move
(``bench api``), replays of a finished match (``bench replay``) and resident memory with many
live matches (``bench memory``)."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Any

import msgspec

from shared.edge.apps import API_KEY_HEADER
from shared.infra.settings import Settings
from shared.infra.streams import MATCH_COMMANDS_STREAM
from tools.bench.common import percentiles
from tools.bench.cpu import CpuReading, cpu_per_move_table, server_pids, stack_cpu_seconds
from tools.traffic import (
    long_game_policy,
    new_match,
    ok_json,
    rss_kib,
    service_pids,
    wait_for_match,
)

JSON = {"Content-Type": "application/json"}


async def bench_api(
    settings: Settings,
    lobby: str,
    match: str,
    app_key: str,
    concurrent: int,
    seconds: float,
    warmup: float = 5.0,
) -> int:
    """Moves/s, POST latency and CPU per move of every process with ``concurrent`` matches in
    play, each seat played as a client would: it asks for its legal actions when its turn comes,
    unless the answer to its own move already gave them (it moves again). A trivial GET is timed
    beside, now and then, to show what the server's own queue adds. Only the moves answered in
    the ``seconds`` after ``warmup`` count, and the CPU is read at both ends of that window.

    The client is aiohttp (httpx's connection pool costs quadratic time at this concurrency and
    would measure itself rather than the services).
    """
    import aiohttp

    servers = await server_pids(settings)
    database = settings.database_url.rsplit("/", 1)[-1].split("?")[0]
    latencies: list[float] = []
    health_latencies: list[float] = []
    finished_matches = 0
    measuring = False
    stop_at = time.perf_counter() + warmup + seconds
    # Idle connections are dropped before the servers' keep-alive (5 s) ends them: one reused
    # just as the server closes it fails the request.
    connector = aiohttp.TCPConnector(limit=concurrent + 10, keepalive_timeout=3)
    app = {API_KEY_HEADER: app_key}
    async with aiohttp.ClientSession(connector=connector, headers=app) as session:

        async def player(index: int) -> None:
            nonlocal finished_matches
            rng = random.Random(index)
            while time.perf_counter() < stop_at:
                match_id, tokens = await new_match(session, lobby, 2)
                url = f"{match}/matches/{match_id}"
                info = await wait_for_match(session, url)
                version, to_move = info["version"], info["to_move"]
                actions: list[Any] = []
                while to_move and time.perf_counter() < stop_at:
                    auth = {"Authorization": f"Bearer {tokens[to_move[0]]}"}
                    if not actions:
                        listed = f"{url}/actions?version={version}"
                        async with session.get(listed, headers=auth) as response:
                            actions = (await ok_json(response))["actions"]
                    move = {
                        "game": info["game"],
                        "expected_version": version,
                        "action": long_game_policy(rng, actions),
                    }
                    headers = {**auth, **JSON, "Idempotency-Key": uuid.uuid4().hex}
                    body = msgspec.json.encode(move)
                    began = time.perf_counter()
                    async with session.post(f"{url}/actions", data=body, headers=headers) as r:
                        accepted = await ok_json(r)
                    if measuring:
                        latencies.append(time.perf_counter() - began)
                    version, to_move = accepted["version"], accepted["to_move"]
                    actions = accepted["legal_actions"]
                finished_matches += measuring and not to_move

        async def health_probe() -> None:
            while time.perf_counter() < stop_at:
                began = time.perf_counter()
                async with session.get(f"{match}/health") as response:
                    await ok_json(response)
                if measuring:
                    health_latencies.append(time.perf_counter() - began)
                await asyncio.sleep(0.05)

        async def window() -> tuple[float, CpuReading, CpuReading]:
            nonlocal measuring
            await asyncio.sleep(warmup)
            before = stack_cpu_seconds(servers, database)
            measuring, began = True, time.perf_counter()
            await asyncio.sleep(seconds)
            after = stack_cpu_seconds(servers, database)
            measuring = False
            return time.perf_counter() - began, before, after

        (elapsed, before, after), *_ = await asyncio.gather(
            window(), *(player(i) for i in range(concurrent)), health_probe()
        )
    print(
        f"api: {len(latencies)} moves in {elapsed:.1f} s with {concurrent} concurrent matches "
        f"(after {warmup:.0f} s of warm-up): {len(latencies) / elapsed:,.0f} moves/s, "
        f"POST action {percentiles(latencies)}; {finished_matches} matches finished; "
        f"GET /health on the match server in the same run (20 a second): "
        f"{percentiles(health_latencies)}"
    )
    print(cpu_per_move_table(before, after, len(latencies)))
    return 0


async def bench_replay(lobby: str, match: str, app_key: str, game: str, requests: int) -> int:
    """Serve a finished 2-player match at random versions and at its last, one client.

    The first pass asks every version once in a random order, as a viewer stepping through a
    match would, so it includes the rules calls that fill each snapshot span; the next passes
    measure random versions and the last version, as a spectator or either seat.
    """
    import aiohttp

    rng = random.Random(7)
    async with aiohttp.ClientSession(headers={API_KEY_HEADER: app_key}) as session:
        match_id, tokens = await new_match(session, lobby, 2, game)
        url = f"{match}/matches/{match_id}"
        info = await wait_for_match(session, url)
        while info["to_move"]:
            auth = {"Authorization": f"Bearer {tokens[info['to_move'][0]]}"}
            async with session.get(f"{url}/actions", headers=auth) as response:
                action = rng.choice((await ok_json(response))["actions"])
            move = {"game": game, "expected_version": info["version"], "action": action}
            async with session.post(f"{url}/actions", json=move, headers=auth) as response:
                await ok_json(response)
            async with session.get(url) as response:
                info = await ok_json(response)
        last = info["version"]
        first = 1  # the first version shown is the match once set up
        while True:
            async with session.get(f"{url}/replay", params={"version": first}) as response:
                if response.status == 200:
                    break
            first += 1
        viewers = [{}] + [{"Authorization": f"Bearer {token}"} for token in tokens]

        async def timed(version: int, headers: dict[str, str]) -> float:
            began = time.perf_counter()
            async with session.get(
                f"{url}/replay", params={"version": version}, headers=headers
            ) as r:
                await ok_json(r)
            return time.perf_counter() - began

        versions = list(range(first, last + 1))
        rng.shuffle(versions)
        stepping = [await timed(version, viewers[0]) for version in versions]
        any_version = [
            await timed(rng.randint(first, last), rng.choice(viewers)) for _ in range(requests)
        ]
        last_version = [await timed(last, rng.choice(viewers)) for _ in range(requests)]
    print(
        f"replay of a finished 2-player {game} match, versions {first}-{last}, one client:\n"
        f"  first visit of every version, random order: {percentiles(stepping)}\n"
        f"  random version, random viewer: {percentiles(any_version)}\n"
        f"  last version, random viewer: {percentiles(last_version)}"
    )
    return 0


# --- memory ----------------------------------------------------------------------------------


async def bench_memory(settings: Settings, count: int) -> int:
    """Create ``count`` live matches through the match service's command stream and touch each."""
    import httpx

    from shared.domain.messages import CreateMatch, command
    from shared.infra.bus import redis_client

    pids = service_pids()
    if "match" not in pids:
        raise SystemExit("start the stack first (playtable stack)")
    before = {name: sum(rss_kib(pid) for pid in ids) for name, ids in pids.items()}
    redis = redis_client(settings)
    match_ids = [uuid.uuid4().hex for _ in range(count)]
    stream = settings.stream(MATCH_COMMANDS_STREAM)
    for chunk in range(0, count, 500):
        async with redis.pipeline(transaction=False) as pipe:
            for match_id in match_ids[chunk : chunk + 500]:
                create = CreateMatch(
                    match_id=match_id,
                    table_id="bench",
                    game="hanabi",
                    options={},
                    seats=2,
                    seat_token_hashes=[uuid.uuid4().hex, uuid.uuid4().hex],
                    players=["a", "b"],
                    seed=random.randrange(2**63),
                )
                pipe.xadd(stream, {b"m": msgspec.json.encode(command("CreateMatch", create))})
            await pipe.execute()
    await redis.aclose()
    base = f"http://{settings.host}:{settings.match_port}"
    async with httpx.AsyncClient(timeout=30) as client:
        semaphore = asyncio.Semaphore(32)

        async def touch(match_id: str) -> None:
            async with semaphore:
                for _ in range(600):
                    if (await client.get(f"{base}/matches/{match_id}")).status_code == 200:
                        return
                    await asyncio.sleep(0.1)
                raise RuntimeError(f"match {match_id} never appeared")

        await asyncio.gather(*(touch(match_id) for match_id in match_ids))
    after = {name: sum(rss_kib(pid) for pid in ids) for name, ids in service_pids().items()}
    for name in sorted(after):
        grown = after[name] - before.get(name, 0)
        print(
            f"{name}: resident {after[name] / 1024:.1f} MiB with {count} more live matches "
            f"(+{grown / 1024:.1f} MiB, {grown * 1024 / count / 1000:.1f} KB per match; pids "
            f"{','.join(map(str, pids.get(name, [])))})"
        )
    return 0
