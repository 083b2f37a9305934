"""``bench bot-service``: matches of bots only, played by bots processes through a rules worker,
a match service and a lobby of their own, on a database and stream prefix of their own."""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import time
from datetime import datetime
from typing import Any

import msgspec

from shared.infra.settings import Settings
from tools.bench.common import DEFAULT_PLAYERS
from tools.traffic import fetch, new_session


async def bench_bot_service(settings: Settings, bots: int, matches: dict[str, int]) -> int:
    """Matches of bots only (``matches`` per game, its usual players, each seat its heuristic
    bot) played by ``bots`` bots processes through a rules worker, a match service and a lobby
    of their own, on a database and stream prefix of their own: bot moves per second (moves
    over the time from the first table's creation to the last match's end), and each turn's
    latency, from the event before it to the move as the match log records them (both are
    commit times); with the bots' turns by outcome and the CPU time each kind of process spent
    per move."""

    from services.operator.keys import fresh_key
    from tools.scratch import LOOPBACK, Copies, drop_database, forget_streams, free_port, scratch

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
