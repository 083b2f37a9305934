"""The rate limiter when Redis is gone or does not answer (``shared/edge/ratelimit.py``): every
request passes at once, a silent Redis delays one request by its timeout and the others not at
all, an outage and its end are logged once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Iterator
from typing import Any

import httpx
import pytest
import redis.asyncio as redis_async

from shared.edge.ratelimit import PAUSE_AFTER_ERROR_S, REDIS_TIMEOUT_S, RateLimiter
from tests.integration.limited_service import AppMaker, admitted, client_of, closed_port
from tests.waiting import await_until

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def silent_redis_url() -> Iterator[str]:
    """A Redis URL whose server accepts connections (the listen backlog) and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        yield f"redis://127.0.0.1:{silent.getsockname()[1]}/0"


def redis_attempts(limiter: RateLimiter, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The token script's calls from now on, each by how it ended: the name of the error it
    raised, or ``"answered"``. A call made is a round trip tried; a request that passes
    without one does not wait on Redis."""
    attempts: list[str] = []
    script = limiter._take_tokens
    assert script is not None

    async def counted(**call: Any) -> Any:
        try:
            answer = await script(**call)
        except BaseException as error:
            attempts.append(type(error).__name__)
            raise
        attempts.append("answered")
        return answer

    monkeypatch.setattr(limiter, "_take_tokens", counted)
    return attempts


def most_attempts(elapsed_s: float) -> int:
    """The round trips a failing Redis gets in ``elapsed_s``: one, then one per pause."""
    return 1 + int(elapsed_s / PAUSE_AFTER_ERROR_S)


async def timed(request: Awaitable[httpx.Response]) -> tuple[httpx.Response, float]:
    began = time.perf_counter()
    answer = await request
    return answer, time.perf_counter() - began


@pytest.mark.asyncio
async def test_requests_pass_at_once_while_redis_is_down(
    limited_app: AppMaker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await limited_app(
        redis_url=f"redis://127.0.0.1:{closed_port()}/0",
        rate_limit_write_per_s=1,
        rate_limit_write_burst=1,
    )
    attempts = redis_attempts(app.rate_limiter, monkeypatch)
    caplog.set_level(logging.WARNING, logger="shared.edge.ratelimit")
    async with client_of(app) as client:
        began = time.monotonic()
        answers = [await timed(client.post("/things")) for _ in range(20)]
        first_s = time.monotonic() - began
        # at once: one failed round trip, then none while paused (one a pause, if this
        # machine is so busy that twenty requests outlast one)
        assert attempts and set(attempts) == {"ConnectionError"}
        assert len(attempts) <= most_attempts(first_s), (attempts, first_s)
        tried = len(attempts)
        await asyncio.sleep(PAUSE_AFTER_ERROR_S + 0.1)  # the pause passes: Redis is tried again
        answers += [await timed(client.post("/things")) for _ in range(5)]
    assert {answer.status_code for answer, _ in answers} == {201}
    assert not any("RateLimit" in answer.headers for answer, _ in answers)
    assert len(attempts) > tried and set(attempts) == {"ConnectionError"}  # and still fails
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "rate limiter" in warnings[0].getMessage()


@pytest.mark.asyncio
async def test_a_redis_that_does_not_answer_delays_one_request_its_timeout(
    limited_app: AppMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    with silent_redis_url() as redis_url:
        app = await limited_app(redis_url=redis_url)
        attempts = redis_attempts(app.rate_limiter, monkeypatch)
        async with client_of(app) as client:
            # a generous bound: without the limiter's own read timeout, this would hang
            first, first_s = await timed(asyncio.wait_for(client.get("/things"), 30))
            began = time.monotonic()
            rest = [await timed(client.get("/things")) for _ in range(10)]
            rest_s = time.monotonic() - began
    assert first.status_code == 200
    assert first_s >= REDIS_TIMEOUT_S * 0.9  # it waited for Redis, and gave up by its timeout
    assert attempts[0] == "TimeoutError", attempts
    assert {answer.status_code for answer, _ in rest} == {200}
    # the rest did not wait on Redis: no round trip while paused (one a pause on a busy machine)
    assert len(attempts) <= most_attempts(first_s + rest_s), (attempts, rest_s)


def failing_script(
    limiter: RateLimiter, monkeypatch: pytest.MonkeyPatch, before: asyncio.Event | None = None
) -> None:
    """The token script fails as on a Redis gone (after ``before`` is set, if given); the
    limiter's client still reaches the real Redis."""

    async def failing(**_call: Any) -> Any:
        if before is not None:
            await before.wait()
        raise redis_async.ConnectionError("as if Redis had gone")

    monkeypatch.setattr(limiter, "_take_tokens", failing)


@pytest.mark.asyncio
async def test_an_outages_end_is_logged_once_though_no_request_comes_after_it(
    limited_app: AppMaker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limiter pings Redis itself while it is out: an outage whose last request failed
    (Redis failed as the traffic stopped) still logs its end."""
    app = await limited_app()
    failing_script(app.rate_limiter, monkeypatch)
    caplog.set_level(logging.INFO, logger="shared.edge.ratelimit")
    assert await admitted(app.rate_limiter) == "passed unchecked"
    assert await admitted(app.rate_limiter) == "passed unchecked"  # paused: not logged again

    def messages() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "shared.edge.ratelimit"]

    await await_until(lambda: any("reachable again" in m for m in messages()), what="the end")
    await asyncio.sleep(PAUSE_AFTER_ERROR_S)  # no further ping logs it again
    outage = [m for m in messages() if "unreachable" in m]
    ends = [m for m in messages() if "reachable again" in m]
    assert len(outage) == 1 and len(ends) == 1, messages()


@pytest.mark.asyncio
async def test_a_redis_call_failing_as_the_limiter_closes_is_no_outage(
    limited_app: AppMaker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request whose call fails because the process is stopping logs no outage, whose end
    nobody would log."""
    app = await limited_app()
    closed = asyncio.Event()
    failing_script(app.rate_limiter, monkeypatch, before=closed)
    caplog.set_level(logging.INFO, logger="shared.edge.ratelimit")
    request = asyncio.create_task(admitted(app.rate_limiter))
    await asyncio.sleep(0)  # the request is in its call
    await app.rate_limiter.close()
    closed.set()
    assert await request == "passed unchecked"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.speed  # upper bounds on time: left out of the default run
@pytest.mark.asyncio
async def test_a_redis_that_does_not_answer_delays_the_others_not_at_all(
    limited_app: AppMaker,
) -> None:
    with silent_redis_url() as redis_url:
        app = await limited_app(redis_url=redis_url)
        async with client_of(app) as client:
            _, first_s = await timed(client.get("/things"))
            rest = [await timed(client.get("/things")) for _ in range(10)]
    assert first_s < 0.5  # the limiter's own read timeout, 0.25 s
    assert max(seconds for _, seconds in rest) < 0.05


@pytest.mark.asyncio
async def test_requests_waiting_for_a_redis_that_does_not_answer_pass(
    limited_app: AppMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    with silent_redis_url() as redis_url:
        app = await limited_app(redis_url=redis_url)
        attempts = redis_attempts(app.rate_limiter, monkeypatch)
        began = time.perf_counter()
        answers = await asyncio.wait_for(  # a generous bound: a hang fails, not waits
            asyncio.gather(*(admitted(app.rate_limiter) for _ in range(20))), 30
        )
        elapsed = time.perf_counter() - began
    assert answers == ["passed unchecked"] * 20
    # one timeout for all of them: one round trip tried (one a pause on a busy machine)
    assert attempts[0] == "TimeoutError", attempts
    assert len(attempts) <= most_attempts(elapsed), (attempts, elapsed)


@pytest.mark.speed  # an upper bound on time: left out of the default run
@pytest.mark.asyncio
async def test_requests_waiting_for_a_redis_that_does_not_answer_pass_within_one_timeout(
    limited_app: AppMaker,
) -> None:
    with silent_redis_url() as redis_url:
        app = await limited_app(redis_url=redis_url)
        began = time.perf_counter()
        await asyncio.gather(*(admitted(app.rate_limiter) for _ in range(20)))
        elapsed = time.perf_counter() - began
    assert elapsed < 0.5  # one timeout (0.25 s) for all of them
