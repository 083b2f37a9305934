"""Token buckets of the rate limits: the classes of route, their policies and headers, and the
tokens a process holds (``shared.edge.ratelimit`` takes them from Redis)."""

from __future__ import annotations

import asyncio
import math
import time
from typing import NamedTuple

from shared.edge.errors import Problem
from shared.infra.settings import Settings

READ, WRITE, FEED = "read", "write", "feed"
"""The classes of route, each with its own limits: a flood of reads does not stop writes."""
ALLOWANCE_MAX = 32
"""Most tokens one script call takes from a client's buckets for a process to spend: a client
far from its limits costs Redis one call per this many requests, and may pass its limits by
this many less one per process (see ``shared.edge.ratelimit``)."""

TAKE_TOKENS = """
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
