"""A rules call ends at its timeout whatever its writes do, and a write that fails after its
callers stopped waiting leaves no error behind for asyncio to log with a traceback (the Redis
client's own timeout ends the write: it is never cancelled inside its read)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.domain import rules_api as api
from shared.infra import rpc


class SilentPipeline:
    """A pipeline whose answer never comes (a connection that stopped mid-read)."""

    def xadd(self, *args: Any, **kwargs: Any) -> None:
        pass

    def expire(self, *args: Any) -> None:
        pass

    async def execute(self) -> None:
        await asyncio.Event().wait()


class SilentRedis:
    def pipeline(self, transaction: bool) -> SilentPipeline:
        return SilentPipeline()

    async def xread(self, *args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(0.05)


class FailingPipeline(SilentPipeline):
    """A pipeline the client's timeout ends (a paused Redis)."""

    async def execute(self) -> None:
        await asyncio.sleep(0.1)
        raise RedisTimeoutError("Timeout reading from redis")


class PausedRedis(SilentRedis):
    def pipeline(self, transaction: bool) -> SilentPipeline:
        return FailingPipeline()


@pytest.mark.asyncio
async def test_a_write_failing_after_its_callers_left_leaves_no_error_behind() -> None:
    unretrieved: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    writer = rpc.StreamWriter(PausedRedis())  # type: ignore[arg-type]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(writer.add("s", b"x"), 0.01)
    writes = asyncio.all_tasks() - {asyncio.current_task()}
    assert writes, "the write goes on after its caller left"
    await asyncio.wait(writes)
    del writes
    gc.collect()  # asyncio reports an error nobody took when its task is collected
    assert unretrieved == []


@pytest.mark.asyncio
async def test_a_call_whose_writes_hang_ends_at_its_timeout() -> None:
    client = rpc.RulesClient(
        SilentRedis(),  # type: ignore[arg-type]
        request_stream="requests",
        reply_stream="replies",
        timeout_s=0.3,
    )
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(rpc.RulesUnavailable):
        await asyncio.wait_for(client.call(api.Catalogue(), list), 2)
    assert loop.time() - began < 0.6
