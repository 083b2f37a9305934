"""A stream write Redis never answers is given up, and a rules call still ends at its timeout
(no socket timeout is set, so only these bounds keep callers from waiting for good)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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


@pytest.mark.asyncio
async def test_a_write_redis_never_answers_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rpc, "WRITE_TIMEOUT_S", 0.1)
    writer = rpc.StreamWriter(SilentRedis())  # type: ignore[arg-type]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(writer.add("s", b"x"), 2)


@pytest.mark.asyncio
async def test_a_call_whose_writes_hang_ends_at_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rpc, "WRITE_TIMEOUT_S", 10.0)  # longer than the call: its own bound
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
