"""Two looks at Redis that tell the dispatcher's sweep (``dispatch_loop``) when pending
deliveries may have lost their Celery task: ``QueueWatch`` (Redis may have lost every queued
task: re-drive whatever is due) and ``QueueAge`` (how long the oldest queued task has waited:
a delivery overdue by more than that has left the queue, so its task is lost).

Apart from ``dispatcher`` because they read only Redis, and the delivery task's message as
``delivery`` and ``celery_app`` enqueue it, never Postgres.
"""

from __future__ import annotations

import json
import time
from typing import Any

from services.webhooks.celery_app import queues
from services.webhooks.delivery import ENQUEUE_FAILED, ENQUEUED_AT
from shared.infra.bus import BACKING_SERVICE_OUTAGES
from shared.infra.settings import Settings
from shared.infra.streams import WEBHOOK_QUEUE_MARKER


class QueueWatch:
    """Says when Redis may have lost queued delivery tasks: its marker key is gone (a
    ``FLUSHALL``, a restart without persistence), Redis did not answer at the last look, or
    this process could not enqueue a task (``ENQUEUE_FAILED``). The dispatcher then re-drives
    every delivery that is due, first in its stream and held by no task, at once.

    Re-driving one whose task was not lost sends nothing twice: a task holds a delivery's row
    for its attempt and skips one another task holds, and sends only a pending delivery that
    is due (one delivered meanwhile, or rescheduled for a retry, it leaves alone)."""

    def __init__(self, redis: Any, settings: Settings) -> None:
        self._redis = redis
        self._marker = settings.stream(WEBHOOK_QUEUE_MARKER)
        self._unanswered = False

    async def lost(self) -> bool:
        """Whether tasks may have been lost since the last look (and Redis answers now)."""
        try:
            created = await self._redis.set(self._marker, b"1", nx=True)
        except BACKING_SERVICE_OUTAGES:
            self._unanswered = True
            return False
        lost = bool(created) or self._unanswered or ENQUEUE_FAILED.is_set()
        self._unanswered = False
        ENQUEUE_FAILED.clear()
        return lost


class QueueAge:
    """How long the oldest task waiting on either delivery queue has waited, from the header
    every task message carries (``ENQUEUED_AT``). A delivery due longer ago than that (and a few
    seconds more, for the enqueue after the commit) has left the queue if it was ever enqueued:
    pending, first in its stream and held by no task, its task is lost. A long queue thus costs
    no duplicate tasks, only a later look."""

    def __init__(self, redis: Any, settings: Settings) -> None:
        self._redis = redis
        self._keys = [f"{settings.stream_prefix}:celery:{queue}" for queue in queues(settings)]

    async def seconds(self) -> float | None:
        """The oldest task's wait (0: none queued); None when unknown (Redis does not answer,
        or a message of a release without the header is first in line)."""
        waited = 0.0
        for key in self._keys:
            try:
                oldest = await self._redis.lindex(key, -1)  # kombu pushes left, pops right
            except BACKING_SERVICE_OUTAGES:
                return None
            if oldest is None:
                continue
            try:
                enqueued_at = float(json.loads(oldest)["headers"][ENQUEUED_AT])
            except (ValueError, KeyError, TypeError):
                return None
            waited = max(waited, time.time() - enqueued_at)
        return waited
