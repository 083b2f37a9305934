"""A small service behind the rate limits and live-feed limits (``shared/edge/ratelimit.py``),
and the means by which the rate-limit tests reach it: a client from a given address, a
refused port, a write asked of a limiter as the service would."""

from __future__ import annotations

import asyncio
import socket
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from litestar import Litestar, Request, get, post
from litestar.response.sse import ServerSentEventMessage

from shared.edge.errors import Problem
from shared.edge.feed import SendChunk
from shared.edge.feed_http import LiveFeed
from shared.edge.feed_slots import take_feed_slot
from shared.edge.ratelimit import RateLimiter

CLIENT = "203.0.113.5"
OTHER_CLIENT = "203.0.113.6"


class Ticks:
    """A feed that never ends: a tick every 50 ms."""

    async def __call__(self, send: SendChunk) -> None:
        while True:
            await send(ServerSentEventMessage(data="tick").encode())
            await asyncio.sleep(0.05)


FEEDS_SERVED: weakref.WeakSet[Ticks] = weakref.WeakSet()
"""The feeds served, while anything holds them."""


@get("/things", sync_to_thread=False)
def read_things() -> list[str]:
    return ["thing"]


@post("/things", sync_to_thread=False)
def add_thing() -> str:
    return "added"


@get("/things/feed")
async def follow_things(request: Request[Any, Any, Any]) -> LiveFeed:
    ticks = Ticks()
    FEEDS_SERVED.add(ticks)
    return LiveFeed(ticks, await take_feed_slot(request))


AppMaker = Callable[..., Awaitable[Litestar]]


def client_of(app: Litestar, address: str = CLIENT) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_scope(address: str = CLIENT) -> Any:
    return {
        "type": "http",
        "method": "POST",
        "path": "/things",
        "client": (address, 50000),
        "headers": [],
    }


async def admitted(limiter: RateLimiter, address: str = CLIENT) -> str | None:
    """The ``RateLimit`` header of an answer the limiter admitted, None if refused or if it
    adds no header (Redis failed)."""
    try:
        added = await limiter.admit(write_scope(address))
    except Problem as refused:
        assert refused.status == 429
        return None
    headers = dict(added or [])
    return headers[b"ratelimit"].decode() if b"ratelimit" in headers else "passed unchecked"
