"""``playtable bench feeds``: the match process's resident memory with many live feeds open on
one match, and once they are closed, which tells a leak (or memory never given back) from
the cost of feeds while they last.

The feeds all come from one address: the services' feed limits must allow that many
(``PLAYTABLE_MAX_FEEDS_PER_CLIENT``, ``PLAYTABLE_RATE_LIMIT_FEED_BURST``), or most get 429.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from services.operator.bench import (
    _long_game_policy,
    _new_match,
    _ok,
    _rss_kib,
    _service_pids,
    _wait_for,
)
from services.operator.keys import client_key
from shared.apps import API_KEY_HEADER
from shared.settings import Settings

SPARE_FILES = 256
"""Descriptors kept for everything but the feeds (the lobby and match requests, imports)."""
BUSY_TRIES = 30
"""Answers of 503 (a backing service did not answer) a player takes before giving up."""


def match_pid(given: int | None) -> int:
    """The match process to measure: the one given, else the only one running."""
    if given is not None:
        return given
    found = _service_pids().get("match", [])
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


@dataclass
class Feed:
    """One open feed, read to its end in a task, remembering the last event id it received."""

    response: Any
    last_id: int = 0
    ended: bool = False
    """The server ended it (a failed read does: a real client would reconnect)."""
    task: asyncio.Task[None] = field(init=False)

    async def drain(self) -> None:
        async for line in self.response.content:
            if line.startswith(b"id: "):
                self.last_id = int(line[4:])
        self.ended = True


async def open_feed(session: Any, url: str) -> Feed:
    """A feed once its first message (the ``retry`` line) has arrived, so it is really open."""
    response = await session.get(url)
    if response.status != 200:
        body = await response.text()
        response.release()
        raise RuntimeError(f"GET {url}: {response.status} {body}")
    await response.content.readuntil(b"\r\n\r\n")
    feed = Feed(response)
    feed.task = asyncio.create_task(feed.drain())
    return feed


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
                    return await _ok(response)
            self.busy_answers += 1
            await asyncio.sleep(1.0)
        raise RuntimeError(f"{method} {self.url}{path}: 503 {BUSY_TRIES} times")

    async def play_quietly(self, moves: int, seed: int) -> int:
        """``moves`` moves that keep the match running; returns the version reached."""
        rng = random.Random(seed)
        info = await self.answer("GET", "")
        for _ in range(moves):
            auth = {"Authorization": f"Bearer {self.tokens[info['to_move'][0]]}"}
            legal = await self.answer("GET", "/actions", headers=auth)
            move = {
                "expected_version": info["version"],
                "action": _long_game_policy(rng, legal["actions"]),
            }
            headers = {**auth, "Idempotency-Key": uuid.uuid4().hex}  # the same on a retry
            info = await self.answer("POST", "/actions", json=move, headers=headers)
            if not info["to_move"]:
                break
        return info["version"]


async def until_all_reached(feeds: list[Feed], version: int, timeout_s: float) -> None:
    """Until every feed still open has sent the events up to ``version``."""
    deadline = time.monotonic() + timeout_s
    while behind := sum(not feed.ended and feed.last_id < version for feed in feeds):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{behind} feeds had not sent version {version} in time")
        await asyncio.sleep(0.1)


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


async def feed_round(player: Player, pid: int, count: int, moves: int, settle_s: float) -> str:
    """One round: open ``count`` feeds at once, move while they are open, close them all."""
    session, url = player.session, player.url
    version = (await player.answer("GET", ""))["version"]
    busy_before = player.busy_answers
    before = _rss_kib(pid)
    began = time.perf_counter()
    opened = await asyncio.gather(
        *(open_feed(session, f"{url}/feed") for _ in range(count)), return_exceptions=True
    )
    open_s = time.perf_counter() - began
    feeds = [feed for feed in opened if isinstance(feed, Feed)]
    refusals = [error for error in opened if not isinstance(error, Feed)]
    if not feeds:
        raise RuntimeError(f"no feed opened: {refusals[0]!r}")
    try:
        await until_all_reached(feeds, version, timeout_s=60)
        caught_up_s = time.perf_counter() - began
        with_feeds = _rss_kib(pid)
        reached = await player.play_quietly(moves, seed=version)
        await until_all_reached(feeds, reached, timeout_s=60)
        after_moves = _rss_kib(pid)
    finally:
        for feed in feeds:
            feed.task.cancel()
            feed.response.close()
        await asyncio.gather(*(feed.task for feed in feeds), return_exceptions=True)
    await asyncio.sleep(settle_s)
    after_close = _rss_kib(pid)
    ended = sum(feed.ended for feed in feeds)
    busy = player.busy_answers - busy_before
    return (
        f"{len(feeds)} feeds opened at once in {open_s:.2f} s (all had sent the match's"
        f" {version} events after {caught_up_s:.2f} s); resident {mib(before)} before,"
        f" {mib(with_feeds)} with them open (+{mib(with_feeds - before)},"
        f" {(with_feeds - before) / len(feeds):.1f} KiB per feed), {mib(after_moves)} after"
        f" {reached - version} more events each, {mib(after_close)} {settle_s:g} s after they"
        f" closed (+{mib(after_close - before)} over before)"
        + (f"; {len(refusals)} refused, the first: {refusals[0]!r}" if refusals else "")
        + (f"; {ended} ended early by the server (see its log)" if ended else "")
        + (f"; the players' requests were answered 503 {busy} times" if busy else "")
    )


def run_feeds(args: argparse.Namespace, settings: Settings) -> int:
    lobby = args.lobby or f"http://{settings.host}:{settings.lobby_port}"
    match = args.match or f"http://{settings.host}:{settings.match_port}"
    app_key = asyncio.run(client_key(settings))
    return asyncio.run(
        bench_feeds(
            lobby, match, app_key, args.pid, args.feeds, args.moves, args.settle, args.rounds
        )
    )


async def bench_feeds(
    lobby: str,
    match: str,
    app_key: str,
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
    allow_open_files(count)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=60)
    # No keep-alive: after a round's settling pause the server may be closing an idle
    # connection just as the client reuses it.
    connector = aiohttp.TCPConnector(limit=count + 10, force_close=True)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, headers={API_KEY_HEADER: app_key}
    ) as session:
        match_id, tokens = await _new_match(session, lobby, 2)
        player = Player(session, f"{match}/matches/{match_id}", tokens)
        await _wait_for(session, player.url)
        await asyncio.sleep(1.0)  # the match's first reads settle
        print(f"feeds on match {match_id}, match process {pid}:")
        for number in range(1, rounds + 1):
            summary = await feed_round(player, pid, count, moves, settle_s)
            print(f"  round {number}: {summary}", flush=True)
    return 0
