"""What several tools share: an HTTP client for the running services, and the load they put
on them.

- ``new_session``, ``fetch`` (a ``Reply`` read whole), ``ok_json``: requests as a client app.
- ``new_match``, ``wait_for_match``, ``long_game_policy``: a match opened through the lobby
  and played long.
- ``Endpoints``, ``Load``, ``Ack``: matches played with random legal moves by clients that
  behave like real ones under faults: a failed request (connection error, timeout, 5xx, 429)
  is retried, a move always with the same ``Idempotency-Key`` and body, until a definite
  answer; every acknowledged move (201) is recorded, and tables keep being opened and started
  meanwhile. ``playtable copies``, ``playtable bench race|malformed`` and the fault suite
  (``tests/faults``) play it.
- ``service_pids``, ``rss_kib``: the local services' processes and their resident memory.

aiohttp's cost per request is small enough that the load measures the services rather than
its client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from shared.edge.apps import API_KEY_HEADER

CLI_MODULE = b"services.operator.cli"
"""How a process of the stack is started (``python -m services.operator.cli <service>``)."""

DEFINITE_MOVE_ANSWERS = {201, 409, 422}
LOAD_GAMES = (("hanabi", 2), ("dingo", 3), ("breaking_news", 3))


def load_game(slot: int) -> tuple[str, int]:
    """Mostly Hanabi for two; every tenth slot Dingo, and the one after it Breaking News."""
    if slot % 10 == 7:
        return LOAD_GAMES[1]
    if slot % 10 == 8:
        return LOAD_GAMES[2]
    return LOAD_GAMES[0]


class GaveUp(Exception):
    """The traffic cannot go on: no definite answer before the client's deadline, or a
    refusal where it needs an answer."""


TRANSPORT_ERRORS = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError)
"""A request that got no (whole) answer: retried, never a definite answer."""


@dataclass(frozen=True)
class Ack:
    """An acknowledged move: the match went from ``before`` to ``after`` with these events."""

    match_id: str
    key: str
    before: int
    after: int
    types: tuple[str, ...]
    at: float
    slot: int


@dataclass
class Endpoints:
    """The lobby and one or more match processes; requests are spread over the match
    processes, and one that does not answer is avoided for a moment (clients fail over)."""

    lobby: str
    matches: list[str]
    _turn: int = 0
    _down_until: dict[str, float] = field(default_factory=dict)

    def match(self) -> str:
        now = time.monotonic()
        for _ in range(len(self.matches)):
            self._turn += 1
            url = self.matches[self._turn % len(self.matches)]
            if self._down_until.get(url, 0.0) <= now:
                return url
        return self.matches[self._turn % len(self.matches)]

    def mark_down(self, url: str) -> None:
        if len(self.matches) > 1:
            self._down_until[url] = time.monotonic() + 1.0


@dataclass(frozen=True)
class Reply:
    """A response read whole inside its context, so its connection is back in the pool at once."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def new_session(
    app_key: str, connections: int = 64, timeout: float = 10.0
) -> aiohttp.ClientSession:
    """Requests as the client app ``app_key`` names, on keep-alive connections, at most
    ``connections`` (size it to the concurrency, so that no request waits for one); idle ones
    are dropped before uvicorn's 5 s would close them under a request. A bodiless POST goes
    without a made-up ``Content-Type``."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=connections, keepalive_timeout=4.0),
        timeout=aiohttp.ClientTimeout(total=timeout),
        headers={API_KEY_HEADER: app_key},
        skip_auto_headers=("Content-Type",),
    )


async def fetch(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    async with session.request(method, url, data=body, headers=headers) as response:
        return Reply(response.status, response.headers, await response.read())


def json_request(body: Any, headers: Mapping[str, str] | None) -> tuple[bytes, dict[str, str]]:
    """The body encoded once (a retry sends the very same bytes) and its content type."""
    return json.dumps(body).encode(), {**(headers or {}), "Content-Type": "application/json"}


def authorization(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def load_policy(rng: random.Random, actions: list[Any]) -> Any:
    """Any legal move, but Hanabi plays seldom (matches run longer) and Breaking News calls
    the news when it can (so stories, where every seat may act, come up)."""
    types = {action.get("type") for action in actions}
    if "CallBreakingNews" in types or "TellStory" in types:
        news = [a for a in actions if a.get("type") in {"CallBreakingNews", "TellStory"}]
        if rng.random() < 0.8:
            return rng.choice(news)
    if "PlayCard" in types:
        quiet = [action for action in actions if action.get("type") != "PlayCard"]
        if quiet and rng.random() < 0.85:
            return rng.choice(quiet)
    if "PlaceCard" in types:
        placements = [action for action in actions if action.get("type") == "PlaceCard"]
        if rng.random() < 0.9:
            return rng.choice(placements)
    return rng.choice(actions)


class Load:
    """``slots`` matches in play at once, each slot opening a new table when its match ends
    or after ``moves_per_match`` moves (so starting tables is exercised all along). With
    ``think_s`` each slot waits that long after each move, as a player would: as many matches
    in flight, at a pace the machine's other work leaves room for; without, as fast as the
    stack answers."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        endpoints: Endpoints,
        *,
        slots: int = 20,
        seed: int = 1,
        moves_per_match: int = 40,
        give_up_s: float = 60.0,
        match_wait_s: float = 30.0,
        think_s: float = 0.0,
    ) -> None:
        self.session = session
        self.endpoints = endpoints
        self.slots = slots
        self.seed = seed
        self.moves_per_match = moves_per_match
        self.give_up_s = give_up_s
        self.match_wait_s = match_wait_s
        self.think_s = think_s
        self.acks: list[Ack] = []
        self.tables: dict[str, str] = {}
        """Each table whose start was acknowledged: its match id."""
        self.created_version: dict[str, int] = {}
        """Each match's version when the load first saw it exist (its set-up events)."""
        self.slot_of_match: dict[str, int] = {}
        self.errors: Counter[str] = Counter()
        """Failed attempts by kind (status code or exception), all retried."""
        self.unexpected: list[str] = []
        """Definite answers a well-behaved client should not get (kept for the report)."""
        self.start_answers: Counter[int] = Counter()
        """The definite answers to table starts, by status (202: the match not made yet)."""
        self.gave_up = 0
        self.matches_never_created: list[str] = []
        self.moves_tried = 0
        self.unfinished_matches: set[str] = set()
        """Matches with a move sent but never answered definitely (given up or cancelled):
        it may have committed without an acknowledgement."""

    # --- requests ------------------------------------------------------------------------

    async def send(
        self,
        service: str,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        deadline: float | None = None,
    ) -> Reply:
        """Until a definite answer: anything but a transport error, a 5xx or a 429."""
        deadline = deadline or time.monotonic() + self.give_up_s
        body = None
        if json_body is not None:
            body, headers = json_request(json_body, headers)
        delay = 0.05
        while True:
            base = self.endpoints.lobby if service == "lobby" else self.endpoints.match()
            try:
                reply = await fetch(self.session, method, base + path, body=body, headers=headers)
                if reply.status < 500 and reply.status != 429:
                    return reply
                self.errors[str(reply.status)] += 1
            except TRANSPORT_ERRORS as error:
                self.errors[type(error).__name__] += 1
                if service == "match":
                    self.endpoints.mark_down(base)
            if time.monotonic() > deadline:
                self.gave_up += 1
                raise GaveUp(f"{method} {path}")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)

    def _unexpected(self, what: str, reply: Reply) -> None:
        self.unexpected.append(f"{what}: {reply.status} {reply.text[:300]}")

    # --- tables --------------------------------------------------------------------------

    async def open_table(
        self,
        game: str,
        players: int,
        options: dict[str, Any] | None = None,
        hosting: dict[str, Any] | None = None,
    ) -> tuple[str, str, list[str]]:
        """Create, seat and start a table (each step retried under its own key), hosted as
        ``hosting`` says if given; returns the table id, the match id and the seat tokens once
        the start is acknowledged."""
        body: dict[str, Any] = {"game": game, "seats": players, "options": options or {}}
        if hosting is not None:
            body["hosting"] = hosting
        key = {"Idempotency-Key": uuid.uuid4().hex}
        created = await self.send("lobby", "POST", "/tables", json_body=body, headers=key)
        if created.status != 201:
            self._unexpected("create table", created)
            raise GaveUp("create table")
        table_id = created.json()["table_id"]
        tokens = []
        for seat in range(players):
            key = {"Idempotency-Key": uuid.uuid4().hex}
            joined = await self.send(
                "lobby",
                "POST",
                f"/tables/{table_id}/seats",
                json_body={"name": f"p{seat}"},
                headers=key,
            )
            if joined.status != 201:
                self._unexpected("join", joined)
                raise GaveUp("join")
            tokens.append(joined.json()["token"])
        headers = {**authorization(tokens[0]), "Idempotency-Key": uuid.uuid4().hex}
        started = await self.send("lobby", "POST", f"/tables/{table_id}/start", headers=headers)
        if started.status not in (200, 201, 202):
            self._unexpected("start", started)
            raise GaveUp("start")
        self.start_answers[started.status] += 1
        match_id = started.json()["match_id"]
        self.tables[table_id] = match_id
        return table_id, match_id, tokens

    async def wait_for_match(self, match_id: str) -> dict[str, Any]:
        """The match once it exists (404 and ``status: creating`` mean not yet), asked less and
        less often: one still creating after the start's wait is waiting for its rules worker."""
        deadline = time.monotonic() + self.match_wait_s
        delay = 0.05
        while True:
            reply = await self.send("match", "GET", f"/matches/{match_id}", deadline=deadline)
            if reply.status == 200:
                info = reply.json()
                if info["status"] != "creating":
                    self.created_version.setdefault(match_id, info["version"])
                    return info
            elif reply.status != 404:
                self._unexpected("get new match", reply)
            if time.monotonic() > deadline:
                self.matches_never_created.append(match_id)
                raise GaveUp(f"match {match_id} never created")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    # --- moves ---------------------------------------------------------------------------

    async def move(
        self, slot: int, match_id: str, tokens: list[str], rng: random.Random
    ) -> dict[str, Any] | None:
        """One random legal move; returns the match as read before it, None once over."""
        info_r = await self.send("match", "GET", f"/matches/{match_id}")
        if info_r.status != 200:
            self._unexpected("get match", info_r)
            raise GaveUp("get match")
        info = info_r.json()
        if info["status"] != "running" or not info["to_move"]:
            return None
        seat = rng.choice(info["to_move"])
        legal_r = await self.send(
            "match", "GET", f"/matches/{match_id}/actions", headers=authorization(tokens[seat])
        )
        if legal_r.status != 200:
            self._unexpected("legal actions", legal_r)
            return info
        legal = legal_r.json()
        if legal["version"] != info["version"] or not legal["actions"]:
            return info  # moved on in between (another process's read): look again
        action = load_policy(rng, legal["actions"])
        key = uuid.uuid4().hex
        body = {"game": info["game"], "expected_version": info["version"], "action": action}
        headers = {**authorization(tokens[seat]), "Idempotency-Key": key}
        self.moves_tried += 1
        path = f"/matches/{match_id}/actions"
        try:
            moved = await self.send("match", "POST", path, json_body=body, headers=headers)
        except BaseException:
            self.unfinished_matches.add(match_id)
            raise
        if moved.status == 201:
            accepted = moved.json()
            types = tuple(str(event.get("type")) for event in accepted["events"])
            self.acks.append(
                Ack(
                    match_id,
                    key,
                    info["version"],
                    accepted["version"],
                    types,
                    time.monotonic(),
                    slot,
                )
            )
        elif moved.status not in DEFINITE_MOVE_ANSWERS or moved.status == 422:
            self._unexpected("move", moved)
        else:
            self.errors[f"move {moved.status}"] += 1
        return info

    async def _slot(self, slot: int, stop: asyncio.Event) -> None:
        rng = random.Random(self.seed * 10_007 + slot)
        game, players = load_game(slot)
        while not stop.is_set():
            try:
                _table, match_id, tokens = await self.open_table(game, players)
                self.slot_of_match[match_id] = slot
                await self.wait_for_match(match_id)
                for _ in range(self.moves_per_match):
                    if stop.is_set() or await self.move(slot, match_id, tokens, rng) is None:
                        break
                    await self._think(stop)
            except GaveUp:
                await asyncio.sleep(0.1)

    async def _think(self, stop: asyncio.Event) -> None:
        if self.think_s:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.think_s)

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(self._slot(slot, stop) for slot in range(self.slots)))

    # --- figures -------------------------------------------------------------------------

    def moves_between(self, start: float, end: float) -> int:
        return sum(1 for ack in self.acks if start <= ack.at < end)

    def recovery_s(self, since: float) -> float | None:
        """From ``since`` to the first acknowledged move of every slot after it (None if a
        slot made none)."""
        firsts: dict[int, float] = {}
        for ack in self.acks:
            if ack.at >= since and ack.slot not in firsts:
                firsts[ack.slot] = ack.at
        if len(firsts) < self.slots:
            return None
        return max(firsts.values()) - since


# --- a match through the lobby -----------------------------------------------------------


async def ok_json(response: Any) -> Any:
    """The body of a successful answer (an aiohttp response, released once read); a failure
    raises with what the server said. msgspec decodes it: the client's own CPU shares the
    cores with the stack it measures."""
    if response.status >= 400:
        raise RuntimeError(
            f"{response.method} {response.url}: {response.status} {await response.text()}"
        )
    return msgspec.json.decode(await response.read())


async def new_match(
    session: Any, lobby: str, players: int, game: str = "hanabi"
) -> tuple[str, list[str]]:
    """Create, seat and start a table of ``game`` through the lobby: its match id and the seat
    tokens (the match may not exist yet: ``wait_for_match``)."""
    async with session.post(f"{lobby}/tables", json={"game": game, "seats": players}) as r:
        table_id = (await ok_json(r))["table_id"]
    tokens = []
    for seat in range(players):
        body = {"name": f"bench{seat}"}
        async with session.post(f"{lobby}/tables/{table_id}/seats", json=body) as r:
            tokens.append((await ok_json(r))["token"])
    auth = {"Authorization": f"Bearer {tokens[0]}"}
    async with session.post(f"{lobby}/tables/{table_id}/start", headers=auth) as r:
        return (await ok_json(r))["match_id"], tokens


async def wait_for_match(session: Any, url: str) -> Any:
    """The match once the match service has created it (it is asked through Redis; until
    then it is missing or shows the ``creating`` state)."""
    for _ in range(500):
        async with session.get(url) as response:
            if response.status != 404:
                info = await ok_json(response)
                if info["status"] != "creating":
                    return info
        await asyncio.sleep(0.02)
    raise RuntimeError(f"{url} was never created")


def long_game_policy(rng: random.Random, actions: list[Any]) -> Any:
    """Any legal move, but plays seldom, so matches run long instead of striking out at once."""
    quiet = [action for action in actions if action["type"] != "PlayCard"]
    if quiet and rng.random() < 0.85:
        return rng.choice(quiet)
    return rng.choice(actions)


# --- the local services' processes ---------------------------------------------------------


def service_pids() -> dict[str, list[int]]:
    """The pids of the local lobby, match and rules processes (``playtable <service>``)."""
    found: dict[str, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if CLI_MODULE in argv and len(argv) > 2:
            service = argv[argv.index(CLI_MODULE) + 1].decode()
            if service in ("lobby", "match", "rules"):
                found.setdefault(service, []).append(int(entry.name))
    return found


def rss_kib(pid: int) -> int:
    """A process's resident memory in KiB (0 if its status shows none)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0
