"""Redis streams bus against a real Redis: groups, acks, recovery, dead letters, lost state."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg
import pytest
import redis.asyncio as redis_async
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from shared.infra.bus import Bus, Consumer
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

GROUP = "workers"


class Recorder:
    """A handler that records what it saw and fails the first ``failures`` calls."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[str, bytes]] = []
        self.failures = failures

    async def __call__(self, entry_id: str, payload: bytes) -> None:
        self.calls.append((entry_id, payload))
        if len(self.calls) <= self.failures:
            raise ValueError(f"cannot handle {payload!r}")


def consumer(
    redis: redis_async.Redis, stream: str, name: str, handler: Recorder, **options: Any
) -> Consumer:
    options = {"block_ms": 0, **options}
    return Consumer(redis, stream, GROUP, name, handler, **options)


async def entries(redis: redis_async.Redis, stream: str) -> list[dict[bytes, bytes]]:
    """The fields of each entry of ``stream``, oldest first."""
    raw: Any = await redis.xrange(stream)
    return [fields for _, fields in raw]


async def payloads(redis: redis_async.Redis, stream: str) -> list[bytes]:
    return [fields[b"m"] for fields in await entries(redis, stream)]


async def pending_count(redis: redis_async.Redis, stream: str) -> int:
    return (await redis.xpending(stream, GROUP))["pending"]


async def members(redis: redis_async.Redis, stream: str) -> dict[str, int]:
    """The group's consumers by name, with how many entries each has pending."""
    return {
        member["name"].decode(): member["pending"]
        for member in await redis.xinfo_consumers(stream, GROUP)
    }


async def test_publish_appends_in_order(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"

    first = await bus.publish(stream, b"one")
    rest = await bus.publish_many([(stream, b"two"), (f"{key_prefix}other", b"x"), (stream, b"3")])

    assert isinstance(first, str) and len(rest) == 3
    assert first < rest[0] < rest[2]
    assert await payloads(redis, stream) == [b"one", b"two", b"3"]
    assert await payloads(redis, f"{key_prefix}other") == [b"x"]


async def test_ensure_group_twice_is_harmless(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}commands"
    await bus.ensure_group(stream, GROUP)
    await bus.ensure_group(stream, GROUP)

    groups = await redis.xinfo_groups(stream)
    assert [group["name"] for group in groups] == [GROUP.encode()]


async def test_group_members_share_entries_each_handled_once(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    await bus.publish_many([(stream, f"job-{n}".encode()) for n in range(20)])
    first, second = Recorder(), Recorder()
    members = [consumer(redis, stream, "a", first, batch=3), consumer(redis, stream, "b", second)]

    for _ in range(20):
        for member in members:
            await member.step()

    seen = [payload for _, payload in first.calls + second.calls]
    assert sorted(seen) == sorted(f"job-{n}".encode() for n in range(20))
    assert first.calls and second.calls
    assert await pending_count(redis, stream) == 0


async def test_failed_entry_stays_pending_until_a_retry_succeeds(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    entry_id = await bus.publish(stream, b"flaky")
    handler = Recorder(failures=1)
    member = consumer(redis, stream, "a", handler, claim_idle_ms=500)

    assert await member.step() == 1
    assert await pending_count(redis, stream) == 1
    assert await member.step() == 0  # not idle long enough to retry yet
    assert await await_until(member.step, what="the retry, once idle long enough") == 1

    assert handler.calls == [(entry_id, b"flaky"), (entry_id, b"flaky")]
    assert await pending_count(redis, stream) == 0


async def test_entry_of_a_dead_consumer_is_recovered_by_another(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    entry_id = await bus.publish(stream, b"orphan")
    await redis.xreadgroup(GROUP, "crashed", {stream: ">"})  # read, never acknowledged
    handler = Recorder()
    survivor = consumer(redis, stream, "survivor", handler, claim_idle_ms=500)

    assert await survivor.step() == 0
    assert await await_until(survivor.step, what="the claim, once idle long enough") == 1

    assert handler.calls == [(entry_id, b"orphan")]
    assert await pending_count(redis, stream) == 0


async def test_dead_member_with_nothing_pending_is_removed_by_the_recovery_scan(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    await bus.publish(stream, b"handled")
    assert await consumer(redis, stream, "killed", Recorder()).step() == 1  # then kill -9
    survivor = consumer(redis, stream, "survivor", Recorder(), claim_idle_ms=40, dead_after_ms=1000)

    await survivor.step()
    assert "killed" in await members(redis, stream)  # not idle long enough yet

    async def removed() -> bool:
        await survivor.step()
        return "killed" not in await members(redis, stream)

    await await_until(removed, what="the dead member removed by a scan")


async def test_dead_member_is_removed_only_once_its_pending_entries_were_claimed(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    entry_id = await bus.publish(stream, b"orphan")
    await redis.xreadgroup(GROUP, "killed", {stream: ">"})  # read, never acknowledged
    handler = Recorder()
    survivor = consumer(redis, stream, "survivor", handler, claim_idle_ms=2000, dead_after_ms=50)

    await asyncio.sleep(0.2)  # past dead_after_ms (the point: dead, yet kept for its entry)
    assert await survivor.step() == 0  # idle long enough to be dead, but not to be claimed
    assert (await members(redis, stream))["killed"] == 1
    assert await await_until(survivor.step, what="the claim, once idle long enough") == 1

    assert handler.calls == [(entry_id, b"orphan")]
    assert "killed" not in await members(redis, stream)
    assert await pending_count(redis, stream) == 0


async def test_stopped_member_leaves_the_group_unless_entries_are_pending_on_it(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    await bus.publish_many([(stream, b"fine"), (f"{key_prefix}flaky", b"fails")])
    await bus.ensure_group(f"{key_prefix}flaky", GROUP)
    stop = asyncio.Event()
    fine, flaky = Recorder(), Recorder(failures=1)
    running = [
        asyncio.create_task(consumer(redis, stream, "clean", fine, block_ms=50).run(stop)),
        asyncio.create_task(
            consumer(redis, f"{key_prefix}flaky", "failed", flaky, block_ms=50).run(stop)
        ),
    ]
    await await_until(lambda: fine.calls and flaky.calls, what="both handled")
    stop.set()
    await asyncio.wait_for(asyncio.gather(*running), timeout=30)

    assert await members(redis, stream) == {}
    assert await members(redis, f"{key_prefix}flaky") == {"failed": 1}


async def test_entry_that_keeps_failing_ends_in_the_dead_letter_stream(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    entry_id = await bus.publish(stream, b"poison")
    handler = Recorder(failures=1_000)
    member = consumer(redis, stream, "a", handler, claim_idle_ms=1, max_deliveries=3)

    for _ in range(6):
        await member.step()
        await asyncio.sleep(0.005)

    assert len(handler.calls) == 3
    dead = await entries(redis, member.dead_letter_stream)
    assert member.dead_letter_stream == f"{stream}:dead"
    assert len(dead) == 1
    fields = dead[0]
    assert fields[b"m"] == b"poison"
    assert fields[b"source_id"] == entry_id.encode()
    assert b"cannot handle" in fields[b"error"]
    assert await pending_count(redis, stream) == 0


class PostgresDownFor:
    """A handler whose database is unreachable for its first ``outages`` calls."""

    def __init__(self, outages: int) -> None:
        self.outages = outages
        self.calls = 0

    async def __call__(self, entry_id: str, payload: bytes) -> None:
        self.calls += 1
        if self.calls <= self.outages:
            raise psycopg.OperationalError("connection refused")


async def test_an_outage_is_waited_out_not_counted_towards_dead_lettering(
    bus: Bus, redis: redis_async.Redis, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    stream = f"{key_prefix}events"
    await bus.ensure_group(stream, GROUP)
    await bus.publish(stream, b"event")
    handler = PostgresDownFor(outages=4)
    member = Consumer(redis, stream, GROUP, "a", handler, block_ms=0, max_deliveries=1)

    with caplog.at_level(logging.INFO, logger="shared.infra.bus"):
        assert await member.step() == 1

    assert handler.calls == 5
    assert await redis.xlen(member.dead_letter_stream) == 0
    assert await pending_count(redis, stream) == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()


async def test_entry_abandoned_too_often_is_dead_lettered_without_handling(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    """A payload that crashes its consumer outright must not crash every consumer in turn."""
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    entry_id = await bus.publish(stream, b"crasher")
    await redis.xreadgroup(GROUP, "crashed-1", {stream: ">"})
    await redis.xclaim(stream, GROUP, "crashed-2", 0, [entry_id])
    handler = Recorder()
    member = consumer(redis, stream, "a", handler, claim_idle_ms=0, max_deliveries=2)

    assert await member.step() == 1

    assert handler.calls == []
    dead = await entries(redis, f"{stream}:dead")
    assert [fields[b"source_id"] for fields in dead] == [entry_id.encode()]
    assert await pending_count(redis, stream) == 0


async def test_consumer_recreates_its_group_after_redis_lost_everything(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    await bus.ensure_group(stream, GROUP)
    handler = Recorder()
    member = consumer(redis, stream, "a", handler)
    await bus.publish(stream, b"before")
    assert await member.step() == 1

    await redis.delete(stream)  # what a restarted Redis without persistence looks like
    assert await member.step() == 0
    await bus.publish(stream, b"after")
    assert await member.step() == 1

    assert [payload for _, payload in handler.calls] == [b"before", b"after"]


async def test_run_handles_entries_until_stopped(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}requests"
    handler = Recorder()
    member = consumer(redis, stream, "a", handler, block_ms=50)
    stop = asyncio.Event()
    running = asyncio.create_task(member.run(stop))

    await bus.publish(stream, b"late")  # the group may not exist yet: run must create it
    await await_until(lambda: handler.calls, what="the entry handled")
    stop.set()
    await asyncio.wait_for(running, timeout=30)

    assert [payload for _, payload in handler.calls] == [b"late"]


async def test_run_survives_an_unreachable_redis(caplog: pytest.LogCaptureFixture) -> None:
    unreachable = redis_async.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    handler = Recorder()
    member = Consumer(unreachable, "requests", GROUP, "a", handler)
    caplog.set_level(logging.WARNING, logger="shared.infra.bus")
    stop = asyncio.Event()
    running = asyncio.create_task(member.run(stop))

    await await_until(  # a failed attempt, logged as an outage: and it goes on
        lambda: any(r.name == "shared.infra.bus" for r in caplog.records), what="the outage logged"
    )
    assert not running.done()
    stop.set()
    await asyncio.wait_for(running, timeout=30)
    await unreachable.aclose()

    assert handler.calls == []


@pytest.mark.parametrize(
    "client_options",
    [
        {"decode_responses": True},
        {"protocol": 3},
        {"protocol": 3, "legacy_responses": False},
    ],
    ids=["decoded", "resp3", "resp3-unified"],
)
async def test_consumer_reads_every_reply_shape_of_the_client(
    redis_url: str, redis: redis_async.Redis, key_prefix: str, client_options: dict[str, Any]
) -> None:
    stream = f"{key_prefix}requests"
    client = redis_async.Redis.from_url(redis_url, **client_options)
    try:
        await Bus(client).publish_many([(stream, b"first"), (stream, b"second")])
        await Bus(client).ensure_group(stream, GROUP)
        handler = Recorder(failures=1)
        member = consumer(client, stream, "a", handler, claim_idle_ms=0)

        assert await member.step() == 2
        assert await member.step() == 1
    finally:
        await client.aclose()

    assert [payload for _, payload in handler.calls] == [b"first", b"second", b"first"]
    assert isinstance(handler.calls[0][0], str)
    assert await pending_count(redis, stream) == 0


class BatchRecorder:
    """A batch handler that records each batch it got and fails (``ValueError``) any batch
    holding a payload in ``poison``, or (``psycopg.OperationalError``) its first ``outages``
    calls."""

    def __init__(self, poison: frozenset[bytes] = frozenset(), outages: int = 0) -> None:
        self.batches: list[list[tuple[str, bytes]]] = []
        self.poison = poison
        self.outages = outages

    async def __call__(self, items: list[tuple[str, bytes]]) -> None:
        self.batches.append(list(items))
        if len(self.batches) <= self.outages:
            raise psycopg.OperationalError("connection refused")
        if any(payload in self.poison for _, payload in items):
            raise ValueError("cannot handle this batch")


class PoisonRecorder(Recorder):
    """An entry handler that fails on the payloads in ``poison`` only."""

    def __init__(self, poison: frozenset[bytes]) -> None:
        super().__init__()
        self.poison = poison

    async def __call__(self, entry_id: str, payload: bytes) -> None:
        self.calls.append((entry_id, payload))
        if payload in self.poison:
            raise ValueError(f"cannot handle {payload!r}")


async def test_batch_handler_gets_each_read_whole_and_in_order(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"
    await bus.ensure_group(stream, GROUP)
    ids = await bus.publish_many([(stream, f"event-{n}".encode()) for n in range(7)])
    one_by_one, batches = Recorder(), BatchRecorder()
    member = consumer(redis, stream, "a", one_by_one, batch=5, batch_handler=batches)

    assert await member.step() == 5
    assert await member.step() == 2
    assert await member.step() == 0

    assert batches.batches == [
        [(entry_id, f"event-{n}".encode()) for n, entry_id in enumerate(ids[:5])],
        [(entry_id, f"event-{n}".encode()) for n, entry_id in enumerate(ids[5:], start=5)],
    ]
    assert one_by_one.calls == []
    assert await pending_count(redis, stream) == 0


async def test_a_failing_batch_falls_back_to_its_entries_one_at_a_time(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    """Only the poison entry is retried and, in the end, dead-lettered; not its batch."""
    stream = f"{key_prefix}events"
    await bus.ensure_group(stream, GROUP)
    poison = frozenset({b"poison"})
    ids = await bus.publish_many([(stream, b"fine-1"), (stream, b"poison"), (stream, b"fine-2")])
    one_by_one, batches = PoisonRecorder(poison), BatchRecorder(poison)
    member = consumer(
        redis, stream, "a", one_by_one, batch_handler=batches, claim_idle_ms=1, max_deliveries=2
    )

    assert await member.step() == 3
    assert [payload for _, payload in one_by_one.calls] == [b"fine-1", b"poison", b"fine-2"]
    assert await pending_count(redis, stream) == 1  # the poison entry only
    for _ in range(4):  # the recovery scan retries it (as a batch, then alone) until dead
        await asyncio.sleep(0.005)
        await member.step()

    assert [payload for _, payload in one_by_one.calls].count(b"fine-1") == 1
    assert [payload for _, payload in one_by_one.calls].count(b"poison") == 2
    assert batches.batches[1:] == [[(ids[1], b"poison")]]
    dead = await entries(redis, member.dead_letter_stream)
    assert [(fields[b"source_id"], fields[b"m"]) for fields in dead] == [
        (ids[1].encode(), b"poison")
    ]
    assert b"cannot handle" in dead[0][b"error"]
    assert await pending_count(redis, stream) == 0


async def test_an_outage_of_the_batch_handler_is_waited_out_not_counted(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"
    await bus.ensure_group(stream, GROUP)
    await bus.publish_many([(stream, b"one"), (stream, b"two")])
    one_by_one, batches = Recorder(), BatchRecorder(outages=3)
    member = consumer(redis, stream, "a", one_by_one, batch_handler=batches, max_deliveries=1)

    assert await member.step() == 2

    assert len(batches.batches) == 4
    assert one_by_one.calls == []  # an outage is no reason to go one at a time
    assert await redis.xlen(member.dead_letter_stream) == 0
    assert await pending_count(redis, stream) == 0


async def test_stopping_during_an_outage_leaves_the_batch_pending(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    stream = f"{key_prefix}events"
    await bus.ensure_group(stream, GROUP)
    await bus.publish_many([(stream, b"one"), (stream, b"two")])
    batches = BatchRecorder(outages=1_000)
    member = consumer(redis, stream, "a", Recorder(), batch_handler=batches, block_ms=50)
    stop = asyncio.Event()
    running = asyncio.create_task(member.run(stop))
    await await_until(lambda: len(batches.batches) >= 2, what="two batches tried")
    stop.set()
    await asyncio.wait_for(running, timeout=30)

    assert await pending_count(redis, stream) == 2
    assert await redis.xlen(member.dead_letter_stream) == 0


async def test_a_lingering_consumer_takes_a_trickle_in_batches(
    bus: Bus, redis: redis_async.Redis, key_prefix: str
) -> None:
    """One entry every 2 ms: without lingering each read takes about one; with 30 ms of
    lingering after a read that did not fill a batch, several at a time, none left behind."""
    stream = f"{key_prefix}events"
    await bus.ensure_group(stream, GROUP)
    batches = BatchRecorder()
    member = consumer(
        redis, stream, "a", Recorder(), batch_handler=batches, block_ms=100, linger_s=0.03
    )
    stop = asyncio.Event()
    running = asyncio.create_task(member.run(stop))
    loop = asyncio.get_running_loop()
    began = loop.time()
    for n in range(40):
        await bus.publish_many([(stream, f"event-{n}".encode())])
        await asyncio.sleep(0.002)  # the trickle (the point of the test)
    trickled_s = loop.time() - began
    await await_until(
        lambda: sum(len(batch) for batch in batches.batches) >= 40, what="all 40 handled"
    )
    stop.set()
    await asyncio.wait_for(running, timeout=30)
    handled = [payload for batch in batches.batches for _, payload in batch]
    assert handled == [f"event-{n}".encode() for n in range(40)]
    # a batch spans at least the 30 ms lingered (more batches if publishing was slow here)
    most = max(10, int(trickled_s / 0.03) + 2)
    assert len(batches.batches) <= most, ([len(batch) for batch in batches.batches], trickled_s)
    assert await pending_count(redis, stream) == 0
