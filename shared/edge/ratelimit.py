"""Rate limits and live-feed limits of the public services, kept in Redis.

Every request takes a token from a bucket of its client's address and class of route (``read``,
``write`` or ``feed``) and, when it carries an ``X-API-Key``, from a bucket of that key (its
SHA-256: the key itself is never stored): one Lua script checks both buckets and takes from
both or neither, on Redis's clock, so every process of a deployment shares them. A bucket left
alone long enough to be full again expires, and a client just refused is refused again
without asking Redis until a token can be back. A client also holds one slot per live feed
open, leased in a sorted set and renewed while the feed lasts, so the slots of a process that
died free themselves.

A process takes a client's tokens a few at a time, so that a client well under its limits
costs one script call per up to ``ALLOWANCE_MAX`` requests instead of one per request: while
the client's buckets are more than half full, a call takes as many tokens as the client spent
lately (twice as many as last time while it spends them all, ``ALLOWANCE_MAX`` at most), and
the process's next requests of that client and class of route spend them without asking
Redis, within ``ALLOWANCE_S`` (then the ones left lapse). In the lower half of a bucket a call
takes only the tokens of the requests waiting for it, so near the edge Redis counts each
request as it comes and no process hoards the last tokens. Concurrent requests of one client
in a process wait for one call rather than each making its own (it takes a token for each of
them, up to ``ALLOWANCE_MAX``). A client making a request a second or less to a process gains
nothing: each of its requests is still one call.

Tokens are taken before they are spent, and a bucket may refill meanwhile: over any ``T``
seconds, a client is admitted at most ``burst + rate * T`` requests (the bucket's own bound)
plus the tokens processes held at the start: at most ``ALLOWANCE_MAX - 1`` (31) per process
and set of buckets (an address, or an address and a key), and never more than ``rate *
ALLOWANCE_S`` in all, as a token is spent within ``ALLOWANCE_S`` of being taken. That is a
constant: the sustained rate stays the bucket's. A token is never spent twice; tokens that
lapse unspent count as spent (the client's loss, fewer than ``ALLOWANCE_MAX`` at a time). The
``RateLimit`` header's remaining count is what Redis had left at the process's last call plus
the tokens the process still holds: approximate (it ignores the refill since, and what other
processes took since), exact for a client of one process near the edge.

Redis is a guard here, not the truth: when it does not answer, requests pass (one warning per
outage) and the limiter leaves Redis alone for a moment, so an outage costs a request at most
its own short timeouts, and mostly nothing. While it is out, the limiter pings Redis itself
every ``PAUSE_AFTER_ERROR_S``, so the outage's end is logged once however few requests come
after it; an error while the process stops is not an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

import redis.asyncio as redis_async
from litestar.types import Scope
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript

from shared.edge.addresses import (
    app_key_bucket,
    client_address,
    resolved,
    trusted_proxies,
)
from shared.edge.buckets import (
    ALLOWANCE_MAX,
    TAKE_TOKENS,
    Allowance,
    Policy,
    Refusal,
    policies,
    route_class,
)
from shared.edge.contract import DOCS_ASSETS
from shared.edge.errors import Problem
from shared.edge.feed_slots import RENEW_FEED_SLOTS, TAKE_FEED_SLOT, FeedSlot, Together
from shared.infra.bus import TRANSIENT_ERRORS, OutageLog
from shared.infra.settings import Settings

log = logging.getLogger(__name__)

EXEMPT_PATHS = frozenset({"/health", "/ready", "/metrics"})
"""Never limited: load balancers, orchestrators and Prometheus poll them."""
REDIS_TIMEOUT_S = 0.25
"""Connect and read timeout of the limiter's own Redis client: a Redis that does not answer
may delay a request this long, never more (no retries)."""
REDIS_CONNECTIONS = 32
"""The limiter's connections to Redis: requests beyond wait for one (up to ``REDIS_TIMEOUT_S``)
rather than opening more (a burst of thousands of feeds once ran out of redis-py's 100)."""
PAUSE_AFTER_ERROR_S = 1.0
"""After a Redis error, requests pass unchecked this long before Redis is tried again; the
limiter's own ping tries it this often until it answers."""
FEED_LEASE_S = 30.0
"""A live feed's slot lapses this long after it was last renewed (its process died)."""
FEED_RETRY_AFTER_S = 5
"""What a client refused a feed slot is asked to wait: slots free only as feeds end."""
RENEWED_AT_ONCE = 1000
"""Leases renewed by one script call (or freed by one command): a process's thousands of feeds
in a few calls, none of which holds Redis up for long."""
REMEMBERED_REFUSALS = 10_000
"""Clients refused lately that are refused again without asking Redis until a token is back
in their buckets (nothing brings it sooner): a flood costs Redis about twice the rate it is
allowed, not its own."""
TRUSTED_NAMES_EVERY_S = 10.0
"""How often the host names in ``trusted_proxies`` are looked up again."""
ALLOWANCE_S = 1.0
"""Tokens a process took and has not spent lapse this long after it asked for them."""
REMEMBERED_ALLOWANCES = 10_000
"""Clients (and classes of route) whose tokens a process holds: beyond, a new client's
requests are counted by Redis one at a time until the lapsed ones are forgotten."""


class RateLimiter:
    """Checks each request against its client's buckets; one per process, opened on startup."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._policies = policies(settings)
        self._trusted_networks, self._trusted_names = trusted_proxies(settings.trusted_proxies)
        self._trusted = self._trusted_networks
        """The networks and the names' addresses as last looked up."""
        self._resolving: asyncio.Task[None] | None = None
        self._dns_outage = OutageLog(log, "rate limiter", f"DNS of {settings.trusted_proxies}")
        self._redis: redis_async.Redis | None = None
        self._outage = OutageLog(log, "rate limiter")
        self._paused_until = 0.0
        self._probing: asyncio.Task[None] | None = None
        """Pinging Redis until it answers again, while it is out."""
        self._refusals: dict[tuple[str, ...], Refusal] = {}
        self._allowances: dict[tuple[str, ...], Allowance] = {}
        """The tokens this process holds, by the buckets they came from."""
        self._allowances_pruned_at = 0.0
        self._take_tokens: AsyncScript | None = None
        self._take_feed_slot: AsyncScript | None = None
        self._renew_feed_slots: AsyncScript | None = None
        self._leases: dict[str, tuple[str, ...]] = {}
        """The live feeds' leases of this process, and the sets each is in."""
        self._renewing: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._slots_taken = Together(self._take_slots)
        self._slots_freed = Together(self._free_slots)

    async def start(self) -> None:
        """Its own client (short timeouts and no retries, so a Redis outage never stalls) and
        one task renewing the leases of all the process's live feeds."""
        connections = redis_async.BlockingConnectionPool.from_url(
            self._settings.redis_url,
            max_connections=REDIS_CONNECTIONS,
            timeout=REDIS_TIMEOUT_S,
            socket_connect_timeout=REDIS_TIMEOUT_S,
            socket_timeout=REDIS_TIMEOUT_S,
        )
        self._redis = redis_async.Redis(connection_pool=connections, retry=Retry(NoBackoff(), 0))
        self._take_tokens = self._redis.register_script(TAKE_TOKENS)
        self._take_feed_slot = self._redis.register_script(TAKE_FEED_SLOT)
        self._renew_feed_slots = self._redis.register_script(RENEW_FEED_SLOTS)
        self._stopping = asyncio.Event()
        self._renewing = asyncio.create_task(self._renew_leases())
        if self._trusted_names:
            await self._look_up_trusted_names()
            self._resolving = asyncio.create_task(self._keep_trusted_names())

    async def _look_up_trusted_names(self) -> None:
        """The trusted proxies' names' addresses; a failed look-up keeps the last ones."""
        try:
            addresses = await resolved(self._trusted_names)
        except OSError as error:
            self._dns_outage.failed(error)
        else:
            self._dns_outage.succeeded()
            self._trusted = self._trusted_networks + addresses

    async def _keep_trusted_names(self) -> None:
        """Look the names up again every ``TRUSTED_NAMES_EVERY_S``: a gateway's address
        changes as it restarts."""
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), TRUSTED_NAMES_EVERY_S)
            await self._look_up_trusted_names()

    async def close(self) -> None:
        """Stop renewing, then close the client. The renewal ends by itself (its Redis calls
        time out within ``REDIS_TIMEOUT_S``), so it is cancelled only if it has not ended
        after that, and not waited for: a task cancelled inside a redis-py read closes that
        connection, which waited unbounded on a server that did not answer (redis-py 8.1; the
        connect timeout bounds it now)."""
        self._stopping.set()  # from now on an error is the stop's, not an outage
        if self._probing is not None:
            self._probing.cancel()
            self._probing = None
        if self._renewing is not None:
            _ended, stuck = await asyncio.wait({self._renewing}, timeout=2 * REDIS_TIMEOUT_S)
            for task in stuck:
                task.cancel()
        if self._resolving is not None:
            self._resolving.cancel()
            self._resolving = None
        if self._redis is not None:
            await self._redis.aclose()
            await self._redis.connection_pool.disconnect()
        self._redis = self._take_tokens = self._take_feed_slot = self._renew_feed_slots = None
        self._renewing = None
        self._allowances = {}  # closed: nothing is counted, not even with tokens held

    async def admit(self, scope: Scope) -> list[tuple[bytes, bytes]] | None:
        """Take the request's tokens, or raise the 429 problem. Answers carry the bucket's
        state: the ``RateLimit``/``RateLimit-Policy`` headers returned, for the answer to add
        (None: none, the request passed unchecked)."""
        path = scope["path"]
        if path in EXEMPT_PATHS or path.startswith(f"{DOCS_ASSETS}/"):
            return None
        policy = self._policies[route_class(scope["method"], path)]
        keys = self._keys(policy.name, scope)
        now = time.monotonic()
        refusal = self._refusals.get(keys)
        if refusal is not None and now < refusal.until:
            raise policy.refused(refusal)
        allowance = self._allowances.get(keys)
        if allowance is not None and allowance.tokens and now < allowance.until:
            return allowance.spend(policy)  # the common case: no Redis
        return await self._take(policy, keys, allowance or self._new_allowance(keys, now))

    async def _take(
        self, policy: Policy, keys: tuple[str, ...], allowance: Allowance
    ) -> list[tuple[bytes, bytes]] | None:
        """A token of ``allowance``, taken from Redis when it has none: the answer's headers,
        None when Redis fails (the request passes). While a call is in flight for the same
        buckets, wait for its tokens (it takes one for each request waiting when it starts)."""
        while (taking := allowance.taking) is not None:
            allowance.waiting += 1
            try:
                await asyncio.shield(taking)
            finally:
                allowance.waiting -= 1
            refusal = self._refusals.get(keys)
            now = time.monotonic()
            if refusal is not None and now < refusal.until:
                raise policy.refused(refusal)
            if allowance.tokens and now < allowance.until:
                return allowance.spend(policy)
        asked_at = time.monotonic()
        allowance.plan(asked_at)
        need = min(ALLOWANCE_MAX, 1 + allowance.waiting)
        ask = max(need, allowance.want)
        taking = allowance.taking = asyncio.get_running_loop().create_future()
        try:
            taken = await self._run(
                self._take_tokens, keys, (policy.rate_per_s, policy.burst, need, ask)
            )
        finally:  # the requests waiting spend its tokens, or try again
            allowance.taking = None
            taking.set_result(None)
        if taken is None:
            return None
        tokens, left, wait_ms, full_in_ms = taken
        if not tokens:
            raise policy.refused(self._remember_refusal(keys, wait_ms, full_in_ms))
        allowance.tokens = allowance.taken = tokens
        allowance.left = left
        allowance.full_in_s = full_in_ms / 1000
        allowance.until = asked_at + ALLOWANCE_S  # Redis took them after ``asked_at``
        return allowance.spend(policy)

    def _new_allowance(self, keys: tuple[str, ...], now: float) -> Allowance:
        """A client's allowance, kept while there is room (lapsed ones are forgotten at most
        once per ``ALLOWANCE_S``), else used for one request only."""
        allowance = Allowance()
        if len(self._allowances) >= REMEMBERED_ALLOWANCES and now > self._allowances_pruned_at:
            self._allowances_pruned_at = now + ALLOWANCE_S
            self._allowances = {
                k: known
                for k, known in self._allowances.items()
                if known.until > now or known.taking is not None
            }
        if len(self._allowances) < REMEMBERED_ALLOWANCES:
            self._allowances[keys] = allowance
        return allowance

    def _remember_refusal(self, keys: tuple[str, ...], wait_ms: int, full_in_ms: int) -> Refusal:
        now = time.monotonic()
        refusal = Refusal(until=now + wait_ms / 1000, full_at=now + full_in_ms / 1000)
        if len(self._refusals) >= REMEMBERED_REFUSALS:
            self._refusals = {k: known for k, known in self._refusals.items() if known.until > now}
        if len(self._refusals) < REMEMBERED_REFUSALS:
            self._refusals[keys] = refusal
        return refusal

    async def take_feed_slot(self, scope: Scope) -> FeedSlot:
        """One of the client's live-feed slots (of its address, and of its app key), held
        until released; raise the 429 problem when every slot is taken."""
        limit = self._settings.max_feeds_per_client
        keys = self._keys("live-feeds", scope)
        lease = uuid.uuid4().hex
        lease_ms = int(FEED_LEASE_S * 1000)
        taken = await self._slots_taken((keys, (limit, lease_ms, lease)))
        if taken is None:
            return FeedSlot()  # Redis is down: not counted
        if not taken:
            raise Problem(
                429,
                "rate-limited",
                "Rate limited",
                f"this client has {limit} live feeds open, the most it may: close one first",
                headers={
                    "Retry-After": str(FEED_RETRY_AFTER_S),
                    "RateLimit-Policy": f'"live-feeds";q={limit};qu="concurrent-requests"',
                    "RateLimit": '"live-feeds";r=0',
                },
            )
        self._leases[lease] = keys
        return FeedSlot(self, lease)

    async def free_feed_slot(self, lease: str) -> None:
        """Give a slot back (even while the feed's task is being cancelled)."""
        await self._slots_freed((self._leases.pop(lease), lease))

    async def _take_slots(self, calls: list[ScriptCall]) -> list[Any]:
        """Feed slots asked for together (a burst of feeds opening, a client's restart): one
        round trip, where one call each ran the connections out and, failing open, counted
        none of them. None for each while Redis fails."""
        script = self._take_feed_slot
        if script is None or time.monotonic() < self._paused_until:
            return [None] * len(calls)
        return await self._pipelined(script, calls)

    async def _free_slots(self, freed: list[tuple[tuple[str, ...], str]]) -> list[None]:
        """Slots given back together (thousands of feeds close at once when a client
        restarts): one round trip."""
        by_key: dict[str, list[str]] = {}
        for keys, lease in freed:
            for key in keys:
                by_key.setdefault(key, []).append(lease)
        await self._release(by_key)
        return [None] * len(freed)

    async def _renew_leases(self) -> None:
        lease_ms = int(FEED_LEASE_S * 1000)
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), FEED_LEASE_S / 3)
                return
            held = [(key, lease) for lease, keys in self._leases.items() for key in keys]
            for first in range(0, len(held), RENEWED_AT_ONCE):
                keys, leases = zip(*held[first : first + RENEWED_AT_ONCE], strict=True)
                await self._run(self._renew_feed_slots, keys, (lease_ms, *leases))

    async def _release(self, by_key: dict[str, list[str]]) -> None:
        if self._redis is None:
            return
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key, leases in by_key.items():
                    for first in range(0, len(leases), RENEWED_AT_ONCE):
                        pipe.zrem(key, *leases[first : first + RENEWED_AT_ONCE])
                await pipe.execute()
        except TRANSIENT_ERRORS as error:  # the lease lapses by itself
            self._failed(error)

    async def _run(
        self, script: AsyncScript | None, keys: tuple[str, ...], args: tuple[Any, ...]
    ) -> Any:
        """The script's answer; None before ``start`` and while Redis fails (everything then
        passes). redis-py loads a script again when Redis answers NOSCRIPT (after a restart)."""
        if script is None or time.monotonic() < self._paused_until:
            return None
        try:
            answer = await script(keys=keys, args=args)
        except TRANSIENT_ERRORS as error:
            self._failed(error)
            return None
        self._outage.succeeded()
        return answer

    async def _pipelined(self, script: AsyncScript, calls: list[ScriptCall]) -> list[Any]:
        """Each call's answer, from one round trip (None for each while Redis fails)."""
        assert self._redis is not None
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for keys, args in calls:
                    await script(keys=keys, args=args, client=pipe)
                answers: list[Any] = await pipe.execute()
        except TRANSIENT_ERRORS as error:
            self._failed(error)
            return [None] * len(calls)
        self._outage.succeeded()
        return answers

    def _failed(self, error: BaseException) -> None:
        if self._stopping.is_set():
            log.debug("rate limiter: redis call ended by the stop: %s", error)
            return
        self._outage.failed(error)
        self._paused_until = time.monotonic() + PAUSE_AFTER_ERROR_S
        if self._probing is None:
            self._probing = asyncio.create_task(self._probe())

    async def _probe(self) -> None:
        """Ping Redis every ``PAUSE_AFTER_ERROR_S`` until it answers, then log the outage's
        end and let requests ask it at once: without requests (the outage ended as the
        traffic did) nothing else would."""
        try:
            while self._redis is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), PAUSE_AFTER_ERROR_S)
                    return
                try:
                    await self._redis.ping()
                except TRANSIENT_ERRORS:
                    continue
                self._outage.succeeded()
                self._paused_until = 0.0
                return
        finally:
            self._probing = None

    def _keys(self, kind: str, scope: Scope) -> tuple[str, ...]:
        """The request's buckets (or feed sets) of ``kind``: its address's, its app key's."""
        address = client_address(scope, self._trusted)
        slot = f"ratelimit:{kind}"  # one script takes from both buckets: one cluster slot
        by_address = self._settings.slot_key(slot, f"addr:{address}")
        if (key_bucket := app_key_bucket(scope, address)) is None:
            return (by_address,)
        return by_address, self._settings.slot_key(slot, f"key:{key_bucket}")


ScriptCall = tuple[tuple[str, ...], tuple[Any, ...]]
"""A script call's keys and arguments."""
