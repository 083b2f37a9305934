"""The dispatcher: turns each published lobby and match event into one delivery per matching
subscription, and hands the deliveries to the Celery workers.

Handling an event records it in ``webhook_handled`` and creates its delivery rows (unique per
subscription and event) in one transaction, so an event redelivered by the consumer group after
a restart creates nothing twice, and one left unacknowledged is handled by the next dispatcher.
Deliveries committed but never enqueued (a crash in between, or Redis losing the queue) are
enqueued again by a periodic sweep once overdue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool

from shared.bus import Bus, Consumer
from shared.messages import EventEnvelope
from shared.settings import Settings

log = logging.getLogger(__name__)

GROUP = "webhooks"
SOURCE_STREAMS = ("lobby-events", "match-events")

_envelope_decoder = msgspec.json.Decoder(EventEnvelope)
_json = msgspec.json.Encoder()


class WebhookBody(msgspec.Struct):
    """What a receiver gets: the Standard Webhooks ``type``/``timestamp``/``data`` layout plus
    the event's place in its stream; ``data`` is the spectator's redaction, as published."""

    type: str
    timestamp: str
    stream_id: str
    version: int
    data: msgspec.Raw


def event_key(envelope: EventEnvelope) -> str:
    """Unique per event (``MatchFinished`` shares the version of the match's last event); it
    is the ``webhook-id`` receivers de-duplicate by."""
    return f"{envelope.stream_id}:{envelope.version}:{envelope.type}"


def webhook_body(envelope: EventEnvelope) -> bytes:
    occurred = datetime.fromtimestamp(envelope.metadata.occurred_at_ms / 1000, UTC)
    return _json.encode(
        WebhookBody(
            type=envelope.type,
            timestamp=occurred.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            stream_id=envelope.stream_id,
            version=envelope.version,
            data=envelope.data,
        )
    )


_HANDLE_EVENT = """
WITH handled AS (
    INSERT INTO webhook_handled (event_key) VALUES (%(key)s)
    ON CONFLICT DO NOTHING
    RETURNING 1
), remembered AS (
    INSERT INTO webhook_match_tables (match_id, table_id)
    SELECT %(started_match)s, %(table)s
    WHERE %(started_match)s::text IS NOT NULL AND EXISTS (SELECT FROM handled)
    ON CONFLICT DO NOTHING
)
INSERT INTO webhook_deliveries
    (subscription_id, event_key, stream_id, event_type, body, occurred_at_ms)
SELECT s.id, %(key)s, %(stream)s, %(type)s, %(body)s, %(occurred)s
FROM webhook_subscriptions s
WHERE EXISTS (SELECT FROM handled)
  AND s.enabled
  AND s.app_id = %(app)s
  AND (cardinality(s.event_types) = 0 OR %(type)s = ANY (s.event_types))
  AND (s.match_id IS NULL OR %(stream)s = 'match-' || s.match_id)
  AND (s.table_id IS NULL OR %(stream)s = 'table-' || s.table_id OR EXISTS (
        SELECT 1 FROM webhook_match_tables m
        WHERE 'match-' || m.match_id = %(stream)s AND m.table_id = s.table_id))
ORDER BY s.id
FOR KEY SHARE OF s
ON CONFLICT (subscription_id, event_key) DO NOTHING
RETURNING id
"""
"""One statement, so one round trip and one commit per event: it records the event as handled
and, only if it was not handled before, remembers the match a table started (a table's filter
also admits that match's events) and creates one delivery per matching subscription of the
event's app (its metadata names it: no other app's subscription ever gets it). Locking the
subscriptions skips one deleted meanwhile, where its delivery would break the foreign key."""

_REDRIVE = """
UPDATE webhook_deliveries SET due_at = now()
WHERE status = 'pending' AND due_at < now() - make_interval(secs => %s)
RETURNING id
"""


class Dispatcher:
    def __init__(self, pool: AsyncConnectionPool, enqueue: Callable[[list[int]], None]) -> None:
        self._pool = pool
        self._enqueue = enqueue

    async def handle(self, _entry_id: str, payload: bytes) -> None:
        envelope = _envelope_decoder.decode(payload)
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                _HANDLE_EVENT,
                {
                    "key": event_key(envelope),
                    "stream": envelope.stream_id,
                    "type": envelope.type,
                    "body": webhook_body(envelope),
                    "occurred": envelope.metadata.occurred_at_ms,
                    "app": envelope.metadata.app_id,
                    "started_match": _started_match(envelope),
                    "table": envelope.stream_id.removeprefix("table-"),
                },
            )
            delivery_ids = sorted(row[0] for row in await cursor.fetchall())
        if delivery_ids:
            self._enqueue(delivery_ids)

    async def redrive(self, overdue_s: float) -> int:
        """Enqueue again the pending deliveries overdue by ``overdue_s``: their task is lost."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute(_REDRIVE, (overdue_s,))
            delivery_ids = sorted(row[0] for row in await cursor.fetchall())
        if delivery_ids:
            log.warning("re-enqueueing %d overdue webhook deliveries", len(delivery_ids))
            self._enqueue(delivery_ids)
        return len(delivery_ids)


def _started_match(envelope: EventEnvelope) -> str | None:
    """The match a ``TableStarted`` event started (``None`` for any other event)."""
    if envelope.type != "TableStarted":
        return None
    return msgspec.json.decode(envelope.data).get("match_id")


async def dispatch(
    settings: Settings,
    pool: AsyncConnectionPool,
    enqueue: Callable[[list[int]], None],
    stop: asyncio.Event,
) -> None:
    """Consume both published streams and sweep for lost deliveries until ``stop`` is set."""
    dispatcher = Dispatcher(pool, enqueue)
    redis = redis_async.Redis.from_url(settings.redis_url)
    bus = Bus(redis)
    try:
        jobs = []
        for name in SOURCE_STREAMS:
            stream = settings.stream(name)
            await bus.ensure_group(stream, GROUP)
            consumer = Consumer(
                redis,
                stream,
                GROUP,
                settings.instance_id,
                dispatcher.handle,
                dead_after_ms=settings.dead_consumer_after_ms,
            )
            jobs.append(asyncio.create_task(consumer.run(stop)))
        while not stop.is_set():
            try:
                await dispatcher.redrive(settings.webhook_redrive_after_s)
            except Exception:
                log.exception("webhook redrive sweep failed; trying again later")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=settings.webhook_redrive_after_s / 4)
        await asyncio.gather(*jobs, return_exceptions=True)
    finally:
        await redis.aclose()
