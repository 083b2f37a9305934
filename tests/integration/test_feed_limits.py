"""Live-feed limits (``shared/edge/feed_slots.py``) with the real Redis: a client's feeds over
its limit are refused, leases are renewed while held, freed when the client leaves and lapse
when their process dies, bursts of feeds opening or closing cost a few round trips."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as redis_async
import uvicorn
from litestar import Litestar, Request

from shared.edge.errors import PROBLEM_TYPE_BASE, Problem
from shared.edge.feed_slots import FeedSlot, feed_lease, take_feed_slot
from tests.integration.limited_service import (
    CLIENT,
    FEEDS_SERVED,
    OTHER_CLIENT,
    AppMaker,
    closed_port,
)
from tests.waiting import await_until

pytestmark = pytest.mark.integration


def request_from(app: Litestar, address: str, app_key: str | None = None) -> Request[Any, Any, Any]:
    headers = [(b"x-api-key", app_key.encode())] if app_key else []
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/things/feed",
        "client": (address, 50000),
        "headers": headers,
        "litestar_app": app,
    }
    return Request(scope)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_feed_leases_over_the_limit_are_refused_and_freed_on_exit(
    limited_app: AppMaker, redis: redis_async.Redis, key_prefix: str
) -> None:
    app = await limited_app(max_feeds_per_client=2)
    async with feed_lease(request_from(app, CLIENT)), feed_lease(request_from(app, CLIENT)):
        with pytest.raises(Problem) as refused:
            async with feed_lease(request_from(app, CLIENT)):
                pass
        async with feed_lease(request_from(app, OTHER_CLIENT)):
            pass
        leases = f"{key_prefix}{{ratelimit:live-feeds}}:addr:{CLIENT}"
        assert await redis.zcard(leases) == 2
        assert 0 < await redis.pttl(leases) <= 30_000  # lapses if this process dies
    assert refused.value.status == 429
    assert refused.value.code == "rate-limited"
    assert refused.value.headers is not None
    assert refused.value.headers["RateLimit-Policy"] == '"live-feeds";q=2;qu="concurrent-requests"'
    assert await redis.zcard(leases) == 0
    async with feed_lease(request_from(app, CLIENT)), feed_lease(request_from(app, CLIENT)):
        pass


@pytest.mark.asyncio
async def test_feed_leases_are_renewed_while_held_and_lapse_when_their_process_dies(
    limited_app: AppMaker,
    redis: redis_async.Redis,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("shared.edge.ratelimit.FEED_LEASE_S", 0.6)  # renewed every 0.2 s
    app = await limited_app(max_feeds_per_client=1)
    leases = f"{key_prefix}{{ratelimit:live-feeds}}:addr:{CLIENT}"
    async with feed_lease(request_from(app, CLIENT)):
        await asyncio.sleep(1.2)  # lapsed twice over, unless renewed
        assert await redis.zcard(leases) == 1
        await app.rate_limiter.close()  # the process dies: no renewal, no release
        await asyncio.sleep(0.8)
        assert await redis.exists(leases) == 0
    await app.rate_limiter.start()
    async with feed_lease(request_from(app, CLIENT)):  # its slot is free again
        pass


@pytest.mark.asyncio
async def test_a_burst_of_closing_feeds_frees_every_slot_in_a_few_round_trips(
    limited_app: AppMaker,
    redis: redis_async.Redis,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client's restart closes thousands of feeds at once: one call per slot ran the
    limiter's 32 connections out, and the slots stayed taken until their leases lapsed."""
    app = await limited_app(max_feeds_per_client=5000)
    limiter = app.rate_limiter
    release = limiter._release
    round_trips = 0

    async def counted(*freed: Any) -> None:
        nonlocal round_trips
        round_trips += 1
        await release(*freed)

    monkeypatch.setattr(limiter, "_release", counted)
    request = request_from(app, CLIENT)
    slots = [await take_feed_slot(request) for _ in range(3000)]  # feeds open over time
    leases = f"{key_prefix}{{ratelimit:live-feeds}}:addr:{CLIENT}"
    assert await redis.zcard(leases) == 3000
    await asyncio.gather(*(slot.release() for slot in slots))
    assert await redis.zcard(leases) == 0
    assert round_trips <= 3


@pytest.mark.asyncio
async def test_a_burst_of_feeds_opening_at_once_is_counted_and_held_to_the_limit(
    limited_app: AppMaker, redis: redis_async.Redis, key_prefix: str
) -> None:
    """A client opening feeds by the thousand at once: one Redis call each ran the limiter's
    connections out, and failing open, it counted none of those and refused none."""
    app = await limited_app(max_feeds_per_client=100)
    request = request_from(app, CLIENT)
    await (await take_feed_slot(request)).release()  # connected, its script loaded: running
    taken = await asyncio.gather(
        *(take_feed_slot(request) for _ in range(5000)), return_exceptions=True
    )
    refused = [answer for answer in taken if isinstance(answer, Problem)]
    assert all(isinstance(answer, Problem | FeedSlot) for answer in taken)
    assert all(problem.status == 429 for problem in refused)
    # a call whose answer waited behind the burst for longer than the limiter's timeout may
    # still pass uncounted (the starved loop looks like a Redis outage): a few at most
    assert len(refused) >= 4890
    leases = f"{key_prefix}{{ratelimit:live-feeds}}:addr:{CLIENT}"
    assert await redis.zcard(leases) == 100
    await asyncio.gather(*(slot.release() for slot in taken if not isinstance(slot, Problem)))
    assert await redis.zcard(leases) == 0


@pytest.mark.asyncio
async def test_calls_sent_together_all_hear_of_an_error_none_waits_forever(
    limited_app: AppMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await limited_app(max_feeds_per_client=100)
    limiter = app.rate_limiter
    pipelined = limiter._pipelined

    batches = 0

    async def second_fails(script: Any, calls: list[Any]) -> list[Any]:
        nonlocal batches
        batches += 1
        if batches == 2:
            raise RuntimeError("not a Redis outage")
        await asyncio.sleep(0.05)  # the others queue up meanwhile: the next batch
        answers: list[Any] = await pipelined(script, calls)
        return answers

    monkeypatch.setattr(limiter, "_pipelined", second_fails)
    request = request_from(app, CLIENT)
    async with asyncio.timeout(30):
        first = asyncio.create_task(take_feed_slot(request))
        await await_until(lambda: batches, poll=0.001, what="the first batch on its way")
        answers = await asyncio.gather(
            first, *(take_feed_slot(request) for _ in range(20)), return_exceptions=True
        )
    assert batches == 2
    assert not isinstance(answers[0], BaseException)
    assert all(isinstance(answer, RuntimeError) for answer in answers[1:])
    await answers[0].release()


@pytest.mark.asyncio
async def test_an_app_keys_feeds_are_limited_across_addresses(limited_app: AppMaker) -> None:
    app = await limited_app(max_feeds_per_client=1)
    async with feed_lease(request_from(app, "198.51.100.1", "pt_key")):
        with pytest.raises(Problem):
            async with feed_lease(request_from(app, "198.51.100.2", "pt_key")):
                pass
        async with feed_lease(request_from(app, "198.51.100.2")):
            pass


@pytest.mark.asyncio
async def test_feed_leases_pass_while_redis_is_down(limited_app: AppMaker) -> None:
    app = await limited_app(
        redis_url=f"redis://127.0.0.1:{closed_port()}/0", max_feeds_per_client=1
    )
    async with feed_lease(request_from(app, CLIENT)), feed_lease(request_from(app, CLIENT)):
        pass


@contextlib.asynccontextmanager
async def serving(app: Litestar) -> AsyncIterator[str]:
    """``app`` on a loopback port (a live feed needs a real server to be left)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    )
    running = asyncio.create_task(server.serve())
    await await_until(lambda: server.started, poll=0.01, what="the server started")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await running


@pytest.mark.asyncio
async def test_a_live_feed_holds_its_slot_until_the_client_leaves(
    limited_app: AppMaker, redis: redis_async.Redis, key_prefix: str
) -> None:
    app = await limited_app(max_feeds_per_client=1, trusted_proxies="127.0.0.1")
    leases = f"{key_prefix}{{ratelimit:live-feeds}}:addr:{CLIENT}"
    forwarded = {"X-Forwarded-For": CLIENT}  # the test comes from loopback, named a proxy
    async with (
        asyncio.timeout(10),
        serving(app) as url,
        httpx.AsyncClient(base_url=url, headers=forwarded) as client,
    ):
        async with client.stream("GET", "/things/feed") as feed:
            lines = feed.aiter_lines()  # kept: dropping it would close the stream
            assert await anext(lines) == "data: tick"
            refused = await client.get("/things/feed")
            assert refused.status_code == 429
            assert refused.json()["type"] == PROBLEM_TYPE_BASE + "rate-limited"
            assert await redis.zcard(leases) == 1

        async def freed() -> bool:
            return await redis.zcard(leases) == 0

        await await_until(freed, poll=0.02, what="the server noticing the client left")
        async with client.stream("GET", "/things/feed") as feed:
            assert feed.status_code == 200


@pytest.mark.asyncio
async def test_a_feed_whose_client_left_is_freed_without_the_collector(
    limited_app: AppMaker,
) -> None:
    """Thousands of feeds close at once when a client restarts: what they held must go back
    then, not wait for a full collection (which rarely runs: ``shared/infra/collector.py``)."""
    app = await limited_app()
    gc.disable()
    try:
        async with asyncio.timeout(30), serving(app) as url, httpx.AsyncClient() as client:
            async with client.stream("GET", f"{url}/things/feed") as feed:
                assert await anext(feed.aiter_lines()) == "data: tick"
                assert len(FEEDS_SERVED) == 1
            await await_until(  # until the server notices the client left
                lambda: not FEEDS_SERVED, poll=0.02, what="the feed freed"
            )
    finally:
        gc.enable()
