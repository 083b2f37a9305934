"""The Celery app and its delivery task: POST a batch of signed webhooks at once, record the
attempts, then retry with exponential backoff, stop, or disable the subscription.

A task carries up to ``DELIVERY_BATCH`` deliveries. Its thread locks their rows, hands their
POSTs to the worker process's event loop, which sends them concurrently over reused connections
(``Sender``), and records every attempt in one statement. A row is locked while its attempt
runs (a killed worker's locks end with its Postgres connection, and the dispatcher's look
enqueues its deliveries again within seconds; its task message, acknowledged late, comes back
once the broker's visibility timeout passes and finds nothing left to do) and a task whose row is
no longer pending (or gone with its deleted subscription, or not due yet: a stale retry) does
nothing with it, so a task that arrives twice sends at most once at a time and never after
success or deletion.

Deliveries of one subscription and one stream go out in order: within a batch they form a chain,
sent one after the other; a delivery that finds an earlier one of its stream still pending
elsewhere is parked (no task, nothing polled) until that one ends and wakes the next ones; a
receiver that is down costs one attempt at a time per stream. When a receiver answers again, the
deliveries of its other streams that wait for a retry are woken at once, so a backlog drains as
soon as the receiver is back rather than at each stream's next backoff.

A subscription whose deliveries keep failing for good (``webhook_disable_after_failures`` in a
row, for at least ``webhook_disable_after_s``), or whose target answers 410, is disabled; its
pending deliveries are then ``missed``, as are the events it gets while disabled, until it is
enabled again (which redelivers them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from psycopg import Connection

from services.webhooks.attempts import OUTCOMES, Attempt, Delivery, send_chains
from services.webhooks.celery_app import Context, backlog_queue, celery_app, shared_context
from services.webhooks.targets import Target, TargetRefused, check_target
from shared.infra.metrics import WEBHOOK_DELAY, WEBHOOK_DELIVERIES
from shared.infra.sealed import WEBHOOK_PREVIOUS_SECRET, WEBHOOK_SECRET, opened
from shared.infra.settings import Settings

log = logging.getLogger(__name__)

DELIVERY_BATCH = 100
"""Deliveries per task: one event's to a hundred subscribers go out together."""
WAKE_BATCH = 20
"""Deliveries of a stream woken together when the one before them ends (sent as one chain)."""
BACKLOG_BATCH = 20
"""Deliveries per task on the backlog queue: a fresh task waits for a worker's running tasks
to end, so those of a backlog are kept short (a backlog of 3,000 drained in 6 s rather than 3,
and another subscriber's deliveries meanwhile took 139-220 ms at the 99th percentile rather
than 657-894 with tasks of 100; ``docs/performance.md``)."""
FRESH_S = 2.0
"""A delivery created less than this long ago is fresh: its task goes on the fresh queue. Older
ones (a backlog draining, retries, deliveries re-driven) go on the backlog queue, which workers
take from in turns with the fresh one, so one subscriber's backlog never holds another's fresh
deliveries back."""
FRESH = f"created_at > now() - make_interval(secs => {FRESH_S})"
"""Whether a delivery row is fresh, in SQL: statements that wake deliveries answer it with each
``(id, subscription, stream)`` (``hand_over``)."""
ENQUEUED_AT = "playtable_enqueued_at"
"""A task message's header: when it was enqueued (Unix seconds), which tells the dispatcher how
long the oldest task of a queue has waited (``queue_watch.QueueAge``). Workers of any release
ignore a header they do not know."""
NOT_DUE_SLACK_S = 1.0
"""A task may run this much before its delivery's ``due_at`` (the broker's and Postgres's clocks
may differ); later than that it is a stale retry, superseded by a newer schedule."""

_LOCK = """
SELECT d.id
FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE d.id = ANY(%(ids)s) AND d.status = 'pending'
  AND d.due_at <= now() + make_interval(secs => %(slack)s)
ORDER BY d.id
FOR UPDATE OF d SKIP LOCKED FOR KEY SHARE OF s SKIP LOCKED
"""
"""The batch's pending deliveries that are due and that no other task holds, held for the
attempts: a subscription being deleted is skipped, and its deletion waits for attempts under
way (which may disable the subscription: holding it from the start keeps the two from
deadlocking)."""

_LOAD = """
SELECT d.id, d.event_key, d.body, d.attempts, d.subscription_id, d.stream_id, s.url, s.enabled,
       s.secret, s.previous_secret, coalesce(s.previous_secret_until > now(), false),
       (SELECT e.id FROM webhook_deliveries e
        WHERE e.subscription_id = d.subscription_id AND e.stream_id = d.stream_id
          AND e.status = 'pending' AND e.id < d.id
        ORDER BY e.id DESC LIMIT 1),
       d.occurred_at_ms, d.traceparent
FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE d.id = ANY(%s)
ORDER BY d.id
"""
"""The held deliveries, each with its subscription and the pending delivery before it in its
stream, if any, as of a snapshot taken once they are held (``_LOCK``).

Looking only after holding is what keeps a wake-up: a delivery's look at the one before it and
the wake-up sent when that one ends (``_WAKE_NEXT``, which waits for the row) are ordered by
the row lock. A look in the locking statement itself used that statement's snapshot, taken
before it held the row: the one before could end, and its wake-up lock, wake and enqueue the
row, in between; the wake-up's task then found the row held and skipped it, while the look,
as of its older snapshot, saw the one before still pending and parked it: nobody sent it until
the redrive sweep (five minutes then)."""

_RECORD = """
WITH outcome AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(codes)s::int[], %(durations)s::float8[],
                         %(errors)s::text[], %(statuses)s::text[], %(waits)s::float8[])
        AS o(id, status_code, duration_ms, error, status, wait_s)
), attempt AS (
    INSERT INTO webhook_attempts (delivery_id, status_code, duration_ms, error)
    SELECT id, status_code, duration_ms, error FROM outcome
)
UPDATE webhook_deliveries d
SET status = o.status, attempts = d.attempts + 1,
    due_at = now() + make_interval(secs => o.wait_s)
FROM outcome o WHERE d.id = o.id
"""
"""Log each attempt and set its delivery's outcome (pending: when the next attempt is due)."""

_TALLY = """
WITH tally AS (
    SELECT * FROM unnest(%(ids)s::text[], %(succeeded)s::bool[], %(failed)s::int[],
                         %(gone)s::bool[])
        AS t(id, succeeded, failed, gone)
), locked AS (
    SELECT s.id, s.enabled, s.failing_since IS NOT NULL AS was_failing,
           CASE WHEN t.succeeded THEN 0 ELSE s.failure_streak + t.failed END AS streak,
           CASE WHEN t.succeeded THEN NULL ELSE coalesce(s.failing_since, now()) END AS since,
           t.gone
    FROM webhook_subscriptions s JOIN tally t ON t.id = s.id
    WHERE t.gone OR (t.succeeded AND s.failing_since IS NOT NULL) OR t.failed > 0
    ORDER BY s.id
    FOR NO KEY UPDATE OF s
), verdict AS (
    SELECT *, enabled AND (gone OR (streak >= %(streak)s
                                    AND since <= now() - make_interval(secs => %(s)s)))
              AS disable
    FROM locked
)
UPDATE webhook_subscriptions s
SET failure_streak = v.streak, failing_since = v.since, enabled = s.enabled AND NOT v.disable,
    disabled_reason = CASE
        WHEN NOT v.disable THEN s.disabled_reason
        WHEN v.gone THEN 'the target answered 410 Gone'
        ELSE format('%%s attempts in a row failed, the first at %%s',
                    v.streak, date_trunc('second', v.since)) END
FROM verdict v WHERE s.id = v.id
RETURNING s.id, v.was_failing AND v.since IS NULL, v.disable
"""
"""Each subscription's failure streak after a batch: an attempt that succeeded ends it, each
failed one lengthens it. A long one (``streak`` attempts at least, over ``s`` seconds at least)
or a 410 disables the subscription. Only subscriptions that change are written (a healthy one
costs nothing), locked in id order so that batches running side by side never deadlock.
Answers which subscriptions recovered and which were disabled."""

_MISS_PENDING = """
UPDATE webhook_deliveries SET status = 'missed'
WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE subscription_id = ANY(%s) AND status = 'pending'
    ORDER BY id
    FOR UPDATE)
"""
"""A disabled subscription's pending deliveries: not sent, redelivered when it is enabled."""

_MISS = "UPDATE webhook_deliveries SET status = 'missed' WHERE id = ANY(%s)"

_WAKE_NEXT = f"""
WITH ended AS (
    SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[])
        AS e(subscription_id, stream_id, after_id)
), next AS (
    SELECT n.id FROM ended e CROSS JOIN LATERAL (
        SELECT x.id FROM webhook_deliveries x
        WHERE x.subscription_id = e.subscription_id AND x.stream_id = e.stream_id
          AND x.status = 'pending' AND x.id > e.after_id
        ORDER BY x.id LIMIT {WAKE_BATCH}) n
)
UPDATE webhook_deliveries SET due_at = now()
WHERE id IN (
    SELECT d.id FROM webhook_deliveries d JOIN next ON next.id = d.id
    WHERE d.status = 'pending'
    ORDER BY d.id
    FOR UPDATE OF d)
RETURNING id, subscription_id, stream_id, {FRESH}
"""
"""The next pending deliveries of each stream whose chain ended, sent on as a chain.

Run after that end is committed: a next delivery that parked in a transaction overlapping that
commit still holds its row, so this waits for it and then wakes it; one that looks later sees
the end and goes without waiting (and this wakes it once more, which does nothing). They are due
from now on: if their task is lost, the dispatcher's look for lost tasks sends them again. Rows
are locked in id order, as every statement that waits for delivery rows does, so two of these
never deadlock."""

_WAKE_WAITING = f"""
UPDATE webhook_deliveries SET due_at = now()
WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE subscription_id = ANY(%s) AND status = 'pending' AND attempts > 0 AND due_at > now()
    FOR UPDATE SKIP LOCKED)
RETURNING id, subscription_id, stream_id, {FRESH}
"""
"""The deliveries of subscriptions that just answered which wait for a retry: their receiver is
back, so they go now (a stale retry task finds them not due and does nothing)."""


ENQUEUE_FAILED = threading.Event()
"""Set when this process could not enqueue a task (Redis down): its dispatcher then re-drives
what is due as soon as Redis answers (``queue_watch.QueueWatch``)."""


@celery_app.task(name="webhooks.deliver")
def deliver(delivery_ids: list[int] | int, **_later: object) -> None:
    """The task message every release sends and reads: ``webhooks.deliver`` with the ids as its
    one argument. Releases before batches sent one id; keyword fields a later release may add
    are ignored, so a message of either is handled (and the task is never renamed: a worker
    drops a message of a task it does not know)."""
    ids = [delivery_ids] if isinstance(delivery_ids, int) else delivery_ids
    deliver_batch(shared_context(), ids)


def enqueue(
    delivery_ids: Iterable[int], countdown_s: float | None = None, backlog: bool = False
) -> None:
    """One task per ``DELIVERY_BATCH`` deliveries, kept in the order given, on the fresh queue
    (or one per ``BACKLOG_BATCH`` on the backlog's)."""
    ids = list(delivery_ids)
    queue, size = (backlog_queue(), BACKLOG_BATCH) if backlog else (None, DELIVERY_BATCH)
    try:
        for start in range(0, len(ids), size):
            batch = ids[start : start + size]
            deliver.apply_async(
                (batch,), countdown=countdown_s, queue=queue, headers={ENQUEUED_AT: time.time()}
            )
    except Exception:
        ENQUEUE_FAILED.set()
        raise


def hand_over(rows: Iterable[tuple[Any, ...]], to: Callable[..., None]) -> None:
    """Enqueue the ``(id, subscription, stream, fresh)`` rows through ``to`` (``enqueue``'s
    signature): the fresh ones on the fresh queue, the others on the backlog's, each side in
    stream order."""
    rows = list(rows)
    fresh = [row for row in rows if row[3]]
    if fresh:
        to(in_stream_order(fresh))
    if len(fresh) < len(rows):
        to(in_stream_order([row for row in rows if not row[3]]), backlog=True)


def in_stream_order(rows: list[tuple[Any, ...]]) -> list[int]:
    """The ids of ``(id, subscription, stream)`` rows with each stream's deliveries side by
    side and in order, so that a task sends them as one chain (rather than each waiting for
    the one before it in another task)."""
    return [row[0] for row in sorted(rows, key=lambda row: (row[1], row[2], row[0]))]


def deliver_batch(ctx: Context, delivery_ids: list[int]) -> None:
    """Send the batch's deliveries that may go now; once that is committed, tally their
    subscriptions' failures, wake the deliveries waiting on them and schedule the retries."""
    chains, missed = _attempt_batch(ctx, delivery_ids)
    attempts = [attempt for chain in chains for attempt in chain]
    _count(attempts, missed)
    ended = [chain[-1].delivery for chain in chains if chain[-1].status != "pending"] + missed
    for attempt in attempts:  # first: nothing that fails after the commit may lose them
        if attempt.status == "pending":
            enqueue([attempt.delivery.id], countdown_s=attempt.wait_s, backlog=True)
    woken: list[tuple[Any, ...]] = []
    with ctx.pool.connection() as conn:
        recovered = _tally(conn, ctx.settings, attempts) if attempts else []
        if ended:
            woken += conn.execute(
                _WAKE_NEXT,
                (
                    [d.subscription_id for d in ended],
                    [d.stream_id for d in ended],
                    [d.id for d in ended],
                ),
            ).fetchall()
        if recovered:
            woken += conn.execute(_WAKE_WAITING, (recovered,)).fetchall()
    hand_over(woken, enqueue)


def _count(attempts: list[Attempt], missed: list[Delivery]) -> None:
    """Count the committed attempts by outcome, and how long each delivered event took."""
    now_s = time.time()
    for attempt in attempts:
        WEBHOOK_DELIVERIES.labels(OUTCOMES[attempt.status]).inc()
        if attempt.status == "delivered":
            WEBHOOK_DELAY.observe(max(now_s - attempt.delivery.occurred_at_ms / 1000, 0.0))
    if missed:
        WEBHOOK_DELIVERIES.labels("missed").inc(len(missed))


def _opened(ctx: Context, delivery: Delivery) -> Delivery:
    """The delivery with its subscription's signing secrets opened (they are stored sealed)."""
    subscription, previous = delivery.subscription_id, delivery.previous_secret
    return delivery._replace(
        secret=opened(ctx.keyring, WEBHOOK_SECRET, subscription, delivery.secret),
        previous_secret=None
        if previous is None
        else opened(ctx.keyring, WEBHOOK_PREVIOUS_SECRET, subscription, previous),
    )


def _attempt_batch(
    ctx: Context, delivery_ids: list[int]
) -> tuple[list[list[Attempt]], list[Delivery]]:
    """The attempts made, chain by chain, and the deliveries of disabled subscriptions (missed,
    not sent), in one transaction holding their rows."""
    with ctx.pool.connection() as conn, conn.transaction():
        held = [
            row[0] for row in conn.execute(_LOCK, {"ids": delivery_ids, "slack": NOT_DUE_SLACK_S})
        ]
        loaded = [
            _opened(ctx, Delivery(*row[:2], bytes(row[2]), *row[3:])) for row in _look(conn, held)
        ]
        missed = [d for d in loaded if not d.enabled]
        if missed:
            conn.execute(_MISS, ([d.id for d in missed],))
        chains = _chains(d for d in loaded if d.enabled)
        targets = _targets(ctx, chains)
        attempted = ctx.sender.run(send_chains(ctx, chains, targets))
        if attempted:
            _record(conn, [attempt for chain in attempted for attempt in chain])
    return attempted, missed


def _look(conn: Connection[Any], held: list[int]) -> list[tuple[Any, ...]]:
    """The held deliveries as ``_LOAD`` reads them (a statement of its own: see there)."""
    return conn.execute(_LOAD, (held,)).fetchall() if held else []


def _chains(deliveries: Iterable[Delivery]) -> list[list[Delivery]]:
    """The deliveries that may go, as chains sent one after the other: each starts with one
    that is first in its stream and goes on with the one right behind it, if in the batch.
    The others wait for a delivery sent elsewhere (it wakes them when it ends)."""
    chains: list[list[Delivery]] = []
    by_last: dict[int, list[Delivery]] = {}
    for delivery in sorted(deliveries, key=lambda d: d.id):
        if delivery.pending_before is None:
            chain = [delivery]
            chains.append(chain)
        elif delivery.pending_before in by_last:
            chain = by_last.pop(delivery.pending_before)
            chain.append(delivery)
        else:
            continue
        by_last[delivery.id] = chain
    return chains


def _targets(ctx: Context, chains: list[list[Delivery]]) -> dict[str, Target | TargetRefused]:
    """Each URL of the batch resolved and checked once, here in the task's thread (resolving
    may block, which the event loop must not)."""
    targets: dict[str, Target | TargetRefused] = {}
    for delivery in (delivery for chain in chains for delivery in chain):
        if delivery.url not in targets:
            try:
                targets[delivery.url] = check_target(delivery.url, ctx.allowed)
            except TargetRefused as refused:
                targets[delivery.url] = refused
    return targets


def _record(conn: Connection[Any], attempts: list[Attempt]) -> None:
    conn.execute(
        _RECORD,
        {
            "ids": [a.delivery.id for a in attempts],
            "codes": [a.status_code for a in attempts],
            "durations": [a.duration_ms for a in attempts],
            "errors": [a.error for a in attempts],
            "statuses": [a.status for a in attempts],
            "waits": [a.wait_s for a in attempts],
        },
    )


def _tally(conn: Connection[Any], settings: Settings, attempts: list[Attempt]) -> list[str]:
    """Update the failure streaks (disabling the subscriptions whose streak is long, whose
    pending deliveries are then missed); answer the subscriptions that recovered."""
    succeeded: dict[str, bool] = {}
    failed: dict[str, int] = {}
    gone: dict[str, bool] = {}
    for a in attempts:
        subscription = a.delivery.subscription_id
        succeeded[subscription] = succeeded.get(subscription, False) or a.status == "delivered"
        failed[subscription] = failed.get(subscription, 0) + (a.status != "delivered")
        gone[subscription] = gone.get(subscription, False) or a.status_code == 410
    ids = sorted(succeeded)
    changed = conn.execute(
        _TALLY,
        {
            "ids": ids,
            "succeeded": [succeeded[i] for i in ids],
            "failed": [failed[i] for i in ids],
            "gone": [gone[i] for i in ids],
            "streak": settings.webhook_disable_after_failures,
            "s": settings.webhook_disable_after_s,
        },
    ).fetchall()
    disabled = [subscription for subscription, _, disable in changed if disable]
    if disabled:
        conn.execute(_MISS_PENDING, (disabled,))
    return [subscription for subscription, recovered, _ in changed if recovered]
