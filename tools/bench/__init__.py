"""``playtable bench``: each benchmark by its name (``run``), in a module of this package by
what it measures, imported when it runs:

- ``engine``: random playouts and the bots' arena, in this process (``engine``, ``bots``).
- ``api``: moves, replays and memory through the running services (``api``, ``replay``,
  ``memory``), with ``cpu``: each process's CPU time per move.
- ``bot_service``: matches of bots only through services of its own (``bot-service``).
- ``feeds``: many live feeds on one match (``feeds``).
- ``webhooks``: deliveries to a local receiver (``webhooks``).
- ``abuse``: racing moves, malformed requests and a flooding client (``race``, ``malformed``,
  ``flood``).
- ``clocks``: timeouts with many live clocks (``clocks``).
- ``tools/backlog.py``: creation and clocks after a fault at load (``backlog``).
- ``common``: what several of them share.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from services.operator.keys import client_key
from shared.infra.settings import Settings
from tools.bench.common import DEFAULT_PLAYERS


def run(args: argparse.Namespace, settings: Settings) -> int:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    if args.bench == "engine":
        from tools.bench.engine import bench_engine

        return bench_engine(args.game, args.players, args.games, args.seed, args.option)
    if args.bench == "bots":
        from tools.bench.engine import bench_bots

        return bench_bots(args.game, args.matches, args.players, args.option)
    if args.bench == "bot-service":
        from tools.bench.bot_service import bench_bot_service

        matches = {game: getattr(args, game) for game in DEFAULT_PLAYERS}
        return asyncio.run(bench_bot_service(settings, args.bots, matches))
    if args.bench == "api":
        from tools.bench.api import bench_api

        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        match = args.match or f"http://{settings.host}:{settings.match_port}"
        app_key = asyncio.run(client_key(settings))
        return asyncio.run(
            bench_api(settings, lobby, match, app_key, args.matches, args.seconds, args.warmup)
        )
    if args.bench == "replay":
        from tools.bench.api import bench_replay

        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        match = args.match or f"http://{settings.host}:{settings.match_port}"
        app_key = asyncio.run(client_key(settings))
        return asyncio.run(bench_replay(lobby, match, app_key, args.game, args.requests))
    if args.bench == "memory":
        from tools.bench.api import bench_memory

        return asyncio.run(bench_memory(settings, args.matches))
    if args.bench == "feeds":
        from tools.bench.feeds import run_feeds

        return run_feeds(args, settings)
    if args.bench == "webhooks":
        from tools.bench.webhooks import bench_webhooks

        return asyncio.run(
            bench_webhooks(
                settings,
                args.subscriptions,
                args.events,
                args.rate,
                args.workers,
                args.outage,
                args.backlog,
            )
        )
    if args.bench in ("race", "malformed"):
        from tools.bench.abuse import bench_malformed, bench_race

        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        matches = args.match or [f"http://{settings.host}:{settings.match_port}"]
        app_key = asyncio.run(client_key(settings))
        if args.bench == "race":
            return asyncio.run(bench_race(lobby, matches, app_key, args.rounds, args.clients))
        return asyncio.run(bench_malformed(lobby, matches, app_key, args.requests, args.matches))
    if args.bench == "clocks":
        from tools.bench.clocks import bench_clocks

        lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
        match = args.match or f"http://{settings.host}:{settings.match_port}"
        app_key = asyncio.run(client_key(settings))
        return asyncio.run(bench_clocks(lobby, match, app_key, args.clocks, args.per_move))
    if args.bench == "backlog":
        from tools import backlog

        return backlog.run(settings, args)
    if args.bench == "flood":
        from tools.bench.abuse import bench_flood

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
