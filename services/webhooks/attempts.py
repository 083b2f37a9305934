"""One attempt at a delivery: the signed POST to the address that was checked, and what its
answer makes of the delivery (delivered, retried after a backoff, or failed for good)."""

from __future__ import annotations

import asyncio
import email.utils
import ssl
import time
from typing import NamedTuple

import aiohttp
import yarl

from services.webhooks.celery_app import Context
from services.webhooks.signing import signed_headers
from services.webhooks.targets import Target, TargetRefused
from shared.infra import tracing
from shared.infra.settings import Settings

RETRYABLE_STATUSES = frozenset({408, 425, 429})


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


class Delivery(NamedTuple):
    id: int
    key: str
    body: bytes
    attempts: int
    subscription_id: str
    stream_id: str
    url: str
    enabled: bool
    secret: str
    previous_secret: str | None
    previous_valid: bool
    pending_before: int | None
    """The pending delivery before this one in its stream (None: this one is first)."""
    occurred_at_ms: int
    traceparent: str | None
    """The trace of the move that recorded the event, which each attempt's span continues."""

    @property
    def signing(self) -> list[str]:
        if self.previous_valid and self.previous_secret:
            return [self.secret, self.previous_secret]
        return [self.secret]


class Attempt(NamedTuple):
    delivery: Delivery
    status_code: int | None
    duration_ms: float | None
    error: str | None
    status: str
    """The delivery's status after it: delivered, failed (for good) or pending."""
    wait_s: float


OUTCOMES = {"delivered": "delivered", "pending": "retry", "failed": "failed"}
"""A delivery's status after an attempt, as the metrics name the attempt's outcome."""


async def send_chains(
    ctx: Context, chains: list[list[Delivery]], targets: dict[str, Target | TargetRefused]
) -> list[list[Attempt]]:
    """Every chain at once; within a chain, the next only once the one before has ended."""

    async def send(chain: list[Delivery]) -> list[Attempt]:
        attempts = []
        for delivery in chain:
            attempt = await _attempt(ctx, delivery, targets[delivery.url])
            attempts.append(attempt)
            if attempt.status == "pending":
                break
        return attempts

    return list(await asyncio.gather(*(send(chain) for chain in chains)))


async def _attempt(ctx: Context, delivery: Delivery, target: Target | TargetRefused) -> Attempt:
    """POST the delivery once, in a span of the event's trace (the target's URL is left out
    of it: a receiver may keep a secret in its path)."""
    traced = {
        "playtable.delivery_id": delivery.id,
        "playtable.subscription_id": delivery.subscription_id,
        "playtable.webhook_id": delivery.key,
        "playtable.webhook.attempt": delivery.attempts + 1,
    }
    with tracing.span(
        "webhook POST", tracing.CLIENT, parent=delivery.traceparent, attributes=traced
    ) as span:
        status_code, duration_ms, error, asked_s = await _post(ctx, delivery, target)
        status, wait_s = _outcome(ctx.settings, status_code, error, delivery.attempts + 1, asked_s)
        span.set_attribute("playtable.webhook.outcome", OUTCOMES[status])
        if status_code is not None:
            span.set_attribute("http.response.status_code", status_code)
        if error is not None:
            tracing.failed(span, error)
    return Attempt(delivery, status_code, duration_ms, error, status, wait_s)


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
        return "failed", 0.0  # 410 among them: the subscription is disabled as well
    return "pending", backoff_s(settings, attempts, asked_s)


async def _post(
    ctx: Context, delivery: Delivery, target: Target | TargetRefused
) -> tuple[int | None, float | None, str | None, float | None]:
    """POST once: status code (None without an answer), duration (None without an answer:
    timings of failures would measure the network for whoever reads the log), a coarse
    error, Retry-After."""
    if isinstance(target, TargetRefused):
        return None, None, TARGET_REFUSED, None
    started = time.perf_counter()
    headers = signed_headers(delivery.signing, delivery.key, int(time.time()), delivery.body)
    post = pinned_post(target, headers)
    try:
        async with ctx.sender.http.post(
            post.url,
            data=delivery.body,
            headers=post.headers,
            server_hostname=post.server_hostname,
            allow_redirects=False,
        ) as response:
            # what the receiver says is not kept; a short answer read to its end leaves the
            # connection to be reused, a long one closes it
            await response.content.read(ANSWER_READ_BYTES)
    except (aiohttp.ClientError, TimeoutError) as error:
        return None, None, coarse_error(error), None
    elapsed = (time.perf_counter() - started) * 1000
    error = None if 200 <= response.status < 300 else f"HTTP {response.status}"
    return response.status, elapsed, error, retry_after_s(response.headers.get("retry-after"))


TARGET_REFUSED = "refused: the target's address is not one webhooks may reach"
ANSWER_READ_BYTES = 65_536


class PinnedPost(NamedTuple):
    url: yarl.URL
    headers: dict[str, str]
    server_hostname: str | None


def pinned_post(target: Target, headers: dict[str, str]) -> PinnedPost:
    """The POST to the address that was checked, naming the host as the URL does (``Host``,
    and TLS's SNI and certificate check), so no second DNS answer can redirect it."""
    url = yarl.URL(target.url)
    return PinnedPost(
        url=url.with_host(str(target.address)),
        headers={**headers, "Host": url.host_port_subcomponent or target.host},
        server_hostname=target.host if url.scheme == "https" else None,
    )


def coarse_error(error: BaseException) -> str:
    """What went wrong, in a word: raw error text (addresses, resolver and TLS messages)
    would make the delivery log an oracle for probing networks."""
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, aiohttp.ClientSSLError | ssl.SSLError):
        return "TLS error"
    if isinstance(error, aiohttp.ClientConnectorError):
        return "could not connect"
    if isinstance(error, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
        return "connection dropped"
    return "network error"
