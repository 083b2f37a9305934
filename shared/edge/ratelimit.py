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
its own short timeouts, and mostly nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import ipaddress
import logging
import math
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, NamedTuple, TypeVar

import anyio
import redis.asyncio as redis_async
from litestar.connection import ASGIConnection
from litestar.types import Scope
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript

from shared.edge.apps import PUBLISHABLE_PREFIX
from shared.edge.contract import DOCS_ASSETS
from shared.edge.errors import Problem
from shared.infra.bus import TRANSIENT_ERRORS, OutageLog
from shared.infra.settings import Settings

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Answer = TypeVar("Answer")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

READ, WRITE, FEED = "read", "write", "feed"
"""The classes of route, each with its own limits: a flood of reads does not stop writes."""
EXEMPT_PATHS = frozenset({"/health", "/ready", "/metrics"})
"""Never limited: load balancers, orchestrators and Prometheus poll them."""
REDIS_TIMEOUT_S = 0.25
"""Connect and read timeout of the limiter's own Redis client: a Redis that does not answer
may delay a request this long, never more (no retries)."""
REDIS_CONNECTIONS = 32
"""The limiter's connections to Redis: requests beyond wait for one (up to ``REDIS_TIMEOUT_S``)
rather than opening more (a burst of thousands of feeds once ran out of redis-py's 100)."""
PAUSE_AFTER_ERROR_S = 1.0
"""After a Redis error, requests pass unchecked this long before Redis is tried again."""
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
ALLOWANCE_MAX = 32
"""Most tokens one script call takes from a client's buckets for a process to spend: a client
far from its limits costs Redis one call per this many requests, and may pass its limits by
this many less one per process (see the module's docstring)."""
TRUSTED_NAMES_EVERY_S = 10.0
"""How often the host names in ``trusted_proxies`` are looked up again."""
ALLOWANCE_S = 1.0
"""Tokens a process took and has not spent lapse this long after it asked for them."""
REMEMBERED_ALLOWANCES = 10_000
"""Clients (and classes of route) whose tokens a process holds: beyond, a new client's
requests are counted by Redis one at a time until the lapsed ones are forgotten."""

_TAKE_TOKENS = """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local need, ask = tonumber(ARGV[3]), tonumber(ARGV[4])
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + tonumber(clock[2]) / 1000
local levels, lowest = {}, burst
for i, key in ipairs(KEYS) do
    local saved = redis.call('HMGET', key, 'tokens', 'at')
    local level = burst
    if saved[1] then
        local elapsed_ms = math.max(0, now_ms - tonumber(saved[2]))
        level = math.min(burst, tonumber(saved[1]) + elapsed_ms * rate / 1000)
    end
    levels[i] = level
    lowest = math.min(lowest, level)
end
if lowest < 1 then
    return {0, 0, math.ceil((1 - lowest) * 1000 / rate), math.ceil((burst - lowest) * 1000 / rate)}
end
local taken = math.min(need, math.floor(lowest))
local spare = math.min(ask - taken, math.floor(lowest - taken - burst / 2))
if spare > 0 then
    taken = taken + spare
end
for i, key in ipairs(KEYS) do
    local level = levels[i] - taken
    redis.call('HSET', key, 'tokens', level, 'at', now_ms)
    redis.call('PEXPIRE', key, math.ceil((burst - level) * 1000 / rate))
end
lowest = lowest - taken
return {taken, math.floor(lowest), 0, math.ceil((burst - lowest) * 1000 / rate)}
"""
"""Take ``ARGV[3]`` tokens (or as many as there are) from every bucket (``KEYS``) or none, and
up to ``ARGV[4]`` in all while that leaves the emptiest bucket more than half full: ``{tokens
taken, tokens left in the emptiest bucket, ms until a token is back in all (when none was
taken), ms until all are full}``. A bucket expires once it would be full again: a missing
bucket is a full one."""

_TAKE_FEED_SLOT = """
local limit, lease_ms, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
for _, key in ipairs(KEYS) do
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms)
    if redis.call('ZCARD', key) >= limit then
        return 0
    end
end
for _, key in ipairs(KEYS) do
    redis.call('ZADD', key, now_ms + lease_ms, lease)
    redis.call('PEXPIRE', key, lease_ms)
end
return 1
"""
"""Lease a slot (``ARGV[3]``) in every set of live feeds (``KEYS``) or in none: 1 if taken. A
slot's score is when it lapses; lapsed ones are dropped first."""

_RENEW_FEED_SLOTS = """
local lease_ms = tonumber(ARGV[1])
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
for i, key in ipairs(KEYS) do
    redis.call('ZADD', key, 'XX', now_ms + lease_ms, ARGV[i + 1])
    redis.call('PEXPIRE', key, lease_ms)
end
"""
"""Extend the leases ``ARGV[i + 1]`` in the sets ``KEYS[i]``; one released meanwhile stays
released (``XX``)."""


class Refusal(NamedTuple):
    """A client's empty buckets (``time.monotonic`` times): no request passes before ``until``,
    and they are full again at ``full_at``."""

    until: float
    full_at: float


class Allowance:
    """The tokens this process took from one client's buckets (of one class of route) and has
    not spent yet, and how many it takes next time."""

    __slots__ = ("tokens", "taken", "left", "full_in_s", "until", "want", "waiting", "taking")

    def __init__(self) -> None:
        self.tokens = 0
        """Taken and not spent yet: they lapse at ``until`` (``time.monotonic``)."""
        self.taken = 0
        """Taken by the last call."""
        self.left = 0
        """Tokens the emptiest bucket had left after the last call."""
        self.full_in_s = 0.0
        """How long the buckets took to be full again after the last call."""
        self.until = 0.0
        self.want = 1
        """Tokens the next call asks for (when the bucket has them to spare)."""
        self.waiting = 0
        """Requests waiting for the call in flight."""
        self.taking: asyncio.Future[None] | None = None
        """The call in flight: done once its tokens are here (or it failed)."""

    def spend(self, policy: Policy) -> list[tuple[bytes, bytes]]:
        """Spend a token: the answer's ``RateLimit-Policy`` and ``RateLimit``, counting the
        tokens this process holds as still in the buckets."""
        self.tokens -= 1
        full_in_s = self.full_in_s - self.tokens / policy.rate_per_s
        return policy.encoded(self.left + self.tokens, full_in_s)

    def plan(self, now: float) -> None:
        """Before a call, size ``want`` on the last one: twice as many when the client spent
        them all in time (up to ``ALLOWANCE_MAX``), what it spent of them when some lapsed."""
        if not self.taken:
            return
        if self.tokens == 0 and now < self.until:
            self.want = min(ALLOWANCE_MAX, 2 * self.taken)
        else:
            self.want = max(1, self.taken - self.tokens)


class Policy(NamedTuple):
    """The limits of one class of route, per client address and per app key."""

    name: str
    rate_per_s: float
    burst: int

    @property
    def window_s(self) -> int:
        """How long an empty bucket takes to fill again: the ``w`` of ``RateLimit-Policy``."""
        return max(1, math.ceil(self.burst / self.rate_per_s))

    @property
    def header(self) -> str:
        """``RateLimit-Policy`` (draft-ietf-httpapi-ratelimit-headers): the bucket's size."""
        return f'"{self.name}";q={self.burst};w={self.window_s}'

    def state(self, remaining: int, full_in_s: float) -> dict[str, str]:
        """``RateLimit-Policy`` and ``RateLimit``: the tokens left, the seconds until full."""
        return {
            "RateLimit-Policy": self.header,
            "RateLimit": f'"{self.name}";r={remaining};t={math.ceil(full_in_s)}',
        }

    def encoded(self, remaining: int, full_in_s: float) -> list[tuple[bytes, bytes]]:
        """``state`` as an answer's headers."""
        return [
            (b"ratelimit-policy", self.header.encode()),
            (b"ratelimit", f'"{self.name}";r={remaining};t={math.ceil(full_in_s)}'.encode()),
        ]

    def refused(self, refusal: Refusal) -> Problem:
        now = time.monotonic()
        retry_after_s = max(1, math.ceil(refusal.until - now))
        return Problem(
            429,
            "rate-limited",
            "Rate limited",
            f"over the {self.name} limit of {self.rate_per_s:g} requests a second (bursts of"
            f" {self.burst}) for this client: retry after {retry_after_s} s",
            headers={**self.state(0, refusal.full_at - now), "Retry-After": str(retry_after_s)},
        )


def policies(settings: Settings) -> dict[str, Policy]:
    return {
        READ: Policy(READ, settings.rate_limit_read_per_s, settings.rate_limit_read_burst),
        WRITE: Policy(WRITE, settings.rate_limit_write_per_s, settings.rate_limit_write_burst),
        FEED: Policy(FEED, settings.rate_limit_feed_per_s, settings.rate_limit_feed_burst),
    }


def route_class(method: str, path: str) -> str:
    if method in ("GET", "HEAD", "OPTIONS"):
        return FEED if path.rstrip("/").endswith("/feed") else READ
    return WRITE


def trusted_networks(setting: str) -> list[Network]:
    """The networks and addresses ``trusted_proxies`` names (its host names aside)."""
    return trusted_proxies(setting)[0]


def trusted_proxies(setting: str) -> tuple[list[Network], list[str]]:
    """``trusted_proxies``: its networks, and its host names (a Compose service, a Kubernetes
    headless Service of the gateway's pods), whose addresses the limiter looks up."""
    networks: list[Network] = []
    names: list[str] = []
    for item in (item.strip() for item in setting.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item))
        except ValueError as error:
            if not _HOST_NAME.fullmatch(item):
                raise SystemExit(f"bad setting trusted_proxies: {error}") from None
            names.append(item)
    return networks, names


_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.*[a-z]){_LABEL}(\.{_LABEL})*\.?", re.IGNORECASE)


async def resolved(names: list[str]) -> list[Network]:
    """The addresses ``names`` have now, each as a one-address network."""
    loop = asyncio.get_running_loop()
    found = set()
    for name in names:
        for *_, sockaddr in await loop.getaddrinfo(name, None, type=socket.SOCK_STREAM):
            found.add(ipaddress.ip_network(sockaddr[0].partition("%")[0]))
    return sorted(found, key=str)


def client_address(scope: Scope, trusted: list[Network]) -> str:
    """Who sent the request: the peer, unless the peer is a trusted proxy, then the right-most
    address of ``X-Forwarded-For`` that is not a trusted proxy's (the left ones are whatever
    the client chose to send). IPv6 clients count per /64, the least a host is given."""
    peer = (scope.get("client") or ("unknown", 0))[0]
    if not _is_trusted(peer, trusted):
        return _bucket_of(peer)
    forwarded = b",".join(v for k, v in scope["headers"] if k == b"x-forwarded-for").decode(
        "latin-1"
    )
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, trusted):
            return _bucket_of(hop)
    return _bucket_of(hops[0] if hops else peer)


@functools.lru_cache(maxsize=4096)  # parsing is a third of refusing a flooder's request
def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _is_trusted(text: str, trusted: list[Network]) -> bool:
    address = _address(text)
    return address is not None and any(address in network for network in trusted)


def _bucket_of(text: str) -> str:
    address = _address(text)
    if address is None:
        return text[:64]  # not an address (a test client's name): as it is, bounded
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def app_key_bucket(scope: Scope, address: str) -> str | None:
    """The bucket name of the request's ``X-API-Key``, if any: never the key itself. A
    publishable key is in every browser of its app, so its bucket is per client address too:
    one browser cannot spend the whole app's budget."""
    for name, value in scope["headers"]:
        if name == b"x-api-key":
            digest = hashlib.sha256(value).hexdigest()[:32]
            if value.startswith(PUBLISHABLE_PREFIX.encode()):
                return f"{digest}@{address}"
            return digest
    return None


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
        self._take_tokens = self._redis.register_script(_TAKE_TOKENS)
        self._take_feed_slot = self._redis.register_script(_TAKE_FEED_SLOT)
        self._renew_feed_slots = self._redis.register_script(_RENEW_FEED_SLOTS)
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
        time out within ``REDIS_TIMEOUT_S``): cancelling it inside a redis-py read could leave
        it, and this, waiting forever (redis-py 8.1), so it is cancelled only if it has not
        ended after that, and not waited for."""
        if self._renewing is not None:
            self._stopping.set()
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
        self._outage.failed(error)
        self._paused_until = time.monotonic() + PAUSE_AFTER_ERROR_S

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


class Together(Generic[Item, Answer]):
    """Calls made while others are on their way go together, next, in one batch: the first
    caller sends batch after batch until none is left, the others wait for theirs."""

    def __init__(self, send: Callable[[list[Item]], Awaitable[list[Answer]]]) -> None:
        self._send = send
        self._queued: list[tuple[Item, asyncio.Future[Answer]]] = []
        self._sending = False

    async def __call__(self, item: Item) -> Answer:
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._queued.append((item, answer))
        with anyio.CancelScope(shield=True):  # the calls waiting on this one are answered
            if not self._sending:
                self._sending = True
                try:
                    while self._queued:
                        batch, self._queued = self._queued, []
                        try:
                            answers = await self._send([each for each, _ in batch])
                        except Exception as error:  # each call hears of it: none waits forever
                            for _, waiting in batch:
                                waiting.set_exception(error)
                            continue
                        for (_, waiting), each_answer in zip(batch, answers, strict=True):
                            waiting.set_result(each_answer)
                finally:
                    self._sending = False
            return await answer


class FeedSlot:
    """One of a client's live-feed slots, held until ``release`` (which frees it once). Small
    on purpose: every open feed holds one."""

    __slots__ = ("_lease", "_limiter")

    def __init__(self, limiter: RateLimiter | None = None, lease: str = "") -> None:
        self._limiter = limiter
        self._lease = lease

    async def release(self) -> None:
        limiter, self._limiter = self._limiter, None
        if limiter is not None:
            await limiter.free_feed_slot(self._lease)


async def take_feed_slot(connection: ASGIConnection[Any, Any, Any, Any]) -> FeedSlot:
    """One of the caller's live-feed slots (429 when all are taken), to release when the feed
    ends, fails to open, or its client leaves; nothing is counted when the service has no
    limiter."""
    limiter: RateLimiter | None = getattr(connection.app, "rate_limiter", None)
    if limiter is None:
        return FeedSlot()
    return await limiter.take_feed_slot(connection.scope)


@contextlib.asynccontextmanager
async def feed_lease(connection: ASGIConnection[Any, Any, Any, Any]) -> AsyncIterator[None]:
    """Hold one of the caller's live-feed slots while open (429 when all are taken)."""
    slot = await take_feed_slot(connection)
    try:
        yield
    finally:
        await slot.release()
