"""An outage of Redis is logged once when it starts and once when it ends, not at every retry."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import redis.asyncio as redis_async

from shared.infra.bus import OutageLog
from shared.infra.rpc import RulesClient
from tests.waiting import await_until

log = logging.getLogger("tests.outage")


def test_many_failures_log_one_warning_then_one_recovery_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = OutageLog(log, "reader")
    caplog.set_level(logging.INFO, logger=log.name)

    outage.succeeded()  # nothing to report before any failure
    for attempt in range(50):
        outage.failed(ConnectionError(f"refused {attempt}"))
    outage.succeeded()
    outage.succeeded()
    outage.failed(ConnectionError("refused again"))

    assert [(record.levelno, record.getMessage()) for record in caplog.records] == [
        (logging.WARNING, "reader: redis unreachable: refused 0; retrying"),
        (logging.INFO, "reader: redis reachable again after 0.0 s"),
        (logging.WARNING, "reader: redis unreachable: refused again; retrying"),
    ]
    assert not any(record.exc_info for record in caplog.records)


@pytest.mark.asyncio
async def test_reply_reader_logs_an_unreachable_redis_once_without_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unreachable = redis_async.Redis.from_url("redis://127.0.0.1:1")
    reads = 0
    xread = unreachable.xread

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        return await xread(*args, **kwargs)

    unreachable.xread = counted  # type: ignore[method-assign]
    client = RulesClient(
        unreachable, request_stream="requests", reply_stream="replies", timeout_s=1
    )
    caplog.set_level(logging.INFO)

    await client.start()
    await await_until(lambda: reads >= 3, poll=0.01, what="three failed reads")
    await client.stop()
    await unreachable.aclose()

    warnings = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "redis unreachable" in warnings[0].getMessage()
    assert not any(record.exc_info for record in caplog.records)
