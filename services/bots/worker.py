"""``playtable bots``: plays the bot seats of running matches through the match API, as a client
of those seats would: it reads the seat's view and legal actions, asks the bot's policy, and
posts the move.

Postgres says which bots may move (the match service's read model ``match_bot_turns``); the match
service's word that a bot may move (``BotTurnDue`` on ``BOT_TURNS_STREAM``, published only by
matches with a bot seat) only makes this process look sooner, so matches without bots cost it
nothing. Every bot seat among the seats to move plays its turn, each its own: where several may
move at once (Breaking News' vote), the first move makes the others' turns stale, and those
still to move play again at the new version. Any number of copies may run. A move is sent with
the version it was chosen at and an Idempotency-Key named by its match, seat and version, and
the policy's random generator is seeded with the same name, so copies that play one turn send
one move, which the match records once: the others get its answer again, or 409.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import aiohttp
import msgspec
import psycopg
from psycopg.rows import args_row
from psycopg_pool import AsyncConnectionPool

from services.bots.policies import Policy
from services.bots.policies.registry import POLICIES
from services.bots.schemas import Move, SeatActions, SeatView
from shared.domain.hosting import bot_secret, bot_token
from shared.domain.messages import BotTurnDue
from shared.edge.idempotency import REPLAYED_HEADER
from shared.edge.runtime import run_until_signalled
from shared.infra import tracing
from shared.infra.bus import Consumer, OutageLog, redis_client
from shared.infra.db import new_pool, open_when_reachable
from shared.infra.metrics import BOT_MOVES, Metrics, pool_probe, serve_metrics, streams_probe
from shared.infra.readiness import ReadyChecks, ready_checks
from shared.infra.settings import Settings
from shared.infra.streams import BOT_TURNS_STREAM

log = logging.getLogger(__name__)

BOTS_GROUP = "bots"
HTTP_TIMEOUT_S = 10.0
"""Longer than the match service waits for the rules (``rules_timeout_s``), so its 503 comes
back rather than a timeout of ours."""
KEEPALIVE_S = 3.0
"""Idle connections are dropped before the match service's keep-alive (5 s) ends them: one
reused just as the server closes it would fail the turn."""
STOP_GRACE_S = 3.0
"""How long a stopping process lets the turns under way finish before cutting them (a turn
cut short is played again later, under the same Idempotency-Key)."""
WAITED_KEPT = 10_000
"""How many turns a bot let pass this process remembers (the oldest are forgotten first, and at
worst played again)."""


_IN_MATCHES = """
select match_id, game, version, to_move, bots from match_bot_turns where match_id = any(%s)
"""
_WAITING = """
select match_id, game, version, to_move, bots from match_bot_turns
where updated_at < now() - make_interval(secs => %s)
"""
"""The bots' turns that have waited a while: the others are being played, woken by their
events. ``match_bot_turns`` is the match service's read model of the running matches where a
bot seat is among the seats to move (docs/architecture.md)."""

_bots_decoder = msgspec.json.Decoder(dict[int, str])
_due_decoder = msgspec.json.Decoder(BotTurnDue)
_view_decoder = msgspec.json.Decoder(SeatView)
_actions_decoder = msgspec.json.Decoder(SeatActions)


class Turn(msgspec.Struct, frozen=True):
    """``seat`` of ``match_id`` is to move at ``version``, and ``bot`` plays it."""

    match_id: str
    version: int
    seat: int
    game: str
    bot: str

    @property
    def key(self) -> str:
        """Names the move: every attempt at this turn, in any copy, sends the same one."""
        return f"{self.match_id}:{self.seat}:{self.version}"

    @property
    def idempotency_key(self) -> str:
        return f"bot:{self.key}"

    def rng(self) -> random.Random:
        return random.Random(self.key)


class BotTurnRow(NamedTuple):
    """A row of ``match_bot_turns`` as the bots read it."""

    match_id: str
    game: str
    version: int
    to_move: list[int]
    bots: bytes
    """The bot of each bot seat (JSON, by seat)."""


def due_turns(row: tuple[Any, ...]) -> list[Turn]:
    """The bots' turns in a ``match_bot_turns`` row (match_id, game, version, to_move, bots): one
    for each seat to move that a bot plays, whatever its place among them (the voters of a
    Breaking News tie vote at once). Whether a seat that may move wants to is its policy's say
    (a bot does not interrupt a story it did not hear fall silent)."""
    match_id, game, version, to_move, bots = row
    seats = _bots_decoder.decode(bots)
    return [Turn(match_id, version, seat, game, seats[seat]) for seat in to_move if seat in seats]


class Answer(msgspec.Struct, frozen=True):
    """An answer of the match API, read whole (so its connection goes back to the pool)."""

    status: int
    body: bytes
    replayed: bool = False
    """The match service repeated the answer it gave the same Idempotency-Key before."""


class BotPlayer:
    """Plays a turn with the seat's token: the seat's view and legal actions at the turn's
    version, the policy's choice, the move at that version."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        match_url: str,
        secret: bytes,
        policies: dict[str, Policy],
    ) -> None:
        self._session = session
        self._match_url = match_url.rstrip("/")
        self._secret = secret
        self._policies = policies
        self._outage = OutageLog(log, "bots", "the match service")

    async def play(self, turn: Turn) -> str:
        """Play ``turn``; its outcome (see ``BOT_MOVES``)."""
        try:
            outcome = await self._play(turn)
        except (aiohttp.ClientError, TimeoutError) as error:
            self._outage.failed(error)
            outcome = "failed"
        else:
            if outcome != "failed":
                self._outage.succeeded()
        BOT_MOVES.labels(turn.game, outcome).inc()
        return outcome

    async def _play(self, turn: Turn) -> str:
        path = f"/matches/{turn.match_id}"
        token = bot_token(self._secret, turn.match_id, turn.seat)
        seat = {"Authorization": f"Bearer {token}"}
        shown, listed = await asyncio.gather(
            self._call("GET", path, seat),
            self._call("GET", f"{path}/actions?version={turn.version}", seat),
        )
        for answer in (shown, listed):
            if answer.status != 200:
                return self._unexpected(turn, answer)
        view, actions = _view_decoder.decode(shown.body), _actions_decoder.decode(listed.body)
        if view.version != turn.version or actions.version != turn.version:
            return "stale"
        try:
            action = self._policies[turn.bot](view.view, actions.actions, turn.rng())
        except Exception:
            log.exception("bot %s failed to choose (turn %s)", turn.bot, turn.key)
            return "refused"
        if action is None:
            return "waited"  # the seat may move but its bot would not (see ``Turns``)
        moved = await self._call(
            "POST",
            f"{path}/actions",
            {**seat, "Content-Type": "application/json", "Idempotency-Key": turn.idempotency_key},
            msgspec.json.encode(Move(turn.game, turn.version, action)),
        )
        if moved.status != 201:
            return self._unexpected(turn, moved)
        return "stale" if moved.replayed else "moved"  # replayed: another copy moved first

    async def _call(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> Answer:
        url = self._match_url + path
        async with self._session.request(method, url, headers=headers, data=body) as response:
            replayed = response.headers.get(REPLAYED_HEADER) == "true"
            return Answer(response.status, await response.read(), replayed)

    def _unexpected(self, turn: Turn, answer: Answer) -> str:
        status, text = answer.status, answer.body.decode(errors="replace")
        if status >= 500 or status == 429:
            self._outage.failed(RuntimeError(f"{status} {text[:200]}"))
            return "failed"
        if status == 409:
            return "stale"
        if status == 422:
            log.error("the rules refused bot %s's move (turn %s): %s", turn.bot, turn.key, text)
            return "refused"
        # The seat given back to a player meanwhile; or, every time, another bot secret.
        log.warning(
            "the match service refused bot %s %d (turn %s): %s", turn.bot, status, turn.key, text
        )
        return "denied"


class Turns:
    """The turns this process is playing: each at most once at a time, ``concurrency`` at
    once (the others wait for a slot). A turn its bot let pass (``waited``) is not played
    again: its view, actions and random generator are those of its version, so the bot would
    choose the same (the sweep would otherwise ask it again every ``sweep_s`` while, say, a
    person tells a story the bot may only interrupt)."""

    def __init__(self, play: Callable[[Turn], Awaitable[object]], concurrency: int) -> None:
        self._play = play
        self._slots = asyncio.Semaphore(concurrency)
        self._playing: dict[Turn, asyncio.Task[None]] = {}
        self._waited: OrderedDict[Turn, None] = OrderedDict()

    def start(self, turn: Turn) -> None:
        if turn in self._playing or turn in self._waited:
            return
        task = asyncio.create_task(self._run(turn), name=f"bot turn {turn.key}")
        self._playing[turn] = task
        task.add_done_callback(lambda _: self._playing.pop(turn, None))

    async def _run(self, turn: Turn) -> None:
        async with self._slots:
            try:
                outcome = await self._play(turn)
            except Exception:
                log.exception("bot turn %s failed", turn.key)
            else:
                if outcome == "waited":
                    self._remember_waited(turn)

    def _remember_waited(self, turn: Turn) -> None:
        self._waited[turn] = None
        if len(self._waited) > WAITED_KEPT:
            self._waited.popitem(last=False)

    async def finish(self, grace_s: float) -> None:
        """Let the turns under way end, and cut those still going after ``grace_s``."""
        if not self._playing:
            return
        _done, cut = await asyncio.wait(list(self._playing.values()), timeout=grace_s)
        for task in cut:
            task.cancel()
        await asyncio.gather(*cut, return_exceptions=True)


class TurnFinder:
    """Asks Postgres which bots are to move: in one match when its turn wakes this process,
    and, every ``sweep_s``, in every match where a bot has waited that long (its wake-up was
    lost with Redis, or went to a copy killed since, or its move failed)."""

    def __init__(self, pool: AsyncConnectionPool, turns: Turns, sweep_s: float) -> None:
        self._pool = pool
        self._turns = turns
        self._sweep_s = sweep_s

    async def woken(self, entries: list[tuple[str, bytes]]) -> None:
        """Bots' turns were published (a read's worth, looked at in one query). The consumer
        group shares them out among the copies, and only a match's newest starts its turn, so
        one copy plays it."""
        newest: dict[str, int] = {}
        for _entry_id, payload in entries:
            due = _due_decoder.decode(payload)
            newest[due.match_id] = max(due.version, newest.get(due.match_id, 0))
        async with self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=args_row(BotTurnRow))
            rows = await (await cursor.execute(_IN_MATCHES, (list(newest),))).fetchall()
        for row in rows:
            if row.version == newest[row.match_id]:
                self._start(row)

    async def woken_by(self, entry_id: str, payload: bytes) -> None:
        """One turn alone: the consumer's retry, entry by entry, of a read that failed."""
        await self.woken([(entry_id, payload)])

    async def sweep(self, stop: asyncio.Event) -> None:
        outage = OutageLog(log, "bots sweep", "postgres")
        while not stop.is_set():
            try:
                async with self._pool.connection() as conn:
                    cursor = conn.cursor(row_factory=args_row(BotTurnRow))
                    rows = await (await cursor.execute(_WAITING, (self._sweep_s,))).fetchall()
            except psycopg.Error as error:
                outage.failed(error)
            else:
                outage.succeeded()
                for row in rows:
                    self._start(row)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._sweep_s)

    def _start(self, row: tuple[Any, ...]) -> None:
        for turn in due_turns(row):
            self._turns.start(turn)


async def serve(settings: Settings, stop: asyncio.Event) -> None:
    """Bootstrap: Postgres (the turns, the bots' key), the match API's client, the wake-ups
    from the published bots' turns and the sweep, until stopped."""
    tracing.configure(settings, "bots")
    keyring = settings.keyring()  # the bots' key is stored sealed: no keyring, no start
    async with contextlib.AsyncExitStack() as resources:
        pool = new_pool(settings.database_url, min_size=1, max_size=settings.db_pool_max)
        resources.push_async_callback(pool.close)
        redis = redis_client(settings)
        resources.push_async_callback(redis.aclose)
        if settings.metrics_port:
            metrics = Metrics(
                {
                    "pool": pool_probe(lambda: pool),
                    "streams": streams_probe(
                        lambda: redis, settings.stream_prefix, [(BOT_TURNS_STREAM, BOTS_GROUP)]
                    ),
                }
            )
            ready = ReadyChecks(ready_checks(lambda: pool, lambda: redis))
            exporter = await serve_metrics(
                metrics, settings.host, settings.metrics_port, ready.failed
            )
            resources.push_async_callback(exporter.cleanup)
        if not await open_when_reachable(pool, settings.database_url, stop, "starting"):
            return
        async with pool.connection() as conn:
            secret = await bot_secret(conn, settings.bot_secret, keyring)
        session = await resources.enter_async_context(
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=settings.bots_concurrency, keepalive_timeout=KEEPALIVE_S
                ),
                timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT_S),
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        )
        player = BotPlayer(session, settings.match_base_url, secret, POLICIES)
        turns = Turns(player.play, settings.bots_concurrency)
        resources.push_async_callback(turns.finish, STOP_GRACE_S)
        finder = TurnFinder(pool, turns, settings.bots_sweep_s)
        stream = settings.stream(BOT_TURNS_STREAM)
        consumer = Consumer(
            redis,
            stream,
            BOTS_GROUP,
            settings.instance_id,
            finder.woken_by,
            dead_after_ms=settings.dead_consumer_after_ms,
            batch_handler=finder.woken,
            # made by its first read (Redis may not answer yet), at the stream's end: the
            # sweep finds the turns already due
            start_id="$",
        )
        log.info("bots %s playing through %s", settings.instance_id, settings.match_base_url)
        await asyncio.gather(consumer.run(stop), finder.sweep(stop))


def run_bots(settings: Settings) -> None:
    """``playtable bots``: until SIGINT or SIGTERM."""
    run_until_signalled(serve, settings)
