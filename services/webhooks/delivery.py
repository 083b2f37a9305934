"""The Celery app and its delivery task: POST one signed webhook, record the attempt, then
retry with exponential backoff, stop, or disable the subscription.

Tasks are acknowledged late and rejected when their worker dies, so a killed worker's task goes
to another worker once the broker's visibility timeout passes. The delivery row is locked while
its attempt runs and a task whose row is no longer pending (or gone with its deleted
subscription) does nothing, so a task that arrives twice sends at most once at a time and never
after success or deletion. Deliveries of one subscription and one stream go out in order: a
delivery that finds an earlier one still pending is parked (no task, nothing polled) until the
earlier one ends and wakes the next; a receiver that is down costs one attempt at a time.
"""

from __future__ import annotations

import email.utils
import logging
import ssl
import threading
import time
from dataclasses import dataclass

import httpx
from celery import Celery
from psycopg_pool import ConnectionPool

from services.webhooks.signing import signed_headers
from services.webhooks.targets import (
    Network,
    Target,
    TargetRefused,
    allowed_networks,
    check_target,
)
from shared.settings import Settings

log = logging.getLogger(__name__)

celery_app = Celery("playtable.webhooks")
celery_app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    task_ignore_result=True,
    # Acknowledgements from the pool threads reach the broker on the event loop's next turn, so
    # a deep prefetch keeps the threads busy meanwhile.
    worker_prefetch_multiplier=32,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)

RETRYABLE_STATUSES = frozenset({408, 425, 429})

_LOAD = """
SELECT d.status, d.event_key, d.body, d.attempts, d.subscription_id, d.stream_id, s.url,
       s.enabled, s.secret, s.previous_secret, coalesce(s.previous_secret_until > now(), false),
       EXISTS (SELECT FROM webhook_deliveries e
               WHERE e.subscription_id = d.subscription_id AND e.stream_id = d.stream_id
                 AND e.status = 'pending' AND e.id < d.id)
FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE d.id = %s
FOR UPDATE OF d SKIP LOCKED FOR KEY SHARE OF s SKIP LOCKED
"""
"""The delivery, its subscription, and whether an earlier one of its stream is pending.

Both rows are held for the attempt: a subscription being deleted is skipped, and its deletion
waits for an attempt under way (which may disable the subscription: holding it from the start
keeps the two from deadlocking)."""

_WAKE_NEXT = """
UPDATE webhook_deliveries SET due_at = now()
WHERE status = 'pending' AND id = (
    SELECT min(id) FROM webhook_deliveries
    WHERE subscription_id = %s AND stream_id = %s AND status = 'pending' AND id > %s)
RETURNING id
"""
"""The next pending delivery of a stream, once the one before it has ended.

Run after that one's end is committed: a next delivery that parked in a transaction overlapping
that commit still holds its row, so this waits for it and then wakes it; one that looks later
sees the end and goes without waiting (and this wakes it once more, which does nothing). It
is due from now on: if its task is lost, the redrive sweep sends it again."""

_RECORD = """
WITH attempt AS (
    INSERT INTO webhook_attempts (delivery_id, status_code, duration_ms, error)
    VALUES (%(id)s, %(status_code)s, %(duration_ms)s, %(error)s)
)
UPDATE webhook_deliveries
SET status = %(status)s, attempts = attempts + 1,
    due_at = now() + make_interval(secs => %(wait_s)s)
WHERE id = %(id)s
"""
"""Log the attempt and set the outcome (pending: when the next attempt is due)."""


def configure(settings: Settings) -> Celery:
    """Point the app at this deployment's Redis, under its key prefix, with its timeouts."""
    global _settings
    _settings = settings
    # httpx logs every request's URL at INFO, credentials and query string included
    logging.getLogger("httpx").setLevel(logging.WARNING)
    celery_app.conf.update(
        broker_url=settings.redis_url,
        task_default_queue=settings.stream("webhooks"),
        broker_transport_options={
            "global_keyprefix": f"{settings.stream_prefix}:celery:",
            "visibility_timeout": settings.webhook_visibility_timeout_s,
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
        },
    )
    return celery_app


_settings: Settings | None = None
_lock = threading.Lock()


@dataclass
class _Context:
    settings: Settings
    pool: ConnectionPool
    http: httpx.Client
    allowed: list[Network]


_context: _Context | None = None


def _shared_context() -> _Context:
    """Opened on the first task of the worker process and kept for its life."""
    global _context
    with _lock:
        if _context is None:
            settings = _settings or Settings.from_env()
            size = settings.webhook_worker_concurrency + 2
            _context = _Context(
                settings=settings,
                pool=ConnectionPool(
                    settings.database_url, min_size=1, max_size=size, kwargs={"autocommit": True}
                ),
                http=httpx.Client(
                    timeout=settings.webhook_timeout_s,
                    follow_redirects=False,
                    limits=httpx.Limits(max_connections=size),
                ),
                allowed=allowed_networks(settings.webhook_allowed_networks),
            )
        return _context


@celery_app.task(bind=True, name="webhooks.deliver", max_retries=None)
def deliver(self, delivery_id: int) -> None:  # type: ignore[no-untyped-def]
    wait_s = attempt_delivery(_shared_context(), delivery_id)
    if wait_s is not None:
        raise self.retry(countdown=wait_s, max_retries=None)


def enqueue(delivery_ids: list[int]) -> None:
    for delivery_id in delivery_ids:
        deliver.apply_async((delivery_id,))


def retry_after_s(header: str | None) -> float | None:
    """Seconds asked for by a Retry-After header (delta-seconds or an HTTP date)."""
    if not header:
        return None
    if header.strip().isdigit():
        return float(header.strip())
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_s(settings: Settings, attempts: int, asked_s: float | None) -> float:
    """Exponential wait before attempt ``attempts + 1``, or longer if the target asked so."""
    wait = settings.webhook_retry_base_s * 2 ** (attempts - 1)
    return min(max(wait, asked_s or 0.0), settings.webhook_retry_max_s)


def attempt_delivery(ctx: _Context, delivery_id: int) -> float | None:
    """Try the delivery once; return how long to wait before trying again, or None if it is
    done, or parked behind an earlier one (which wakes it when it ends)."""
    wait_s, ended_stream = _attempt(ctx, delivery_id)
    if ended_stream is not None:
        with ctx.pool.connection() as conn:
            woken = conn.execute(_WAKE_NEXT, (*ended_stream, delivery_id)).fetchone()
        if woken is not None:
            enqueue([woken[0]])
    return wait_s


def _attempt(ctx: _Context, delivery_id: int) -> tuple[float | None, tuple[str, str] | None]:
    """The wait before the next attempt (None: none), and the delivery's subscription and
    stream if it has ended (delivered, or failed for good)."""
    settings = ctx.settings
    with ctx.pool.connection() as conn, conn.transaction():
        row = conn.execute(_LOAD, (delivery_id,)).fetchone()
        if row is None:  # gone, or another task holds it right now
            return None, None
        status, key, body, attempts, subscription_id, stream_id, url, enabled, *rest = row
        secret, previous, previous_valid, earlier_pending = rest
        if status != "pending":
            return None, None
        if earlier_pending:  # keep the order: the earlier one wakes this one when it ends
            return None, None
        if not enabled:
            conn.execute(
                "UPDATE webhook_deliveries SET status = 'failed' WHERE id = %s", (delivery_id,)
            )
            return None, (subscription_id, stream_id)
        signing = [secret, previous] if previous_valid else [secret]
        status_code, duration_ms, error, asked_s = _post(ctx, url, key, bytes(body), signing)
        attempts += 1
        outcome, wait_s = _outcome(settings, status_code, error, attempts, asked_s)
        conn.execute(
            _RECORD,
            {
                "id": delivery_id,
                "status_code": status_code,
                "duration_ms": duration_ms,
                "error": error,
                "status": outcome,
                "wait_s": wait_s,
            },
        )
        if status_code == 410:
            conn.execute(
                "UPDATE webhook_subscriptions SET enabled = false, disabled_reason = %s"
                " WHERE id = %s",
                ("the target answered 410 Gone", subscription_id),
            )
        if outcome == "pending":
            return wait_s, None
        return None, (subscription_id, stream_id)


def _outcome(
    settings: Settings,
    status_code: int | None,
    error: str | None,
    attempts: int,
    asked_s: float | None,
) -> tuple[str, float]:
    """The delivery's status after this attempt, and the wait before the next one."""
    if status_code is not None and 200 <= status_code < 300:
        return "delivered", 0.0
    retryable = status_code is None or status_code >= 500 or status_code in RETRYABLE_STATUSES
    refused = error == TARGET_REFUSED
    if not retryable or refused or attempts >= settings.webhook_max_attempts:
        return "failed", 0.0  # 410 among them: the caller disables the subscription
    return "pending", backoff_s(settings, attempts, asked_s)


def _post(
    ctx: _Context, url: str, message_id: str, body: bytes, signing: list[str]
) -> tuple[int | None, float | None, str | None, float | None]:
    """POST once: status code (None without an answer), duration (None without an answer:
    timings of failures would measure the network for whoever reads the log), a coarse
    error, Retry-After."""
    started = time.perf_counter()
    try:
        target = check_target(url, ctx.allowed)
        headers = signed_headers(signing, message_id, int(time.time()), body)
        response = ctx.http.send(pinned_request(ctx.http, target, headers, body))
    except TargetRefused:
        return None, None, TARGET_REFUSED, None
    except httpx.HTTPError as error:
        return None, None, coarse_error(error), None
    elapsed = (time.perf_counter() - started) * 1000
    error = None if response.is_success else f"HTTP {response.status_code}"
    return response.status_code, elapsed, error, retry_after_s(response.headers.get("retry-after"))


TARGET_REFUSED = "refused: the target's address is not one webhooks may reach"


def pinned_request(
    http: httpx.Client, target: Target, headers: dict[str, str], body: bytes
) -> httpx.Request:
    """The POST to the address that was checked, naming the host as the URL does (``Host``,
    and TLS's SNI and certificate check), so no second DNS answer can redirect it."""
    url = httpx.URL(target.url)
    return http.build_request(
        "POST",
        url.copy_with(host=str(target.address)),
        content=body,
        headers={**headers, "Host": url.netloc.decode("ascii")},
        extensions={"sni_hostname": target.host},
    )


def coarse_error(error: httpx.HTTPError) -> str:
    """What went wrong, in a word: raw error text (addresses, resolver and TLS messages)
    would make the delivery log an oracle for probing networks."""
    if isinstance(error, httpx.TimeoutException):
        return "timeout"
    if isinstance(error, httpx.ConnectError):
        causes = [error.__cause__, error.__context__]
        if any(isinstance(cause, ssl.SSLError) for cause in causes) or "SSL" in str(error):
            return "TLS error"
        return "could not connect"
    if isinstance(error, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return "connection dropped"
    return "network error"
