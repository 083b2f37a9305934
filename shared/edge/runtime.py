"""The connections a service holds while it runs, opened and closed in one place."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool

from shared.domain.rules_api import Ping, Rejected, RulesRequest
from shared.edge.errors import Problem
from shared.edge.guard import action_refused
from shared.edge.problems import PROBLEM_TYPES, RULES_REFUSAL
from shared.infra.bus import Bus, Consumer, redis_client
from shared.infra.db import new_pool, open_when_reachable
from shared.infra.eventstore import EventStore
from shared.infra.keycache import cache_keys
from shared.infra.metrics import Metrics, outbox_probe, pool_probe, streams_probe
from shared.infra.outbox import OutboxRelay
from shared.infra.readiness import ReadyCheck, ready_checks
from shared.infra.rpc import RulesClient, RulesUnavailable
from shared.infra.secretbox import Keyring
from shared.infra.settings import Settings, stream_name
from shared.infra.streams import RULES_REQUESTS_STREAM, rules_replies_stream

STOP_GRACE_S = 3.0
"""How long closing waits for the background tasks to end by themselves (the longest blocking
read, the feed tail's, is 2 s) before cancelling the rest."""

log = logging.getLogger(__name__)


def rejection_problem(rejected: Rejected) -> Problem:
    """The problem for a rules refusal: its ``type`` is the code, its title says what kind of
    refusal it is (a refusal no rule of play decides, such as a bad option, has its own). The
    rules of play refuse with 422; an action that is not of its game's schema is a malformed
    request, 400, as the contract's schema of the move has it."""
    code = rejected.code.replace("_", "-")
    if code == "invalid-request":
        return action_refused(rejected.detail)
    documented = PROBLEM_TYPES.get(code)
    title = documented.title if documented is not None else RULES_REFUSAL
    return Problem(422, code, title, rejected.detail)


def rules_client(redis: redis_async.Redis, settings: Settings) -> RulesClient:
    """This process's client of the rules service, with a reply stream of its own."""
    return RulesClient(
        redis,
        request_stream=settings.stream(RULES_REQUESTS_STREAM),
        reply_stream=settings.stream(rules_replies_stream(settings.instance_id)),
        timeout_s=settings.rules_timeout_s,
    )


async def ask_rules(rules: RulesClient, request: RulesRequest, reply_type: Any) -> Any:
    """Ask the rules service; its refusal is a 422 problem, its silence a 503."""
    try:
        reply = await rules.call(request, reply_type)
    except RulesUnavailable as error:
        raise Problem(503, "rules-unavailable", "Rules service unavailable", str(error)) from None
    if isinstance(reply, Rejected):
        raise rejection_problem(reply)
    return reply


def rules_check(rules: Callable[[], RulesClient]) -> ReadyCheck:
    """/ready's question to the rules service: a worker answers it at once."""

    async def ping() -> None:
        await rules().call(Ping(), bool)

    return ping


class Runtime:
    """Postgres pool (and the cache of the app keys read through it), event store, Redis, bus,
    outbox relay and rules client of one process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.pool: AsyncConnectionPool
        self.store: EventStore
        self.redis: redis_async.Redis
        self.bus: Bus
        self.relay: OutboxRelay
        self.rules: RulesClient
        self.keyring: Keyring
        """The secrets keyring (``PLAYTABLE_SECRET_KEYS``) of a service started ``sealing``."""
        self.groups: list[tuple[str, str]] = []
        """The consumer groups this process belongs to: (stream name, group)."""
        self._opened: list[Callable[[], Awaitable[None]]] = []
        """How to close what ``start`` opened, in order: a start that failed half way closes
        only that much."""
        self.metrics = Metrics(
            {
                "pool": pool_probe(lambda: self.pool),
                "outbox": outbox_probe(lambda: self.pool),
                "streams": streams_probe(lambda: self.redis, settings.stream_prefix, self.groups),
            }
        )
        self.ready = ready_checks(lambda: self.pool, lambda: self.redis)

    async def start(
        self, *, sealing: bool = False, then: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Make every client, then return once Postgres answered and the schema is up to date
        and ``then`` (the service's own background work) has run, or as soon as Postgres did
        not answer: the process then serves, not ready (``/ready`` says what does not answer),
        and goes on in the background until it does; a Redis that does not answer only keeps
        it not ready. A service that seals secrets (``sealing``) first reads its keyring, and
        refuses to start without one."""
        settings = self.settings
        if sealing:
            self.keyring = settings.keyring()
        self.pool = new_pool(
            settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max
        )
        self._opened.append(self.pool.close)
        self.store = EventStore(self.pool)
        self.redis = redis_client(settings)
        self._opened.append(self.redis.aclose)
        self.bus = Bus(self.redis)
        self.relay = OutboxRelay(self.pool, self.bus)
        self.rules = rules_client(self.redis, settings)
        await self.rules.start()
        self._opened.append(self.rules.stop)
        started, unreachable = asyncio.Event(), asyncio.Event()
        self.spawn("start", self._once_postgres_answers(then, started, unreachable))
        await first_of(started, unreachable)

    async def _once_postgres_answers(
        self,
        then: Callable[[], Awaitable[None]] | None,
        started: asyncio.Event,
        unreachable: asyncio.Event,
    ) -> None:
        database_url = self.settings.database_url
        try:
            if not await open_when_reachable(
                self.pool, database_url, self.stop, "starting", unreachable
            ):
                return  # stopped first
            self.spawn("api-key-cache", cache_keys(self.pool).listen(self.stop))
            self.spawn("outbox-relay", self.relay.run(self.stop))
            if then is not None:
                await then()
        finally:
            started.set()

    async def ask_rules(self, request: RulesRequest, reply_type: Any) -> Any:
        return await ask_rules(self.rules, request, reply_type)

    def spawn(self, name: str, job: Awaitable[None]) -> None:
        async def guarded() -> None:
            try:
                await job
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background task %s died", name)

        self._tasks.append(asyncio.create_task(guarded(), name=name))

    async def consume(
        self,
        stream: str,
        group: str,
        handler: Callable[[str, bytes], Awaitable[None]],
        *,
        concurrent: bool = False,
    ) -> None:
        """Join ``group`` on ``stream`` and hand each entry to ``handler`` until shutdown (the
        entries of one read side by side if ``concurrent``: ``Consumer``). The group is made
        by the first read that finds it missing: Redis may not answer yet."""
        self.groups.append((stream_name(self.settings.stream_prefix, stream), group))
        consumer = Consumer(
            self.redis,
            stream,
            group,
            self.settings.instance_id,
            handler,
            dead_after_ms=self.settings.dead_consumer_after_ms,
            concurrent=concurrent,
        )
        self.spawn(f"consume:{stream}", consumer.run(self.stop))

    async def close(self) -> None:
        """Stop the background tasks, then the clients. Each task ends by itself once its
        current read returns (within a read's block time, or the Redis client's timeout);
        only a task still running after ``STOP_GRACE_S`` is cancelled (redis-py drops the
        connection of a read it cancels, and closing it waits no longer than the connect
        timeout: once unbounded, it hung a cancelled task for good in redis-py 8.1), and one
        the cancel does not end either within as long is left behind (closing must not hang
        on it)."""
        self.stop.set()
        if self._tasks:
            _done, pending = await asyncio.wait(self._tasks, timeout=STOP_GRACE_S)
            for task in pending:
                task.cancel()
            if pending:
                _done, stuck = await asyncio.wait(pending, timeout=STOP_GRACE_S)
                if stuck:
                    log.warning("%d background tasks did not stop: left behind", len(stuck))
        while self._opened:
            await self._opened.pop()()


async def first_of(*events: asyncio.Event) -> None:
    """Until one of ``events`` is set."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def run_until_signalled(
    serve: Callable[[Settings, asyncio.Event], Awaitable[None]], settings: Settings
) -> None:
    """Run a process without HTTP (``serve(settings, stop)``) on uvloop until SIGINT or SIGTERM
    sets ``stop``, so it ends its work cleanly."""
    import uvloop

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await serve(settings, stop)

    uvloop.run(main())
