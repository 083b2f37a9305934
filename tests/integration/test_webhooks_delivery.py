"""Webhook deliveries against real Postgres and a real (loopback) receiver that keeps failing:
each stream's deliveries go out in order, one attempt at a time, and those waiting behind a
failing one cost nothing while they wait. Celery's part (running a task when due, again after
its countdown) is played by a small scheduler that counts the task runs."""

from __future__ import annotations

import asyncio
import heapq
import http.server
import itertools
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from services.webhooks import delivery
from services.webhooks.dispatcher import Dispatcher
from services.webhooks.targets import allowed_networks
from shared.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class FailingReceiver(http.server.BaseHTTPRequestHandler):
    """Answers every delivery 503, counting them."""

    requests = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).requests += 1
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def failing_receiver() -> Iterator[str]:
    FailingReceiver.requests = 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FailingReceiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


class Scheduler:
    """Celery's part: runs each enqueued delivery when due and again after the countdown its
    run asks for, one at a time, counting the runs."""

    def __init__(self, context: delivery._Context) -> None:
        self.context = context
        self.due: list[tuple[float, int, int]] = []
        self.runs: Counter[int] = Counter()
        self._order = itertools.count()

    def enqueue(self, delivery_ids: list[int]) -> None:
        for delivery_id in delivery_ids:
            self.after(0.0, delivery_id)

    def after(self, wait_s: float, delivery_id: int) -> None:
        heapq.heappush(self.due, (time.monotonic() + wait_s, next(self._order), delivery_id))

    async def run(self, timeout_s: float) -> None:
        """Until no task is left (all settled, or parked with nothing to wake them)."""
        deadline = time.monotonic() + timeout_s
        while self.due and time.monotonic() < deadline:
            when, _, delivery_id = heapq.heappop(self.due)
            await asyncio.sleep(max(0.0, when - time.monotonic()))
            self.runs[delivery_id] += 1
            wait_s = await asyncio.to_thread(delivery.attempt_delivery, self.context, delivery_id)
            if wait_s is not None:
                self.after(wait_s, delivery_id)


async def test_deliveries_behind_a_failing_one_wait_without_runs_and_keep_their_order(
    pool: AsyncConnectionPool,
    database_url: str,
    failing_receiver: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(
        database_url=database_url,
        webhook_allowed_networks="127.0.0.0/8",
        webhook_retry_base_s=0.05,
        webhook_max_attempts=3,
        webhook_timeout_s=2.0,
    )
    subscription = f"down-{uuid.uuid4().hex[:8]}"
    streams = {"match-a": 10, "match-b": 3}
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO webhook_subscriptions (id, url, event_types, secret)"
            " VALUES (%s, %s, '{}', 'whsec_AAAA')",
            (subscription, failing_receiver),
        )
        for stream, events in streams.items():
            for version in range(1, events + 1):
                await conn.execute(
                    "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id,"
                    " event_type, body, occurred_at_ms) VALUES (%s, %s, %s, 'Moved', '{}', 0)",
                    (subscription, f"{stream}:{version}:Moved", stream),
                )
        cursor = await conn.execute(
            "SELECT id FROM webhook_deliveries WHERE subscription_id = %s ORDER BY id",
            (subscription,),
        )
        delivery_ids = [row[0] for row in await cursor.fetchall()]
    with (
        ConnectionPool(database_url, min_size=1, max_size=2, kwargs={"autocommit": True}) as sync,
        httpx.Client(timeout=settings.webhook_timeout_s) as http,
    ):
        context = delivery._Context(settings, sync, http, allowed_networks("127.0.0.0/8"))
        scheduler = Scheduler(context)
        monkeypatch.setattr(delivery, "enqueue", scheduler.enqueue)
        scheduler.enqueue(delivery_ids)  # as the dispatcher does: every one at once
        await scheduler.run(timeout_s=30)

    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT d.stream_id, d.status, count(a.id) FROM webhook_deliveries d"
            " LEFT JOIN webhook_attempts a ON a.delivery_id = d.id"
            " WHERE d.subscription_id = %s GROUP BY d.id ORDER BY d.id",
            (subscription,),
        )
        outcomes = await cursor.fetchall()
        cursor = await conn.execute(
            "SELECT d.stream_id, d.id FROM webhook_attempts a"
            " JOIN webhook_deliveries d ON d.id = a.delivery_id"
            " WHERE d.subscription_id = %s ORDER BY a.id",
            (subscription,),
        )
        attempted = await cursor.fetchall()
        await conn.execute("DELETE FROM webhook_subscriptions WHERE id = %s", (subscription,))

    total = sum(streams.values())
    assert [status for _, status, _ in outcomes] == ["failed"] * total
    assert [count for _, _, count in outcomes] == [3] * total  # every one tried to the end
    assert FailingReceiver.requests == 3 * total
    for stream in streams:  # one delivery after the other, never interleaved
        order = [delivery_id for of, delivery_id in attempted if of == stream]
        assert order == sorted(order)
    # each: its first run (sent, or parked behind an earlier one), being woken, two retries;
    # polling while parked made it hundreds
    assert sum(scheduler.runs.values()) <= 4 * total


async def test_the_redrive_sweep_resends_only_the_first_pending_delivery_of_each_stream(
    pool: AsyncConnectionPool,
) -> None:
    """Those behind it wait for it on purpose; once it has ended without waking the next (its
    worker died in between), the next is first and is resent."""
    subscription = f"late-{uuid.uuid4().hex[:8]}"
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO webhook_subscriptions (id, url, event_types, secret)"
            " VALUES (%s, 'http://127.0.0.1/', '{}', 'whsec_AAAA')",
            (subscription,),
        )
        for version in (1, 2, 3):
            await conn.execute(
                "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id,"
                " event_type, body, occurred_at_ms, due_at)"
                " VALUES (%s, %s, 'match-c', 'Moved', '{}', 0, now() - interval '1 hour')",
                (subscription, f"match-c:{version}:Moved"),
            )
        cursor = await conn.execute(
            "SELECT id FROM webhook_deliveries WHERE subscription_id = %s ORDER BY id",
            (subscription,),
        )
        first, second, _ = [row[0] for row in await cursor.fetchall()]
    enqueued: list[list[int]] = []
    dispatcher = Dispatcher(pool, enqueued.append)
    try:
        await dispatcher.redrive(60)
        await dispatcher.redrive(60)  # due now: not overdue again
        async with pool.connection() as conn:
            await conn.execute(
                "UPDATE webhook_deliveries SET status = 'delivered', due_at = now()"
                " - interval '1 hour' WHERE id = %s",
                (first,),
            )
        await dispatcher.redrive(60)
    finally:
        async with pool.connection() as conn:
            await conn.execute("DELETE FROM webhook_subscriptions WHERE id = %s", (subscription,))
    mine = [[i for i in batch if i in (first, second)] for batch in enqueued]
    assert [batch for batch in mine if batch] == [[first], [second]]
