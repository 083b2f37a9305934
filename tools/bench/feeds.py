"""``playtable bench feeds``: many live feeds on one match. How long each move takes to reach
every feed (from the move's answer to each feed receiving the move's last event: p50, p99 and
max over all feeds and moves), how long the feeds take to open, and the match process's resident
memory with them open and once they are closed, which tells a leak (or memory never given back)
from the cost of feeds while they last.

The feeds are spread over the spectator and every seat, so each viewer's redaction is exercised.
They are read by separate client processes (one per ``FEEDS_PER_CLIENT``) with a lean reader, a
bare asyncio protocol that only notes when each event id arrives: one Python process parsing
thousands of streams with a full HTTP client would measure itself, not the server. Their CPU
time is shown beside the server's, so a client that became the bottleneck shows.

The feeds all come from one address: the services' feed limits must allow that many
(``PLAYTABLE_MAX_FEEDS_PER_CLIENT``, ``PLAYTABLE_RATE_LIMIT_FEED_BURST``), or most get 429.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import os
import random
import resource
import statistics
import time
import uuid
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, cast
from urllib.parse import urlsplit

from services.operator.keys import client_key
from shared.edge.apps import API_KEY_HEADER
from shared.infra.settings import Settings
from tools.traffic import (
    long_game_policy,
    new_match,
    ok_json,
    rss_kib,
    service_pids,
    wait_for_match,
)

SPARE_FILES = 256
"""Descriptors kept for everything but the feeds (the lobby and match requests, imports)."""
BUSY_TRIES = 30
"""Answers of 503 (a backing service did not answer) a player takes before giving up."""
FEEDS_PER_CLIENT = 5000
"""Feeds one client process reads."""
OPENING_AT_ONCE = 100
"""Feeds a client process is opening at a time (more overflow the server's listen backlog)."""
TIMEOUT_S = 60.0
"""How long a feed may take to open, or all feeds to receive an event."""


def match_pid(given: int | None) -> int:
    """The match process to measure: the one given, else the only one running."""
    if given is not None:
        return given
    found = service_pids().get("match", [])
    if len(found) != 1:
        raise SystemExit(
            f"{len(found)} match processes found ({', '.join(map(str, found)) or 'none'}):"
            " pass --pid"
        )
    return found[0]


def allow_open_files(count: int) -> None:
    """Raise this process's soft limit on open files so ``count`` connections fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            raise SystemExit(f"{count} feeds need {wanted} open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def cpu_s(pid: int) -> float:
    """CPU time (user and system) process ``pid`` has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the client processes ----------------------------------------------------------------------


class FeedReader(asyncio.Protocol):
    """One feed: open once its first message (``retry``) came; then notes when each event id
    arrives (SSE lines are ``id: N``, each after a line break; JSON data holds none)."""

    def __init__(self, request: bytes, opened: asyncio.Future[None]) -> None:
        self.request = request
        self.opened = opened
        self.arrivals: dict[int, float] = {}
        self.last_id = 0
        self.ended = False
        self.transport: asyncio.Transport | None = None
        self._head = b""
        self._carry = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        if not self.opened.done():
            self._head += data
            if b"\r\n\r\n" not in self._head:
                return
            if self._head.split(b" ", 2)[1] != b"200":
                self.opened.set_exception(RuntimeError(self._head[:400].decode(errors="replace")))
                return
            if b"retry:" not in self._head:
                return
            self.opened.set_result(None)
            data, self._head = self._head, b""
        self._note_ids(data, now)

    def _note_ids(self, data: bytes, now: float) -> None:
        buffer = self._carry + data
        position = 0
        while (start := buffer.find(b"\nid: ", position)) >= 0:
            end = buffer.find(b"\r", start + 5)
            if end < 0:
                self._carry = buffer[start:]
                return
            version = int(buffer[start + 5 : end])
            if version > self.last_id:
                self.last_id = version
                self.arrivals[version] = now
            position = end
        self._carry = buffer[-4:]  # a line break and ``id:`` cut off at the end

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        if not self.opened.done():
            self.opened.set_exception(ConnectionError(f"closed before it opened: {exc!r}"))


class FeedClient:
    """A client process's feeds, driven by commands from the benchmark over a pipe."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.feeds: list[FeedReader] = []

    async def open(self, requests: list[bytes]) -> dict[str, Any]:
        gate = asyncio.Semaphore(OPENING_AT_ONCE)
        began = time.monotonic()
        opened = await asyncio.gather(
            *(self._open_one(request, gate) for request in requests), return_exceptions=True
        )
        self.feeds = [feed for feed in opened if isinstance(feed, FeedReader)]
        refusals = [repr(error) for error in opened if not isinstance(error, FeedReader)]
        return {"seconds": time.monotonic() - began, "refusals": refusals}

    async def _open_one(self, request: bytes, gate: asyncio.Semaphore) -> FeedReader:
        loop = asyncio.get_running_loop()
        async with gate:
            reader = FeedReader(request, loop.create_future())
            transport, _ = await loop.create_connection(lambda: reader, self.host, self.port)
            try:
                async with asyncio.timeout(TIMEOUT_S):
                    await reader.opened
            except BaseException:
                transport.close()
                raise
            return reader

    async def wait(self, version: int) -> int:
        """Until every feed still open has received ``version``; the feeds still behind."""
        deadline = time.monotonic() + TIMEOUT_S
        while behind := sum(not f.ended and f.last_id < version for f in self.feeds):
            if time.monotonic() > deadline:
                return behind
            await asyncio.sleep(0.01)
        return 0

    def latencies(self, answered_at: dict[int, float]) -> list[float]:
        """Each feed's delay for each move: its last event's arrival after the move's answer."""
        return [
            feed.arrivals[version] - answered
            for feed in self.feeds
            for version, answered in answered_at.items()
            if version in feed.arrivals
        ]

    async def close(self) -> int:
        """Close every feed; how many the server had ended already."""
        ended = sum(feed.ended for feed in self.feeds)
        for feed in self.feeds:
            if feed.transport is not None:
                feed.transport.close()
        self.feeds = []
        await asyncio.sleep(0.5)  # the closings go out
        return ended

    async def serve(self, pipe: Connection) -> None:
        while True:
            name, *args = await asyncio.to_thread(pipe.recv)
            if name == "quit":
                return
            if name == "cpu":
                usage = resource.getrusage(resource.RUSAGE_SELF)
                pipe.send(usage.ru_utime + usage.ru_stime)
            elif name == "latencies":
                pipe.send(self.latencies(*args))
            else:
                pipe.send(await getattr(self, name)(*args))


def run_feed_client(pipe: Connection, host: str, port: int, count: int) -> None:
    """A client process's main: serve the benchmark's commands until told to quit."""
    import uvloop

    allow_open_files(count)
    uvloop.run(FeedClient(host, port).serve(pipe))


@dataclass
class FeedClients:
    """The client processes, and the benchmark's end of their pipes."""

    pipes: list[Connection]
    processes: list[Any]

    @classmethod
    def start(cls, match_url: str, count: int) -> FeedClients:
        address = urlsplit(match_url)
        clients = math.ceil(count / FEEDS_PER_CLIENT)
        spawn = multiprocessing.get_context("spawn")
        pipes, processes = [], []
        for _ in range(clients):
            ours, theirs = spawn.Pipe()
            args = (theirs, address.hostname, address.port, math.ceil(count / clients))
            process = spawn.Process(target=run_feed_client, args=args, daemon=True)
            process.start()
            pipes.append(ours)
            processes.append(process)
        return cls(pipes, processes)

    async def ask(self, name: str, *args: Any) -> list[Any]:
        """Every client's answer to the command."""
        for pipe in self.pipes:
            pipe.send((name, *args))
        return list(await asyncio.gather(*(asyncio.to_thread(p.recv) for p in self.pipes)))

    async def open(self, requests: list[bytes]) -> tuple[float, list[str]]:
        """Open the feeds, shared among the clients: the time it took, and the refusals."""
        shares = [requests[number :: len(self.pipes)] for number in range(len(self.pipes))]
        for pipe, share in zip(self.pipes, shares, strict=True):
            pipe.send(("open", share))
        answers = await asyncio.gather(*(asyncio.to_thread(p.recv) for p in self.pipes))
        return max(a["seconds"] for a in answers), [r for a in answers for r in a["refusals"]]

    async def reached(self, version: int) -> None:
        behind = sum(await self.ask("wait", version))
        if behind:
            raise RuntimeError(f"{behind} feeds had not received version {version} in time")

    async def cpu_s(self) -> float:
        return sum(await self.ask("cpu"))

    def stop(self) -> None:
        for pipe in self.pipes:
            pipe.send(("quit",))
        for process in self.processes:
            process.join(5)


def feed_request(match_url: str, match_id: str, app_key: str, token: str | None) -> bytes:
    address = urlsplit(match_url)
    lines = [
        f"GET {address.path.rstrip('/')}/matches/{match_id}/feed HTTP/1.1",
        f"Host: {address.netloc}",
        f"{API_KEY_HEADER}: {app_key}",
        "Accept: text/event-stream",
        *([f"Authorization: Bearer {token}"] if token else []),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# --- the benchmark -----------------------------------------------------------------------------


@dataclass
class Player:
    """Moves on the match for its seats, asking again while the match service is too busy to
    answer (503: its database pool is taken), as a client would; counts those answers."""

    session: Any
    url: str
    tokens: list[str]
    busy_answers: int = 0

    async def answer(self, method: str, path: str, **kwargs: Any) -> Any:
        for _ in range(BUSY_TRIES):
            async with self.session.request(method, f"{self.url}{path}", **kwargs) as response:
                if response.status != 503:
                    return await ok_json(response)
            self.busy_answers += 1
            await asyncio.sleep(1.0)
        raise RuntimeError(f"{method} {self.url}{path}: 503 {BUSY_TRIES} times")

    async def move_quietly(self, rng: random.Random) -> tuple[dict[str, Any], float]:
        """A move that keeps the match running: the answer, and when it came."""
        info = await self.answer("GET", "")
        if not info["to_move"]:
            raise SystemExit(
                f"the match ended at version {info['version']}: ask for fewer moves"
                " (--moves per round, --rounds)"
            )
        auth = {"Authorization": f"Bearer {self.tokens[info['to_move'][0]]}"}
        legal = await self.answer("GET", "/actions", headers=auth)
        move = {
            "game": info["game"],
            "expected_version": info["version"],
            "action": long_game_policy(rng, legal["actions"]),
        }
        headers = {**auth, "Idempotency-Key": uuid.uuid4().hex}  # the same on a retry
        answer = await self.answer("POST", "/actions", json=move, headers=headers)
        return answer, time.monotonic()


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def spread(latencies_s: list[float]) -> str:
    """p50, p99 and max in milliseconds."""
    if not latencies_s:
        return "no event arrived"
    ordered = sorted(latencies_s)
    p99 = ordered[min(len(ordered) - 1, math.ceil(len(ordered) * 0.99) - 1)]
    return (
        f"p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms,"
        f" max {ordered[-1] * 1000:.0f} ms"
    )


@dataclass
class Round:
    """One round's setting: the feeds' requests, the match process and the client processes."""

    player: Player
    clients: FeedClients
    requests: list[bytes]
    pid: int
    moves: int
    settle_s: float


async def feed_round(setting: Round) -> str:
    """Open the feeds, make moves one at a time (each once every feed has the one before),
    close them all."""
    player, clients, pid = setting.player, setting.clients, setting.pid
    version = (await player.answer("GET", ""))["version"]
    busy_before = player.busy_answers
    before = rss_kib(pid)
    open_s, refusals = await clients.open(setting.requests)
    opened = len(setting.requests) - len(refusals)
    if not opened:
        raise RuntimeError(f"no feed opened: {refusals[0]}")
    try:
        await clients.reached(version)
        with_feeds = rss_kib(pid)
        cpu_before = cpu_s(pid), await clients.cpu_s()
        answered_at: dict[int, float] = {}
        rng = random.Random(version)
        for _ in range(setting.moves):
            answer, answered = await player.move_quietly(rng)
            answered_at[answer["version"]] = answered
            await clients.reached(answer["version"])
        server_cpu, client_cpu = cpu_s(pid) - cpu_before[0], await clients.cpu_s() - cpu_before[1]
        latencies = [x for share in await clients.ask("latencies", answered_at) for x in share]
        after_moves = rss_kib(pid)
    finally:
        ended = sum(await clients.ask("close"))
    await asyncio.sleep(setting.settle_s)
    after_close = rss_kib(pid)
    busy = player.busy_answers - busy_before
    moves = len(answered_at)
    return (
        f"{opened} feeds opened in {open_s:.2f} s; each move reached them all in"
        f" {spread(latencies)} ({len(latencies)} deliveries of {moves} moves); CPU over the"
        f" moves: server {server_cpu / moves * 1000:.0f} ms per move, clients"
        f" {client_cpu / moves * 1000:.0f} ms; resident {mib(before)} before, {mib(with_feeds)}"
        f" with them open (+{mib(with_feeds - before)},"
        f" {(with_feeds - before) / opened:.1f} KiB per feed), {mib(after_moves)} after the"
        f" moves, {mib(after_close)} {setting.settle_s:g} s after they closed"
        f" (+{mib(after_close - before)} over before)"
        + (f"; {len(refusals)} refused, the first: {refusals[0]}" if refusals else "")
        + (f"; {ended} ended early by the server (see its log)" if ended else "")
        + (f"; the players' requests were answered 503 {busy} times" if busy else "")
    )


def run_feeds(args: argparse.Namespace, settings: Settings) -> int:
    lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
    match = args.match or f"http://{settings.host}:{settings.match_port}"
    app_key = asyncio.run(client_key(settings))
    clients = FeedClients.start(match, args.feeds)
    try:
        return asyncio.run(
            bench_feeds(
                lobby,
                match,
                app_key,
                clients,
                args.pid,
                args.feeds,
                args.moves,
                args.settle,
                args.rounds,
            )
        )
    finally:
        clients.stop()


async def bench_feeds(
    lobby: str,
    match: str,
    app_key: str,
    clients: FeedClients,
    pid: int | None,
    count: int,
    moves: int,
    settle_s: float,
    rounds: int,
) -> int:
    """Rounds of feeds on one match: memory kept after the first round but reused by the next
    is retention by the allocators; memory growing round after round is a leak."""
    import aiohttp

    pid = match_pid(pid)
    async with aiohttp.ClientSession(headers={API_KEY_HEADER: app_key}) as session:
        match_id, tokens = await new_match(session, lobby, 2)
        player = Player(session, f"{match}/matches/{match_id}", tokens)
        await wait_for_match(session, player.url)
        await asyncio.sleep(1.0)  # the match's first reads settle
        viewers = [None, *tokens]
        requests = [
            feed_request(match, match_id, app_key, viewers[number % len(viewers)])
            for number in range(count)
        ]
        setting = Round(player, clients, requests, pid, moves, settle_s)
        print(
            f"{count} feeds (the spectator and {len(tokens)} seats in turn, read by"
            f" {len(clients.pipes)} client processes) on match {match_id}, match process {pid}:"
        )
        for number in range(1, rounds + 1):
            print(f"  round {number}: {await feed_round(setting)}", flush=True)
    return 0
