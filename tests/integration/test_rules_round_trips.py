"""Rules calls against a real Redis and the real rules worker, counting what each costs in
Redis commands and socket writes, on the caller's side and on the worker's; and what reading
without acknowledgement must still keep: a request a worker took and never answered is
answered by another, a wiped Redis is only a pause, dead members leave the group."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from redis.asyncio.connection import Connection, ConnectionPool

from services.rules.engine import RulesEngine
from services.rules.games import load_games
from services.rules.worker import RulesWorker
from shared.domain import rules_api as api
from shared.infra import rpc
from shared.infra.bus import FORGET_IDLE_CONSUMERS, Bus
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

GROUP = "rules"
CONNECTION_SET_UP = {"HELLO", "CLIENT", "AUTH", "SELECT"}


class Traffic:
    """The socket writes of one client's connections, each as the commands it carried."""

    def __init__(self) -> None:
        self.writes: list[Counter[str]] = []

    def taken(self) -> tuple[Counter[str], list[Counter[str]]]:
        """The commands and writes since the last call; counting starts afresh."""
        writes, self.writes = self.writes, []
        return sum(writes, Counter()), writes


def counted_redis(redis_url: str, traffic: Traffic) -> redis_async.Redis:
    class CountingConnection(Connection):
        packed: Counter[str] | None = None

        def pack_command(self, *args: Any) -> list[bytes]:  # a pipeline packs each of its own
            name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
            self.packed = (self.packed or Counter()) + Counter([name.split()[0].upper()])
            return super().pack_command(*args)

        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            if not set(self.packed or ()) <= CONNECTION_SET_UP:  # once per connection
                traffic.writes.append(self.packed or Counter())
            self.packed = None
            await super().send_packed_command(command, check_health)

    pool = ConnectionPool.from_url(redis_url, connection_class=CountingConnection)
    return redis_async.Redis(connection_pool=pool)


class Side:
    """One process's Redis client and what it sent."""

    def __init__(self, redis_url: str) -> None:
        self.traffic = Traffic()
        self.redis = counted_redis(redis_url, self.traffic)


@pytest_asyncio.fixture
async def caller(
    redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> AsyncIterator[tuple[rpc.RulesClient, Side]]:
    side = Side(redis_url)
    client = rpc.RulesClient(
        side.redis,
        request_stream=f"{key_prefix}requests",
        reply_stream=f"{key_prefix}replies",
        timeout_s=5,
    )
    await client.start()
    try:
        yield client, side
    finally:
        await asyncio.wait_for(client.stop(), 5)
        await side.redis.aclose()


@contextlib.asynccontextmanager
async def rules_worker(
    redis_url: str, key_prefix: str, name: str = "worker", *, dead_after_ms: int = 300_000
) -> AsyncIterator[tuple[rpc.Responder, Side]]:
    """The rules worker's loop under the test's prefix, with the real engines (its group made
    and its script loaded beforehand, as another worker would have, so that its first round
    trips are those of any time)."""
    side = Side(redis_url)
    stream = f"{key_prefix}requests"
    plain = redis_async.Redis.from_url(redis_url)
    await Bus(plain).ensure_group(stream, GROUP)
    await plain.script_load(FORGET_IDLE_CONSUMERS)
    await plain.aclose()
    worker = RulesWorker(RulesEngine(load_games()))
    responder = rpc.Responder(
        side.redis, stream, GROUP, name, worker.answer, dead_after_ms=dead_after_ms, block_ms=100
    )
    stop = asyncio.Event()
    running = asyncio.create_task(responder.run(stop))
    try:
        yield responder, side
    finally:
        stop.set()
        await asyncio.wait_for(running, 5)
        await side.redis.aclose()


async def until(condition: Any, timeout_s: float = 30) -> None:
    await await_until(condition, timeout=timeout_s, poll=0.01)


async def test_a_lone_call_costs_one_write_on_the_worker_and_two_on_the_caller(
    caller: tuple[rpc.RulesClient, Side], redis_url: str, key_prefix: str
) -> None:
    """The worker writes the reply with its next read; the caller writes the request and
    reads the reply. Nothing is acknowledged and the reply stream's expiry is set once."""
    client, calling = caller
    async with rules_worker(redis_url, key_prefix) as (_, working):
        assert await client.call(api.Ping(), bool) is True  # the first sets the expiry
        calling.traffic.taken()
        working.traffic.taken()
        calls = 20
        for _ in range(calls):
            assert await client.call(api.Ping(), bool) is True
        await await_until(  # the worker's read that carries the last reply
            lambda: sum(write["XADD"] for write in working.traffic.writes) >= calls,
            what="the worker's write of the last reply",
        )
        worker_commands, worker_writes = working.traffic.taken()
        caller_commands, caller_writes = calling.traffic.taken()
    replies = [write for write in worker_writes if "XADD" in write]
    assert replies == [{"XADD": 1, "XREADGROUP": 1}] * calls  # each reply rides on a read
    # a read whose 100 ms block ran out between two calls (a busy machine) carries no reply
    assert all(write == {"XREADGROUP": 1} for write in worker_writes if "XADD" not in write)
    assert worker_commands["XADD"] == calls and set(worker_commands) == {"XADD", "XREADGROUP"}
    assert caller_commands == {"XADD": calls, "XREAD": calls}
    assert len(caller_writes) == 2 * calls


async def test_requests_that_arrive_together_are_read_and_answered_together(
    caller: tuple[rpc.RulesClient, Side], redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> None:
    """Requests waiting when the worker reads cost it one read and one write back in all."""
    client, calling = caller
    await Bus(redis).ensure_group(f"{key_prefix}requests", GROUP)
    calls = [asyncio.create_task(client.call(api.Ping(), bool)) for _ in range(40)]
    await until(lambda: redis.xlen(f"{key_prefix}requests"), 2)
    assert await redis.xlen(f"{key_prefix}requests") == 40
    requests = [write for write in calling.traffic.taken()[1] if "XADD" in write]
    assert requests == [{"XADD": 40}]  # the caller's requests: one write
    async with rules_worker(redis_url, key_prefix) as (_, working):
        assert await asyncio.gather(*calls) == [True] * 40
        commands, writes = working.traffic.taken()
    rounds = [write for write in writes if "EVALSHA" not in write]  # not: the member scan
    # the read of the forty, then their replies and the stream's expiry with the next read
    assert rounds[:2] == [{"XREADGROUP": 1}, {"XADD": 40, "EXPIRE": 1, "XREADGROUP": 1}]
    assert commands["XADD"] == 40 and commands["EXPIRE"] == 1
    assert (await redis.xpending(f"{key_prefix}requests", GROUP))["pending"] == 0


async def answered_after_its_worker_died(
    client: rpc.RulesClient, redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> float:
    """A request a worker took and never answered: how long until another answered it."""
    stream = f"{key_prefix}requests"
    await Bus(redis).ensure_group(stream, GROUP)
    loop = asyncio.get_running_loop()
    began = loop.time()
    call = asyncio.create_task(client.call(api.Ping(), bool))
    taken = await redis.xreadgroup(GROUP, "dies", {stream: ">"}, count=10, block=2000, noack=True)
    assert len(taken[0][1]) == 1  # the request, in the hands of a worker that never answers
    async with rules_worker(redis_url, key_prefix):
        assert await call is True
    assert await redis.xlen(stream) >= 2  # answered only once sent again
    return loop.time() - began


async def test_a_request_a_worker_took_and_never_answered_is_answered_by_another(
    caller: tuple[rpc.RulesClient, Side], redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> None:
    """What acknowledging protected, the caller's resending keeps: a worker that dies holding
    a request delays its answer by ``RESEND_AFTER_S``."""
    took = await answered_after_its_worker_died(caller[0], redis_url, key_prefix, redis)
    assert took >= rpc.RESEND_AFTER_S


@pytest.mark.speed  # an upper bound on time: left out of the default run
async def test_a_request_a_worker_took_and_never_answered_is_delayed_no_more_than_a_resend(
    caller: tuple[rpc.RulesClient, Side], redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> None:
    took = await answered_after_its_worker_died(caller[0], redis_url, key_prefix, redis)
    assert took < 2 * rpc.RESEND_AFTER_S


async def test_a_wiped_redis_only_pauses_the_worker(
    caller: tuple[rpc.RulesClient, Side], redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> None:
    client, _ = caller
    async with rules_worker(redis_url, key_prefix):
        assert await client.call(api.Ping(), bool) is True
        await redis.delete(f"{key_prefix}requests", f"{key_prefix}replies")
        assert await client.call(api.Ping(), bool) is True  # the group made again
        assert await redis.ttl(f"{key_prefix}replies") > 0  # and the replies expire again


async def test_an_entry_that_is_no_request_is_dropped_and_the_worker_goes_on(
    caller: tuple[rpc.RulesClient, Side], redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> None:
    client, _ = caller
    async with rules_worker(redis_url, key_prefix):
        await redis.xadd(f"{key_prefix}requests", {b"m": b"not a request"})
        assert await client.call(api.Ping(), bool) is True


async def test_dead_members_leave_the_group_even_holding_requests_and_a_stopped_one_too(
    redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> None:
    """A member that died (even one that read with acknowledgements, before reads without)
    holds nothing worth keeping: its requests were sent again or given up."""
    stream = f"{key_prefix}requests"
    await Bus(redis).ensure_group(stream, GROUP)
    await redis.xadd(stream, {b"m": b"old"})
    await redis.xreadgroup(GROUP, "died-holding", {stream: ">"}, count=1)

    async def member(name: bytes) -> bool:
        return name in {member["name"] for member in await redis.xinfo_consumers(stream, GROUP)}

    async def gone(name: bytes) -> bool:
        return not await member(name)

    async with rules_worker(redis_url, key_prefix, "alive", dead_after_ms=300):
        await until(lambda: gone(b"died-holding"))
        await redis.xadd(stream, {b"m": b"no request"})  # read: a member (Redis 7.0: only then)
        await until(lambda: member(b"alive"))
    assert await gone(b"alive")
