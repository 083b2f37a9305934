"""Prometheus metrics of every process.

What happens (requests, moves, rules calls, webhook attempts) is counted where it happens, in
memory, for the price of a dictionary look-up and an addition. What *is* (outbox depth, stream
lag, live matches, pool use) needs a query: probes compute it when Prometheus scrapes, each
within ``PROBE_TIMEOUT_S``, so no request ever pays for it. Labels are bounded: route templates,
game and request names, never ids.

A port served by several worker processes (``PLAYTABLE_HTTP_WORKERS``) runs in the client's
multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR`` must be set before this module is imported
(``playtable`` sets it), counters and histograms are then summed over the workers, and the
probes answer for the worker that took the scrape (outbox, streams and matches are the same
from any; the pool's is that worker's).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import redis.asyncio as redis_async
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from psycopg_pool import AsyncConnectionPool

from shared.infra.bus import redis_text
from shared.infra.settings import stream_key

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 1.0
"""A probe that has no answer by then is left out of the scrape (and counted as failed)."""
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
DELAY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 7200.0)

HTTP_REQUESTS = Counter(
    "playtable_http_requests",
    "HTTP requests answered, by route template, method and status",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "playtable_http_request_duration_seconds",
    "Time from a request's arrival to its answer's status line (a live feed: its opening)",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
MOVES = Counter("playtable_moves", "Moves committed, by game", ["game"])
BOT_MOVES = Counter(
    "playtable_bot_moves",
    "Bot turns played, by game and outcome: moved; stale (the match had moved on: another copy"
    " or a player came first, or the move's answer repeated another copy's); refused (the rules"
    " refused the bot's choice, or the bot failed to choose: a bug); denied (the match service"
    " refused the bot's token); failed (the match service did not answer: played again later);"
    " waited (the seat might move, but its bot lets the turn pass: another's story it may only"
    " interrupt)",
    ["game", "outcome"],
)
TIMEOUTS_SENT = Counter(
    "playtable_timeouts_sent", "TimeOut commands the clocks service recorded for clocks run out"
)
RULES_DURATION = Histogram(
    "playtable_rules_request_duration_seconds",
    "Time a rules request took to be answered, by request type",
    ["request"],
    buckets=LATENCY_BUCKETS,
)
RULES_TIMEOUTS = Counter(
    "playtable_rules_timeouts",
    "Rules requests no rules worker answered in time, by request type",
    ["request"],
)
WEBHOOK_DELIVERIES = Counter(
    "playtable_webhook_deliveries",
    "Webhook attempts by outcome: delivered, retry (will be tried again), failed (for good),"
    " missed (the subscription is disabled)",
    ["outcome"],
)
WEBHOOK_DELAY = Histogram(
    "playtable_webhook_delivery_delay_seconds",
    "Time from an event's occurrence to its webhook's successful delivery",
    buckets=DELAY_BUCKETS,
)
OPEN_FEEDS = Gauge(
    "playtable_open_feeds",
    "Live feeds (Server-Sent Events) open in this process",
    multiprocess_mode="livesum",
)
PROBE_FAILURES = Counter(
    "playtable_probe_failures",
    "Scrape-time probes that failed or had no answer in time (their gauges are left out)",
    ["probe"],
)

HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNROUTED = "unrouted"
"""The route of a request answered before routing (no such path, a rate-limit refusal)."""

Probe = Callable[[], Awaitable[Iterable[Metric]]]
"""Computes gauges when scraped: cheap queries, answered within ``PROBE_TIMEOUT_S``."""


class HttpMetrics:
    """Counts each answer by route template and status: the labelled series are kept at hand,
    so a request costs a dictionary look-up, an increment and an observation."""

    def __init__(self) -> None:
        self._series: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method if method in HTTP_METHODS else "other", str(status))
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = (HTTP_REQUESTS.labels(*key), HTTP_DURATION.labels(*key))
        series[0].inc()
        series[1].observe(seconds)

    def wrap(
        self,
        scope: Any,
        send: Any,
        started: float,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> Any:
        """``send``, recording the request (arrived at ``started``, ``time.perf_counter``) when
        its status line goes out, with ``headers`` added to it (the rate limiter's): one
        wrapper for both, as each wrapper costs every request a call. The route template is
        in ``scope`` once Litestar has routed it."""

        async def send_observed(message: Any) -> None:
            if message["type"] == "http.response.start":
                if headers:
                    message = {**message, "headers": [*message.get("headers", ()), *headers]}
                route = scope.get("path_template") or UNROUTED
                self.observe(
                    route, scope["method"], message["status"], time.perf_counter() - started
                )
            await send(message)

        return send_observed


class Metrics:
    """What one process serves on ``/metrics``: its counters (every worker's, in multiprocess
    mode) and the gauges of its probes, computed at the scrape."""

    def __init__(self, probes: dict[str, Probe] | None = None) -> None:
        self.probes: dict[str, Probe] = dict(probes or {})

    def add(self, name: str, probe: Probe) -> None:
        self.probes[name] = probe

    async def exposition(self) -> bytes:
        sampled = await asyncio.gather(*(self._sample(n, p) for n, p in self.probes.items()))
        probed = CollectorRegistry(auto_describe=False)
        probed.register(_Sampled([family for families in sampled for family in families]))
        return generate_latest(_counted()) + generate_latest(probed)

    @staticmethod
    async def _sample(name: str, probe: Probe) -> list[Metric]:
        try:
            return list(await asyncio.wait_for(probe(), PROBE_TIMEOUT_S))
        except Exception as error:  # any: a scrape must not fail for one probe
            PROBE_FAILURES.labels(name).inc()
            log.debug("metrics probe %s failed: %r", name, error)
            return []


CONTENT_TYPE = CONTENT_TYPE_LATEST


class _Sampled:
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def _counted() -> CollectorRegistry:
    """This process's counters, or those of all the workers of its port."""
    if not os.environ.get(MULTIPROCESS_DIR):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def process_ended() -> None:
    """Forget this worker's live gauges (its open feeds) in multiprocess mode."""
    if os.environ.get(MULTIPROCESS_DIR):
        multiprocess.mark_process_dead(os.getpid())


# --- probes ----------------------------------------------------------------------------------


def gauge(
    name: str, help_text: str, samples: Iterable[tuple[list[str], float]], labels: list[str]
) -> Metric:
    family = GaugeMetricFamily(name, help_text, labels=labels)
    for values, value in samples:
        family.add_metric(values, value)
    return family


def pool_probe(pool: Callable[[], AsyncConnectionPool]) -> Probe:
    """The Postgres pool's connections (open, idle) and the requests waiting for one."""

    async def probe() -> list[Metric]:
        stats = pool().get_stats()
        return [
            gauge(
                "playtable_db_pool_connections",
                "Connections of this process's Postgres pool: open, idle (the rest are in use)"
                " and max",
                [
                    (["open"], stats.get("pool_size", 0)),
                    (["idle"], stats.get("pool_available", 0)),
                    (["max"], stats.get("pool_max", 0)),
                ],
                ["state"],
            ),
            gauge(
                "playtable_db_pool_waiting",
                "Requests waiting for a connection of this process's Postgres pool",
                [([], stats.get("requests_waiting", 0))],
                [],
            ),
        ]

    return probe


_OUTBOX = "SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM outbox"


def outbox_probe(pool: Callable[[], AsyncConnectionPool]) -> Probe:
    """Rows committed but not yet published, and how long the oldest has waited: a relay that
    cannot reach Redis shows as a growing age."""

    async def probe() -> list[Metric]:
        async with pool().connection(timeout=PROBE_TIMEOUT_S) as conn:
            cursor = await conn.execute(_OUTBOX)
            depth, age = await cursor.fetchone() or (0, 0)
        return [
            gauge("playtable_outbox_depth", "Outbox rows not yet published", [([], depth)], []),
            gauge(
                "playtable_outbox_oldest_age_seconds",
                "Age of the oldest outbox row not yet published (0: none)",
                [([], float(age))],
                [],
            ),
        ]

    return probe


def streams_probe(
    redis: Callable[[], redis_async.Redis], prefix: str, groups: list[tuple[str, str]]
) -> Probe:
    """Per consumer group this process belongs to (``(stream, group)``, the stream's name
    without the deployment's prefix): entries not yet delivered (lag) and delivered but not
    acknowledged (pending), from one ``XINFO GROUPS`` per stream."""

    async def probe() -> list[Metric]:
        client = redis()
        streams = sorted({stream for stream, _ in groups})
        pipe = client.pipeline(transaction=False)
        for stream in streams:
            pipe.xinfo_groups(stream_key(prefix, stream))
        answers = await pipe.execute(raise_on_error=False)
        lag, pending = [], []
        for stream, answer in zip(streams, answers, strict=True):
            if isinstance(answer, Exception):  # no such stream yet: nothing to report
                continue
            for info in answer:
                group = redis_text(info["name"])
                if (stream, group) in groups:
                    pending.append(([stream, group], info["pending"]))
                    if info.get("lag") is not None:
                        lag.append(([stream, group], info["lag"]))
        return [
            gauge(
                "playtable_stream_lag",
                "Entries of a stream not yet delivered to its consumer group",
                lag,
                ["stream", "group"],
            ),
            gauge(
                "playtable_stream_pending",
                "Entries delivered to a consumer group but not yet acknowledged",
                pending,
                ["stream", "group"],
            ),
        ]

    return probe


SCRAPE_READ_S = 10.0
"""How long a connection to the metrics port may take to send its request."""


# --- a port of its own -----------------------------------------------------------------------


class MetricsPort:
    """The ``/metrics`` port ``serve_metrics`` opened; ``cleanup`` closes it."""

    def __init__(self, server: asyncio.Server) -> None:
        self._server = server

    async def cleanup(self) -> None:
        self._server.close()
        await self._server.wait_closed()


async def serve_metrics(
    metrics: Metrics,
    host: str,
    port: int,
    ready: Callable[[], Awaitable[list[str]]] | None = None,
) -> MetricsPort:
    """``/metrics`` on a port of its own, on the running loop: for the processes that serve no
    HTTP (rules worker, clocks, bots, webhook dispatcher). A scrape is one GET per connection,
    so a few lines of asyncio answer it: a web framework cost every such process a third of its
    start (aiohttp's import, 0.4-0.8 s of CPU). With ``ready`` (what does not answer), also
    ``/ready``: 200, or 503 saying what does not answer, as the HTTP services' ``/ready``."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), SCRAPE_READ_S)
            method, target = head.split(b" ", 2)[:2]
            path = target.split(b"?", 1)[0]
            if method == b"GET" and path == b"/metrics":
                status, kind, body = "200 OK", CONTENT_TYPE, await metrics.exposition()
            elif method == b"GET" and path == b"/ready" and ready is not None:
                failed = await ready()
                status = "503 Service Unavailable" if failed else "200 OK"
                kind, body = "text/plain", ("; ".join(failed) or "ready").encode() + b"\n"
            else:
                status, kind, body = "404 Not Found", "text/plain", b"only GET /metrics here\n"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (
            TimeoutError,
            ValueError,
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass  # a client that sent no request, or a malformed one, or left: nothing to answer
        finally:
            writer.close()

    server = await asyncio.start_server(answer, host, port)
    log.info("metrics on http://%s:%s/metrics", host, port)
    return MetricsPort(server)
