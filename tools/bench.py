"""``playtable bench``: engine playouts, moves through the running services, memory per match,
webhooks, racing moves and malformed requests."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import random
import statistics
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from services.operator.keys import client_key
from shared.edge.apps import API_KEY_HEADER
from shared.infra.settings import Settings, stream_key
from shared.infra.streams import MATCH_COMMANDS_STREAM, MATCH_EVENTS_STREAM
from tools.traffic import (
    CLI_MODULE,
    Endpoints,
    Load,
    fetch,
    long_game_policy,
    new_match,
    new_session,
    ok_json,
    rss_kib,
    service_pids,
    wait_for_match,
)

JSON = {"Content-Type": "application/json"}
DEFAULT_PLAYERS = {"hanabi": 2, "carcassonne": 2, "dingo": 3, "breaking_news": 3}


def run(args: argparse.Namespace, settings: Settings) -> int:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    if args.bench == "engine":
        return bench_engine(args.game, args.players, args.games, args.seed)
    if args.bench == "bots":
        return bench_bots(args.game, args.matches)
    if args.bench == "bot-service":
        matches = {game: getattr(args, game) for game in DEFAULT_PLAYERS}
        return asyncio.run(bench_bot_service(settings, args.bots, matches))
    if args.bench == "api":
        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        match = args.match or f"http://{settings.host}:{settings.match_port}"
        app_key = asyncio.run(client_key(settings))
        return asyncio.run(
            bench_api(settings, lobby, match, app_key, args.matches, args.seconds, args.warmup)
        )
    if args.bench == "replay":
        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        match = args.match or f"http://{settings.host}:{settings.match_port}"
        app_key = asyncio.run(client_key(settings))
        return asyncio.run(bench_replay(lobby, match, app_key, args.game, args.requests))
    if args.bench == "memory":
        return asyncio.run(bench_memory(settings, args.matches))
    if args.bench == "feeds":
        from tools.feed_memory import run_feeds

        return run_feeds(args, settings)
    if args.bench == "webhooks":
        return asyncio.run(
            bench_webhooks(
                settings, args.subscriptions, args.events, args.rate, args.workers, args.outage
            )
        )
    if args.bench in ("race", "malformed"):
        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        matches = args.match or [f"http://{settings.host}:{settings.match_port}"]
        app_key = asyncio.run(client_key(settings))
        if args.bench == "race":
            return asyncio.run(bench_race(lobby, matches, app_key, args.rounds, args.clients))
        return asyncio.run(bench_malformed(lobby, matches, app_key, args.requests, args.matches))
    if args.bench == "clocks":
        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        match = args.match or f"http://{settings.host}:{settings.match_port}"
        app_key = asyncio.run(client_key(settings))
        return asyncio.run(bench_clocks(lobby, match, app_key, args.clocks, args.per_move))
    if args.bench == "flood":
        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        return asyncio.run(
            bench_flood(
                lobby,
                args.path,
                args.seconds,
                args.connections,
                args.rate,
                args.flood_from,
                args.normal_from,
            )
        )
    raise SystemExit(f"unknown benchmark {args.bench}")


# --- engine ----------------------------------------------------------------------------------


def bench_engine(game_name: str, players: int | None, games: int, seed: int) -> int:
    """Random games on one core, a uniform choice among the legal actions at every step."""
    from services.rules.games.playout import random_playout
    from services.rules.games.registry import GAMES

    game = GAMES[game_name]
    seats = players or DEFAULT_PLAYERS.get(game_name, game.min_players)
    rng = random.Random(seed)
    moves = 0
    started = time.perf_counter()
    for _ in range(games):
        moves += random_playout(game, seats, rng)[2]
    elapsed = time.perf_counter() - started
    print(
        f"{game_name}: {games} random {seats}-player games in {elapsed:.2f} s on one core: "
        f"{games / elapsed:,.0f} games/s, {moves / elapsed:,.0f} moves/s "
        f"({moves / games:.1f} moves per game)"
    )
    if game_name == "carcassonne":
        _carcassonne_legal_moves(game)
    return 0


def _carcassonne_legal_moves(game: Any, boards: int = 20, repeats: int = 200) -> None:
    """All legal moves (placements with follower spots) of the drawn tile on 60-tile boards:
    the first call on each board, and the median of repeated calls (warm caches)."""
    from services.rules.games.playout import play_until

    first: list[float] = []
    repeated: list[float] = []
    for seed in range(boards):
        state = play_until(game, 2, random.Random(seed), lambda s: len(s.codes) >= 60)
        seat = game.to_move(state)[0]
        began = time.perf_counter()
        game.legal_actions(state, seat)
        first.append(time.perf_counter() - began)
        for _ in range(repeats):
            began = time.perf_counter()
            game.legal_actions(state, seat)
            repeated.append(time.perf_counter() - began)
    print(
        f"carcassonne legal moves of one tile on a 60-tile board ({boards} boards): first call "
        f"median {statistics.median(first) * 1e3:.3f} ms, max {max(first) * 1e3:.3f} ms; "
        f"repeated calls median {statistics.median(repeated) * 1e3:.3f} ms"
    )


# --- api -------------------------------------------------------------------------------------


CpuReading = dict[tuple[int, int], tuple[str, float]]
"""CPU seconds so far of each counted process, by (pid, start time), with what it is."""


async def server_pids(settings: Settings) -> dict[int, str]:
    """The Postgres postmaster and the Redis server the stack uses (other servers on this
    machine, a benchmark peer's say, are not the stack's)."""
    import psycopg
    import redis.asyncio as redis_async

    async with await psycopg.AsyncConnection.connect(settings.database_url) as conn:
        backend = (await (await conn.execute("select pg_backend_pid()")).fetchone() or (0,))[0]
    postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    redis = redis_async.Redis.from_url(settings.redis_url)
    try:
        redis_pid = int((await redis.info("server"))["process_id"])
    finally:
        await redis.aclose()
    return {postmaster: "postgres", redis_pid: "redis"}


def stack_cpu_seconds(servers: dict[int, str], database: str) -> CpuReading:
    """CPU time so far of every process of the stack: each ``playtable <service>`` process with
    its children (Celery's pool; only those under a ``playtable stack``, if one runs, so that
    other copies on the machine, a test's, are left out), the ``servers`` with their processes
    (of Postgres, the background ones and the backends of ``database`` only), nginx, and this
    process (the load). Each process's own time and its ended children's."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    reading: dict[int, tuple[int, float]] = {}
    kind: dict[int, str] = {}
    excluded: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        pid = int(stat.parent.name)
        try:
            text = stat.read_text()
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        parent[pid] = int(fields[1])
        reading[pid] = int(fields[19]), sum(int(field) for field in fields[11:15]) / ticks
        title = argv[0].decode(errors="replace").split()
        if pid == os.getpid():
            kind[pid] = "load (bench client)"
        elif pid in servers:
            kind[pid] = servers[pid]
        elif CLI_MODULE in argv[:-1]:
            kind[pid] = argv[argv.index(CLI_MODULE) + 1].decode()
        elif name.startswith("nginx"):
            kind[pid] = "nginx"
        elif name.startswith("postgres") and backend_database(title) not in (None, database):
            excluded.add(pid)  # a backend of another database: not the stack's
    stacks = {pid for pid, what in kind.items() if what == "stack"}

    def counted_as(pid: int) -> str | None:
        ancestor, what = pid, None
        while ancestor in parent and ancestor > 1:
            if ancestor in excluded:
                return None
            if what is None and ancestor in kind:
                what = kind[ancestor]
            if ancestor in stacks or ancestor in servers:
                return what
            ancestor = parent[ancestor]
        if what is None or (stacks and what not in ("nginx", "load (bench client)")):
            return None  # a service outside the running stack
        return what

    counted: CpuReading = {}
    for pid, (started, spent) in reading.items():
        what = counted_as(pid)
        if what is not None:
            counted[pid, started] = what, spent
    return counted


def backend_database(title: list[str]) -> str | None:
    """The database of a Postgres backend from its process title (``postgres: [cluster:] user
    database address activity``), None for a background process."""
    for at, word in enumerate(title):
        if at >= 2 and ("(" in word or word == "[local]"):
            return title[at - 1]
    return None


def cpu_per_move_table(before: CpuReading, after: CpuReading, moves: int) -> str:
    """CPU ms per move of each kind of process between two ``stack_cpu_seconds`` readings,
    with the stack's total (every process but the load's). A process that ended in between
    is not counted (its time is lost); one that started counts from nothing."""
    spent: dict[str, float] = {}
    for process, (what, seconds) in after.items():
        earlier = before.get(process, (what, 0.0))[1]
        spent[what] = spent.get(what, 0.0) + seconds - earlier
    stack = sum(value for name, value in spent.items() if not name.startswith("load"))
    rows = sorted(spent.items(), key=lambda item: -item[1])
    cells = ", ".join(f"{name} {1000 * value / max(moves, 1):.3f}" for name, value in rows)
    return f"CPU ms per move: stack total {1000 * stack / max(moves, 1):.2f} ({cells})"


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
        f"POST action {_percentiles(latencies)}; {finished_matches} matches finished; "
        f"GET /health on the match server in the same run (20 a second): "
        f"{_percentiles(health_latencies)}"
    )
    print(cpu_per_move_table(before, after, len(latencies)))
    return 0


# --- replay ----------------------------------------------------------------------------------


def _percentiles(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000
    return f"p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(ordered)} requests)"


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
        f"  first visit of every version, random order: {_percentiles(stepping)}\n"
        f"  random version, random viewer: {_percentiles(any_version)}\n"
        f"  last version, random viewer: {_percentiles(last_version)}"
    )
    return 0


# --- memory ----------------------------------------------------------------------------------


async def bench_memory(settings: Settings, count: int) -> int:
    """Create ``count`` live matches through the match service's command stream and touch each."""
    import httpx
    import msgspec
    import redis.asyncio as redis_async

    from shared.domain.messages import CreateMatch, command

    pids = service_pids()
    if "match" not in pids:
        raise SystemExit("start the stack first (playtable stack)")
    before = {name: sum(rss_kib(pid) for pid in ids) for name, ids in pids.items()}
    redis = redis_async.Redis.from_url(settings.redis_url)
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


# --- bots ------------------------------------------------------------------------------------

BOT_TABLES = {
    "hanabi": [2, 3, 4, 5],
    "carcassonne": [2],
    "dingo": [3, 2, 4],
    "breaking_news": [3, 2, 4],
}
"""Per game, the player counts measured (the bot's figures the issue asks for first)."""


def bench_bots(only: str | None, matches: int) -> int:
    """Each game's heuristic bot over ``matches`` seeded matches per player count, on every
    core: Hanabi's self-play scores (a cooperative game) beside the random bot's, for the
    others its win share against random bots in every other seat (its seat rotating)."""
    from concurrent.futures import ProcessPoolExecutor

    from services.bots.arena import seat_rotation, self_play
    from services.bots.policies.registry import POLICIES

    policies = POLICIES
    chunks = [range(start, min(start + 50, matches)) for start in range(0, matches, 50)]
    with ProcessPoolExecutor() as pool:
        for name in [only] if only else list(BOT_TABLES):
            heuristic, random_bot = f"{name}-heuristic", f"{name}-random"
            if heuristic not in policies:
                print(f"{name}: no heuristic bot yet")
                continue
            for players in BOT_TABLES[name]:
                began = time.perf_counter()
                if name == "hanabi":
                    scores = {
                        bot: [
                            score
                            for part in pool.map(
                                self_play, [(name, bot, players, seeds) for seeds in chunks]
                            )
                            for score in part
                        ]
                        for bot in (heuristic, random_bot)
                    }
                    mine = scores[heuristic]
                    line = (
                        f"heuristic self-play mean {statistics.mean(mine):.2f}, median"
                        f" {statistics.median(mine)}, min {min(mine)}, max {max(mine)}"
                        f" ({sum(s == 25 for s in mine) / matches:.1%} perfect);"
                        f" random mean {statistics.mean(scores[random_bot]):.2f}"
                    )
                else:
                    jobs = [(name, heuristic, random_bot, players, seeds) for seeds in chunks]
                    parts = list(pool.map(seat_rotation, jobs))
                    wins = sum(p.wins * p.matches for p in parts) / matches
                    mean = sum(p.mean_score * p.matches for p in parts) / matches
                    others = sum(p.mean_others * p.matches for p in parts) / matches
                    line = (
                        f"heuristic against random wins {wins:.1%} (fair share"
                        f" {1 / players:.0%}), mean score {mean:.1f} against {others:.1f}"
                    )
                took = (time.perf_counter() - began) / matches
                print(f"{name}, {players} players, {matches} matches: {line} ({took:.3f} s each)")
    return 0


# --- the bots service ----------------------------------------------------------------------


async def bench_bot_service(settings: Settings, bots: int, matches: dict[str, int]) -> int:
    """Matches of bots only (``matches`` per game, its usual players, each seat its heuristic
    bot) played by ``bots`` bots processes through a rules worker, a match service and a lobby
    of their own, on a database and stream prefix of their own: bot moves per second (moves
    over the time from the first table's creation to the last match's end), and each turn's
    latency, from the event before it to the move as the match log records them (both are
    commit times); with the bots' turns by outcome and the CPU time each kind of process spent
    per move."""
    import msgspec

    from services.operator.keys import fresh_key
    from tools.copies import (
        LOOPBACK,
        Copies,
        drop_database,
        forget_streams,
        free_port,
        scratch,
    )

    database_url, prefix, env, directory = await scratch(settings, "bench-bots")
    stack = Copies(env, 1, directory)  # it starts each process with ``env`` as it is then
    match_url = env["PLAYTABLE_MATCH_URL"] = f"http://{LOOPBACK}:{stack.ports['match'][0]}"
    lobby = f"http://{LOOPBACK}:{stack.ports['lobby'][0]}"
    app_key = await fresh_key(
        msgspec.structs.replace(settings, database_url=database_url), "bench", "bench bot-service"
    )
    metrics_ports = [free_port() for _ in range(bots)]
    try:
        for service in ("rules", "match", "lobby"):
            stack.start(service, 0)
        for copy, port in enumerate(metrics_ports):
            env["PLAYTABLE_METRICS_PORT"] = str(port)
            stack.start("bots", copy)
        for service in ("match", "lobby"):
            await asyncio.to_thread(stack.wait_healthy, service, 0)
        cpu_before = stack.cpu_seconds()
        started = time.time()
        async with new_session(app_key, connections=16) as session:
            games = await _open_bot_tables(session, lobby, matches)
            running = await asyncio.to_thread(_wait_finished, database_url, list(games))
            cpu_used = stack.cpu_seconds()
            outcomes = await _bot_outcomes(
                session, [f"http://{LOOPBACK}:{port}" for port in metrics_ports]
            )
            logs = await asyncio.gather(*(_match_log(session, match_url, match) for match in games))
    finally:
        await asyncio.to_thread(stack.stop_all)
        await asyncio.to_thread(drop_database, database_url)
        await forget_streams(settings.redis_url, prefix)
    report = _BotRun(started)
    for game, events in zip(games.values(), logs, strict=True):
        report.add(game, events)
    moves = sum(len(turns) for turns in report.turns.values())
    cpu = ", ".join(  # of our processes (Postgres and Redis may serve others meanwhile)
        f"{name} {(cpu_used[name] - cpu_before.get(name, 0.0)) * 1000 / moves:.2f}"
        for name in sorted({name for name, _ in stack.processes})
    )
    print(
        f"bot-service: {bots} bots process(es), {len(games)} matches of bots only:"
        f" {moves:,} bot moves in {report.elapsed_s():.1f} s: {moves / report.elapsed_s():,.0f}"
        f" moves/s; turn latency {report.latency()}\n"
        + "".join(f"  {line}\n" for line in report.per_game())
        + f"  bot turns by outcome: {dict(sorted(outcomes.items()))}\n"
        + f"  CPU ms per move: {cpu}\n  logs in {directory}"
        + (f"\n  {len(running)} matches did not finish" if running else "")
    )
    return 1 if running else 0


async def _open_bot_tables(session: Any, lobby: str, matches: dict[str, int]) -> dict[str, str]:
    """Tables of the game's heuristic bot in every seat, which start at once: each match's
    game, by match id."""
    games: dict[str, str] = {}
    opening = asyncio.Semaphore(16)

    async def open_table(game: str) -> None:
        players = DEFAULT_PLAYERS[game]
        body = {"game": game, "seats": players, "bots": [{"bot": f"{game}-heuristic"}] * players}
        async with opening:
            reply = await fetch(
                session,
                "POST",
                f"{lobby}/tables",
                body=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
        if reply.status != 201:
            raise RuntimeError(f"table refused: {reply.status} {reply.text}")
        games[reply.json()["match_id"]] = game

    await asyncio.gather(
        *(open_table(game) for game, count in matches.items() for _ in range(count))
    )
    return games


async def _bot_outcomes(session: Any, urls: list[str]) -> dict[str, float]:
    """Every bots process's turns by outcome, from its ``/metrics``."""
    outcomes: dict[str, float] = {}
    for url in urls:
        for outcome, count in bot_outcomes((await fetch(session, "GET", f"{url}/metrics")).text):
            outcomes[outcome] = outcomes.get(outcome, 0.0) + count
    return outcomes


def bot_outcomes(metrics_text: str) -> list[tuple[str, float]]:
    """A bots process's turns by outcome (``playtable_bot_moves``, all games), from the text
    of its ``/metrics``."""
    from prometheus_client.parser import text_string_to_metric_families

    return [
        (sample.labels["outcome"], sample.value)
        for family in text_string_to_metric_families(metrics_text)
        for sample in family.samples
        if sample.name == "playtable_bot_moves_total"
    ]


def _wait_finished(database_url: str, match_ids: list[str], timeout_s: float = 1800.0) -> set[str]:
    """The matches still running (or not yet created) once all have finished or time is up."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    with psycopg.connect(database_url, autocommit=True) as conn:
        while True:
            rows = conn.execute(
                "select match_id from matches where match_id = any(%s) and status = 'finished'",
                (match_ids,),
            ).fetchall()
            running = set(match_ids) - {row[0] for row in rows}
            if not running or time.monotonic() > deadline:
                return running
            time.sleep(0.2)


async def _match_log(session: Any, match_url: str, match_id: str) -> list[dict[str, Any]]:
    """Every event of the match as a spectator reads it, a page at a time."""
    events: list[dict[str, Any]] = []
    after: int | None = 0
    while after is not None:
        url = f"{match_url}/matches/{match_id}/events?after={after}&limit=500"
        page = (await fetch(session, "GET", url)).json()
        events += page["items"]
        after = page["next_after"]
    return events


class _BotRun:
    """Each game's bot turns, read from the match logs: (when moved, how long after the event
    before it), in seconds since the run started."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.turns: dict[str, list[tuple[float, float]]] = {}

    def add(self, game: str, events: list[dict[str, Any]]) -> None:
        """A move is the events one seat's move recorded: the same seat, the same commit."""
        turns = self.turns.setdefault(game, [])
        before = None
        for (seat, recorded_at), _ in itertools.groupby(
            events, lambda event: (event["seat"], event["recorded_at"])
        ):
            moment = datetime.fromisoformat(recorded_at).timestamp()
            if seat is not None and before is not None:
                turns.append((moment - self.started, moment - before))
            before = moment

    def elapsed_s(self, game: str | None = None) -> float:
        games = [game] if game else list(self.turns)
        return max(moved for name in games for moved, _ in self.turns[name])

    def latency(self, game: str | None = None) -> str:
        games = [game] if game else list(self.turns)
        waits = [wait for name in games for _, wait in self.turns[name]]
        cuts = statistics.quantiles(waits, n=100)
        return f"p50 {cuts[49] * 1000:.1f} ms, p99 {cuts[98] * 1000:.1f} ms"

    def per_game(self) -> list[str]:
        return [
            f"{game}: {len(turns):,} moves, {len(turns) / self.elapsed_s(game):,.0f} moves/s"
            f" until its last match ended ({self.elapsed_s(game):.1f} s); turn latency"
            f" {self.latency(game)}"
            for game, turns in self.turns.items()
        ]


# --- webhooks --------------------------------------------------------------------------------

BENCH_EVENT = "WebhookBenchPinged"


async def bench_webhooks(
    settings: Settings,
    subscriptions: int,
    events: int,
    rate: float,
    workers: int,
    outage_s: float = 0.0,
) -> int:
    """Publish ``events`` match events (``rate`` per second, over ten match streams) to
    ``subscriptions`` subscribers at a local receiver, through our own ``playtable webhooks``
    processes; measure deliveries per second and the delay from each event's commit time
    (``occurred_at_ms``) to its receipt.

    With ``outage_s``, half the subscribers' receiver answers 503 for that long from the
    first event: then how long its backlog took to arrive once it was back, whether each
    stream came in order, and the other half's delays meanwhile."""
    import subprocess
    import sys

    import msgspec
    import redis.asyncio as redis_async
    from aiohttp import web

    from shared.domain.messages import EventEnvelope, metadata
    from shared.infra.db import open_pool

    run_id = uuid.uuid4().hex[:8]
    expected = subscriptions * events
    delays_ms: list[float] = []
    done = asyncio.Event()
    first_receipt = last_receipt = 0.0
    back_at = float("inf")  # set when publishing starts
    down_names = {f"bench-{run_id}-{n}" for n in range(subscriptions // 2)} if outage_s else set()
    refused = 0
    received: dict[str, list[tuple[str, int]]] = {}
    """Each subscriber's receipts in order: (stream, version)."""
    healthy_delays_ms: list[float] = []
    drained_at = 0.0
    """When the last delivery to a subscriber that was down arrived."""

    async def receive(request: web.Request) -> web.Response:
        nonlocal first_receipt, last_receipt, refused, drained_at
        name = request.match_info["name"]
        body = await request.read()
        now = time.time()
        if name in down_names and now < back_at:
            refused += 1
            return web.Response(status=503)
        webhook = msgspec.json.decode(body)
        received.setdefault(name, []).append((webhook["stream_id"], webhook["version"]))
        delay_ms = (now - webhook["data"]["sent_at"]) * 1000
        delays_ms.append(delay_ms)
        if name in down_names:
            drained_at = now
        else:
            healthy_delays_ms.append(delay_ms)
        first_receipt = first_receipt or now
        last_receipt = now
        if len(delays_ms) >= expected:
            done.set()
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/{name}", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    prefix = f"bench-webhooks-{uuid.uuid4().hex[:8]}"
    pool = await open_pool(settings.database_url, min_size=1, max_size=2)
    bench_app = f"bench-{run_id}"  # the app the events and the subscriptions are of
    names = [f"bench-{run_id}-{n}" for n in range(subscriptions)]
    async with pool.connection() as conn:
        for name in names:
            await conn.execute(
                "INSERT INTO webhook_subscriptions (id, url, event_types, secret, app_id)"
                " VALUES (%s, %s, %s, %s, %s)",
                (
                    name,
                    f"http://127.0.0.1:{port}/{name}",
                    [BENCH_EVENT],
                    "whsec_" + "A" * 32,
                    bench_app,
                ),
            )
    env = {
        **os.environ,
        "PLAYTABLE_STREAM_PREFIX": prefix,
        "PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "PLAYTABLE_LOG_LEVEL": "warning",
    }
    env.pop("PLAYTABLE_INSTANCE_ID", None)
    processes = [
        subprocess.Popen([sys.executable, "-m", "services.operator.cli", "webhooks"], env=env)
        for _ in range(workers)
    ]
    redis = redis_async.Redis.from_url(settings.redis_url)
    stream = stream_key(prefix, MATCH_EVENTS_STREAM)
    try:
        await asyncio.sleep(3.0)  # the workers connect and the dispatchers join the group
        started = time.time()
        back_at = started + outage_s if outage_s else back_at
        for number in range(events):
            data = msgspec.Raw(msgspec.json.encode({"sent_at": time.time()}))
            envelope = EventEnvelope(
                stream_id=f"match-bench-{run_id}-{number % 10}",
                version=number // 10 + 1,
                type=BENCH_EVENT,
                data=data,
                metadata=metadata(correlation_id=run_id, app_id=bench_app),
            )
            await redis.xadd(stream, {b"m": msgspec.json.encode(envelope)})
            await asyncio.sleep(max(0.0, started + (number + 1) / rate - time.time()))
        try:
            await asyncio.wait_for(done.wait(), timeout=120 + max(0.0, back_at - time.time()))
        except TimeoutError:
            print(f"only {len(delays_ms)} of {expected} deliveries arrived in time")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        async with pool.connection() as conn:
            await conn.execute("DELETE FROM webhook_subscriptions WHERE id = ANY(%s)", (names,))
        await pool.close()
        keys = [key async for key in redis.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        await runner.cleanup()
    if not delays_ms:
        return 1
    ordered = sorted(delays_ms)
    elapsed = max(last_receipt - started, 1e-9)
    print(
        f"webhooks: {len(delays_ms)} deliveries ({events} events x {subscriptions} subscriptions,"
        f" {rate:g} events/s, {workers} worker process(es)) in {elapsed:.2f} s:"
        f" {len(delays_ms) / elapsed:,.0f} deliveries/s; delay from commit to receipt"
        f" p50 {ordered[len(ordered) // 2]:.0f} ms, p99 {ordered[int(len(ordered) * 0.99)]:.0f} ms"
    )
    if outage_s:
        _report_outage(
            received, down_names, refused, back_at, drained_at, healthy_delays_ms, events
        )
    return 0


def _report_outage(
    received: dict[str, list[tuple[str, int]]],
    down_names: set[str],
    refused: int,
    back_at: float,
    drained_at: float,
    healthy_delays_ms: list[float],
    events: int,
) -> None:
    """The backlog's drain once the receiver was back, its order, and the others' delays."""
    out_of_order = duplicates = 0
    for receipts in received.values():
        by_stream: dict[str, list[int]] = {}
        for stream, version in receipts:
            by_stream.setdefault(stream, []).append(version)
        for versions in by_stream.values():
            out_of_order += sum(1 for a, b in itertools.pairwise(versions) if b < a)
            duplicates += len(versions) - len(set(versions))
    backlog = sum(len(set(received.get(name, []))) for name in down_names)
    missing = len(down_names) * events - backlog
    healthy = sorted(healthy_delays_ms)
    print(
        f"outage: {len(down_names)} subscribers answered 503 {refused} times until"
        f" {time.strftime('%H:%M:%S', time.localtime(back_at))}; their {backlog} deliveries"
        f" arrived by {max(0.0, drained_at - back_at):.1f} s after"
        f" they were back ({missing} missing, {duplicates} twice, {out_of_order} out of"
        f" order in their stream); the other subscribers meanwhile: p50"
        f" {healthy[len(healthy) // 2]:.0f} ms, p99 {healthy[int(len(healthy) * 0.99)]:.0f} ms"
    )


# --- race and malformed (the fault suite's traffic, tools/hostile.py and tools/traffic.py) --


async def bench_race(
    lobby: str, matches: list[str], app_key: str, rounds: int, clients: int
) -> int:
    """Rounds of ``clients`` moves at one expected version, each under its own key: exactly
    one may be accepted; prints the rounds that accepted more than one."""
    from tools import hostile

    session = new_session(app_key, connections=clients * len(matches) + 10)
    load = Load(session, Endpoints(lobby, matches), slots=1)
    rng = random.Random(1)
    results: list[hostile.RaceResult] = []
    match_id: str | None = None
    tokens: list[str] = []
    began = time.perf_counter()
    try:
        await hostile.warm_connections(session, matches, clients)
        while len(results) < rounds:
            if match_id is None:
                _, match_id, tokens = await load.open_table("hanabi", 2)
                await load.wait_for_match(match_id)
            result = await hostile.race_round(
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
    import json

    from tools import hostile

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
        known = hostile.Known(table_id, match_id, tokens[0])
        answers = await hostile.barrage(endpoints, known, requests)
        ended = time.monotonic()
    finally:
        stop.set()
        await asyncio.gather(running, return_exceptions=True)
        await session.close()
    summary = hostile.summarize_barrage(answers)
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
        f" {normal_from or 'any address'}): {_percentiles(latencies)}, {answered[429]} answered"
        f" 429, by status {dict(sorted(answered.items()))}"
    )
    return 1 if answered[429] else 0


# --- clocks ----------------------------------------------------------------------------------


async def bench_clocks(
    lobby: str, match: str, app_key: str, clocks: int, per_move: tuple[int, int]
) -> int:
    """How late timeouts fire with ``clocks`` clocks live at once: that many clocked matches
    are started (a per-move limit drawn in ``per_move`` seconds, so all are live before the
    first runs out), left alone until each has forfeited, then read back from their logs.
    Needs the clocks service running (``playtable stack`` runs it)."""
    from tools import clock_load

    async with new_session(app_key, connections=32) as session:
        began = time.perf_counter()
        match_ids = await clock_load.open_clocked_matches(session, lobby, clocks, per_move)
        opened_s = time.perf_counter() - began
        if opened_s > per_move[0]:
            print(f"clocks: opening took {opened_s:.1f} s, longer than the shortest clock")
        running = await clock_load.wait_all_finished(
            session, match, match_ids, timeout_s=per_move[1] + 30.0
        )
        timeouts = await clock_load.collect_timeouts(session, match, match_ids)
    print(
        f"clocks: {clocks} live clocks (opened in {opened_s:.1f} s, per-move limits"
        f" {per_move[0]}-{per_move[1]} s): {timeouts.report()}; still running: {len(running)}"
    )
    return 0 if not (timeouts.doubled or timeouts.lost or running) else 1
