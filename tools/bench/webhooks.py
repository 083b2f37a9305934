"""``bench webhooks``: deliveries to a local receiver through ``playtable webhooks`` processes
of the benchmark's own: how many a second, how long after the commit, and how a backlog drains
after an outage of half the subscribers."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import uuid
from typing import Any

import msgspec

from shared.infra.settings import Settings, stream_key
from shared.infra.streams import MATCH_EVENTS_STREAM

BENCH_EVENT = "WebhookBenchPinged"
BACKLOG_EVENT = "WebhookBenchBacklog"
"""The backlog's subscriber gets no events published during the benchmark, only its backlog."""


async def bench_webhooks(
    settings: Settings,
    subscriptions: int,
    events: int,
    rate: float,
    workers: int,
    outage_s: float = 0.0,
    backlog: int = 0,
) -> int:
    """Publish ``events`` match events (``rate`` per second, over ten match streams) to
    ``subscriptions`` subscribers at a local receiver, through our own ``playtable webhooks``
    processes; measure deliveries per second and the delay from each event's commit time
    (``occurred_at_ms``) to its receipt.

    With ``outage_s``, half the subscribers' receiver answers 503 for that long from the
    first event: then how long its backlog took to arrive once it was back, whether each
    stream came in order, and the other half's delays meanwhile.

    With ``backlog``, one more subscriber has that many deliveries due when publishing starts
    (over ``BACKLOG_STREAMS`` streams, created a minute before, handed over as enabling a
    subscription that missed them does): how long they took to arrive, and the other
    subscribers' delays while they drained."""
    import subprocess
    import sys

    from aiohttp import web

    from shared.domain.messages import EventEnvelope, metadata
    from shared.infra.bus import redis_client
    from shared.infra.db import open_pool

    run_id = uuid.uuid4().hex[:8]
    expected = subscriptions * events + backlog
    backlog_name = f"bench-{run_id}-backlog"
    backlog_received = 0
    during_backlog_ms: list[float] = []
    """The other subscribers' delays while the backlog drained."""
    delays_ms: list[float] = []
    done = asyncio.Event()
    first_receipt = last_receipt = 0.0
    back_at = float("inf")  # set when publishing starts
    down_names = {f"bench-{run_id}-{n}" for n in range(subscriptions // 2)} if outage_s else set()
    refused = 0
    received: dict[str, list[tuple[str, int]]] = {}
    """Each subscriber's receipts in order: (stream, version)."""
    healthy_delays_ms: list[float] = []
    drained_at = 0.0
    """When the last delivery to a subscriber that was down arrived."""

    async def receive(request: web.Request) -> web.Response:
        nonlocal first_receipt, last_receipt, refused, drained_at, backlog_received
        name = request.match_info["name"]
        body = await request.read()
        now = time.time()
        if name == backlog_name:
            backlog_received += 1
            drained_at = now
            if backlog_received + len(delays_ms) >= expected:
                done.set()
            return web.Response(status=204)
        if name in down_names and now < back_at:
            refused += 1
            return web.Response(status=503)
        webhook = msgspec.json.decode(body)
        received.setdefault(name, []).append((webhook["stream_id"], webhook["version"]))
        delay_ms = (now - webhook["data"]["sent_at"]) * 1000
        delays_ms.append(delay_ms)
        if name in down_names:
            drained_at = now
        else:
            healthy_delays_ms.append(delay_ms)
        if backlog_received < backlog:
            during_backlog_ms.append(delay_ms)
        first_receipt = first_receipt or now
        last_receipt = now
        if backlog_received + len(delays_ms) >= expected:
            done.set()
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/{name}", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    prefix = f"bench-webhooks-{uuid.uuid4().hex[:8]}"
    pool = await open_pool(settings.database_url, min_size=1, max_size=2)
    bench_app = f"bench-{run_id}"  # the app the events and the subscriptions are of
    names = [f"bench-{run_id}-{n}" for n in range(subscriptions)]
    names += [backlog_name] if backlog else []
    async with pool.connection() as conn:
        for name in names:
            await conn.execute(
                "INSERT INTO webhook_subscriptions (id, url, event_types, secret, app_id)"
                " VALUES (%s, %s, %s, %s, %s)",
                (
                    name,
                    f"http://127.0.0.1:{port}/{name}",
                    [BACKLOG_EVENT if name == backlog_name else BENCH_EVENT],
                    "whsec_" + "A" * 32,
                    bench_app,
                ),
            )
    env = {
        **os.environ,
        "PLAYTABLE_STREAM_PREFIX": prefix,
        "PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "PLAYTABLE_LOG_LEVEL": "warning",
    }
    env.pop("PLAYTABLE_INSTANCE_ID", None)
    processes = [
        subprocess.Popen([sys.executable, "-m", "services.operator.cli", "webhooks"], env=env)
        for _ in range(workers)
    ]
    redis = redis_client(settings)
    stream = stream_key(prefix, MATCH_EVENTS_STREAM)
    try:
        await asyncio.sleep(3.0)  # the workers connect and the dispatchers join the group
        due = await _backlog_due(pool, backlog_name, backlog) if backlog else []
        started = time.time()
        if due:
            await asyncio.to_thread(_hand_over, settings, prefix, due)
        back_at = started + outage_s if outage_s else back_at
        for number in range(events):
            data = msgspec.Raw(msgspec.json.encode({"sent_at": time.time()}))
            envelope = EventEnvelope(
                stream_id=f"match-bench-{run_id}-{number % 10}",
                version=number // 10 + 1,
                type=BENCH_EVENT,
                data=data,
                metadata=metadata(correlation_id=run_id, app_id=bench_app),
            )
            await redis.xadd(stream, {b"m": msgspec.json.encode(envelope)})
            await asyncio.sleep(max(0.0, started + (number + 1) / rate - time.time()))
        try:
            await asyncio.wait_for(done.wait(), timeout=120 + max(0.0, back_at - time.time()))
        except TimeoutError:
            print(f"only {len(delays_ms)} of {expected} deliveries arrived in time")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        async with pool.connection() as conn:
            await conn.execute("DELETE FROM webhook_subscriptions WHERE id = ANY(%s)", (names,))
        await pool.close()
        keys = [key async for key in redis.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        await runner.cleanup()
    if not delays_ms:
        return 1
    ordered = sorted(delays_ms)
    elapsed = max(last_receipt - started, 1e-9)
    print(
        f"webhooks: {len(delays_ms)} deliveries ({events} events x {subscriptions} subscriptions,"
        f" {rate:g} events/s, {workers} worker process(es)) in {elapsed:.2f} s:"
        f" {len(delays_ms) / elapsed:,.0f} deliveries/s; delay from commit to receipt"
        f" p50 {ordered[len(ordered) // 2]:.0f} ms, p99 {ordered[int(len(ordered) * 0.99)]:.0f} ms"
    )
    if backlog:
        during = sorted(during_backlog_ms) or [0.0]
        print(
            f"backlog: {backlog_received} of {backlog} deliveries to one subscriber arrived by"
            f" {max(0.0, drained_at - started):.1f} s; meanwhile the other subscribers'"
            f" {len(during_backlog_ms)} deliveries: p50 {during[len(during) // 2]:.0f} ms,"
            f" p99 {during[int(len(during) * 0.99)]:.0f} ms"
        )
    if outage_s:
        _report_outage(
            received, down_names, refused, back_at, drained_at, healthy_delays_ms, events
        )
    return 0


BACKLOG_STREAMS = 50


async def _backlog_due(pool: Any, subscription: str, count: int) -> list[tuple[Any, ...]]:
    """``count`` pending deliveries of ``subscription``, created a minute ago over
    ``BACKLOG_STREAMS`` streams: its ``(id, subscription, stream, fresh)`` rows."""
    body = msgspec.json.encode({"type": BENCH_EVENT, "data": {"sent_at": 0}})
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id, event_type,"
            " body, occurred_at_ms, created_at)"
            " SELECT %(subscription)s, stream || ':' || n || ':' || %(type)s, stream, %(type)s,"
            " %(body)s, 0, now() - interval '1 minute'"
            " FROM generate_series(1, %(count)s) AS n,"
            " LATERAL (SELECT 'backlog-' || n %% %(streams)s AS stream) AS s ORDER BY n"
            " RETURNING id, subscription_id, stream_id, false",
            {
                "subscription": subscription,
                "streams": BACKLOG_STREAMS,
                "type": BENCH_EVENT,
                "body": body,
                "count": count,
            },
        )
        return await cursor.fetchall()


def _hand_over(settings: Settings, prefix: str, due: list[tuple[Any, ...]]) -> None:
    """Enqueue the backlog on the benchmark's queues, as enabling a subscription does."""
    from services.webhooks.celery_app import configure
    from services.webhooks.delivery import enqueue, hand_over

    configure(msgspec.structs.replace(settings, stream_prefix=prefix))
    hand_over(due, enqueue)


def _report_outage(
    received: dict[str, list[tuple[str, int]]],
    down_names: set[str],
    refused: int,
    back_at: float,
    drained_at: float,
    healthy_delays_ms: list[float],
    events: int,
) -> None:
    """The backlog's drain once the receiver was back, its order, and the others' delays."""
    out_of_order = duplicates = 0
    for receipts in received.values():
        by_stream: dict[str, list[int]] = {}
        for stream, version in receipts:
            by_stream.setdefault(stream, []).append(version)
        for versions in by_stream.values():
            out_of_order += sum(1 for a, b in itertools.pairwise(versions) if b < a)
            duplicates += len(versions) - len(set(versions))
    backlog = sum(len(set(received.get(name, []))) for name in down_names)
    missing = len(down_names) * events - backlog
    healthy = sorted(healthy_delays_ms)
    print(
        f"outage: {len(down_names)} subscribers answered 503 {refused} times until"
        f" {time.strftime('%H:%M:%S', time.localtime(back_at))}; their {backlog} deliveries"
        f" arrived by {max(0.0, drained_at - back_at):.1f} s after"
        f" they were back ({missing} missing, {duplicates} twice, {out_of_order} out of"
        f" order in their stream); the other subscribers meanwhile: p50"
        f" {healthy[len(healthy) // 2]:.0f} ms, p99 {healthy[int(len(healthy) * 0.99)]:.0f} ms"
    )
