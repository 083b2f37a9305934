"""Typed settings read from the environment in one place."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping

import msgspec

from shared.infra.secretbox import Keyring, KeyringError

REDIS_LONGEST_BLOCK_S = 2.0
"""The longest a blocking Redis read waits for an entry (a live feed's tail of the published
events): below ``redis_timeout_s``, which would otherwise fail it."""

CONVENTIONAL_NAMES = {
    "database_url": "DATABASE_URL",
    "redis_url": "REDIS_URL",
    "otlp_endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT",
}
"""Settings that also answer to the names every tool uses for them."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    database_url: str = "postgresql://postgres@127.0.0.1:5432/playtable"
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_timeout_s: float = 5.0
    """How long any Redis call waits for its answer before it fails (the caller then retries,
    or answers 503): a Redis that stops answering (paused, or a network gone without a word)
    never holds a process longer. More than the longest blocking read
    (``REDIS_LONGEST_BLOCK_S``), which waits that long on purpose."""
    redis_connect_timeout_s: float = 2.0
    """How long connecting to Redis may take (closing a connection too)."""
    redis_health_check_s: float = 15.0
    """A Redis connection idle this long is checked (PING) before it is used again; 0: never."""
    host: str = "127.0.0.1"
    lobby_port: int = 8001
    match_port: int = 8002
    gateway_port: int = 8080
    """The one public URL of ``playtable stack`` (nginx): lobby, match, docs and the contract."""
    http_workers: int = 1
    """Processes serving each HTTP service's port; more copies use more cores."""
    http_keep_alive_s: int = 75
    """How long a client's idle kept-alive connection stays open. Longer than the idle expiry
    of common HTTP clients (httpx 5 s, aiohttp 15 s, a load balancer's 60 s): a server that
    closed first would race a request sent on the closing connection, which the client sees
    as a disconnect without an answer (uvicorn's own 5 s met httpx's 5 s in CI)."""
    metrics_port: int = 0
    """Where a process without HTTP (a rules worker, ``playtable webhooks``) serves Prometheus'
    ``/metrics``; 0: nowhere. The HTTP services serve it on their own port."""
    otlp_endpoint: str = ""
    """Where every process exports its traces over OTLP/HTTP (``http://collector:4318``;
    ``/v1/traces`` is appended); empty: no tracing."""
    instance_id: str = ""
    """Names this process in consumer groups and reply streams; generated when empty."""
    rules_timeout_s: float = 5.0
    dead_consumer_after_s: float = 300.0
    """A consumer group member idle this long with nothing pending is deemed dead (its process
    killed without a clean stop) and removed from the group; a live one removed by mistake is
    only created again by its next read."""
    start_wait_s: float = 3.0
    """How long starting a table waits for its match to exist before answering 202 (creating)."""
    snapshot_every: int = 32
    """A match's folded state is stored each time a move crosses a multiple of this many
    events, so a replay folds fewer events than that onto the nearest snapshot."""
    replay_cache_mb: int = 64
    """Memory each match process may keep past versions in, already shown (they never change)."""
    db_pool_min: int = 2
    db_pool_max: int = 10
    log_level: str = "info"
    stream_prefix: str = "playtable"
    operator_key: str = ""
    """The operator's API key (``X-API-Key``): manages apps, their keys and quotas. Empty: only
    operator keys made with ``playtable apps operator-key`` (stored hashed) are accepted."""
    app_key: str = ""
    """The client app key the operator's client commands (``playtable import``, ``bench``)
    send; empty: they make a key of their own app in Postgres."""
    secret_keys: str = ""
    """The keyring that seals secrets at rest (``shared/infra/secretbox.py``): comma-separated
    ``id:base64key`` entries of 32-byte keys, the first sealing, every one opening. Webhook
    signing secrets, the bots' key and idempotency records are sealed under it, so every copy
    of the lobby, match, webhooks and bots services must have the same; they refuse to start
    without it."""
    max_open_tables_per_app: int = 1000
    """Tables an app may have waiting for players at once, unless its own quota says otherwise."""
    open_table_idle_s: float = 86_400.0
    """An open table that nobody joined, left or changed a seat of for this long closes by
    itself (``TableClosed``, reason ``idle``), freeing its app's quota; 0: never."""
    webhooks_port: int = 8004
    webhook_allowed_networks: str = ""
    """Comma-separated networks (``127.0.0.0/8,::1``) webhook targets may resolve to although
    private, loopback or link-local; such targets are refused otherwise."""
    webhook_timeout_s: float = 5.0
    webhook_max_attempts: int = 10
    """Attempts per delivery; retries wait ``webhook_retry_base_s * 2**n`` (or Retry-After)."""
    webhook_retry_base_s: float = 2.0
    webhook_retry_max_s: float = 600.0
    """Upper bound of any wait between attempts, Retry-After included."""
    webhook_secret_overlap_s: int = 86_400
    """How long a rotated-out secret keeps signing beside the new one."""
    webhook_worker_concurrency: int = 4
    """Delivery tasks per worker process at once (each sends a batch of up to 100 webhooks
    concurrently); more help against slow receivers, not the CPU."""
    webhook_max_connections: int = 200
    """Connections each worker process keeps to the receivers (kept alive and reused)."""
    webhook_probe_every_s: float = 60.0
    """A failing subscription whose retries all wait longer than this is tried again this
    often (without using up an attempt), so a receiver that is back gets its backlog soon."""
    webhook_disable_after_failures: int = 20
    webhook_disable_after_s: float = 259_200.0
    """A subscription is disabled once at least ``webhook_disable_after_failures`` attempts in a
    row have failed over at least this long (3 days); enabling it again redelivers what it
    missed."""
    webhook_visibility_timeout_s: int = 3600
    """A task a dead worker held is given to another worker after this long."""
    webhook_redrive_after_s: float = 5.0
    """A pending delivery first in its stream, held by no task and due this long, plus as long
    as the oldest task queued has waited, is enqueued again (its task was lost: a worker killed
    mid-task, an enqueue that failed, a crash between commit and enqueue); one whose task Redis
    lost, as soon as Redis answers. It was 300 s, a sweep's."""
    webhook_keep_delivered_s: float = 2_592_000.0
    """Delivered and failed deliveries, with their attempts, are deleted this long after they
    were created (30 days); 0: kept for ever."""
    webhook_keep_missed_s: float = 2_592_000.0
    """A disabled subscription's missed deliveries are deleted this long after they were
    created (30 days), so enabling it again redelivers only the newer ones; 0: kept for ever."""
    rate_limits: bool = True
    """Limit each client's requests and live feeds on the public HTTP services (per address,
    and per ``X-API-Key`` when sent); ``false`` turns both off."""
    rate_limit_read_per_s: float = 2000.0
    """GET, HEAD and OPTIONS requests a client may make per second, sustained (more than 0).
    The defaults stop floods only, so that tests and benchmarks, which all come from loopback,
    never meet them: a public deployment should lower them."""
    rate_limit_read_burst: int = 4000
    """Reads a client may make at once (its bucket's size); then only the rate is left."""
    rate_limit_write_per_s: float = 2000.0
    """POST, PUT, PATCH and DELETE requests a client may make per second, sustained."""
    rate_limit_write_burst: int = 4000
    """Writes a client may make at once (its bucket's size)."""
    rate_limit_feed_per_s: float = 200.0
    """Live feeds (GET of a path ending in ``/feed``) a client may open per second, sustained."""
    rate_limit_feed_burst: int = 1000
    """Live feeds a client may open at once (its bucket's size)."""
    max_feeds_per_client: int = 1000
    """Live feeds a client may have open at the same time."""
    trusted_proxies: str = ""
    """Comma-separated addresses, networks or host names (looked up every 10 s) of the proxies
    (the gateway) whose ``X-Forwarded-For`` names the client: a request from elsewhere is the
    client's own, whatever it says. Empty: none (the peer is the client). Name only the
    gateway: any other client in a trusted network could pick any address to be counted as."""

    match_url: str = ""
    """Where the bots service sends its moves (the match service, or the gateway in front of
    it); empty: ``http://<host>:<match_port>``."""
    bot_secret: str = ""
    """The key bot seats' tokens derive from (the match and bots services must share it);
    empty: the deployment's own, made once in Postgres."""
    bots_concurrency: int = 64
    """Turns each bots process plays at once (each waits on the match service, not the CPU)."""
    bots_sweep_s: float = 1.0
    """How often the bots service asks Postgres which bots are to move, besides being woken by
    the bots' turns the match service publishes (so a wiped Redis or a lost word delays a bot's
    turn, never skips it)."""
    clocks_poll_s: float = 1.0
    """How often the clocks service looks for clocks that ran out when nothing woke it: it
    sleeps until the next deadline it knows of, and a clock set meanwhile (``ClockSet``, on
    ``CLOCKS_STREAM``) wakes it if it runs out sooner; the look catches one whose word Redis
    lost."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read ``PLAYTABLE_<NAME>`` variables (and ``DATABASE_URL``/``REDIS_URL``)."""
        env = os.environ if environ is None else environ
        raw: dict[str, str] = {}
        for field in msgspec.structs.fields(cls):
            for key in (f"PLAYTABLE_{field.name.upper()}", CONVENTIONAL_NAMES.get(field.name)):
                if key is not None and key in env:
                    raw[field.name] = env[key]
                    break
        try:
            settings = msgspec.convert(raw, cls, strict=False)
        except msgspec.ValidationError as error:
            raise SystemExit(f"bad setting in the environment: {error}") from None
        if settings.redis_timeout_s <= REDIS_LONGEST_BLOCK_S:
            raise SystemExit(
                f"bad setting in the environment: PLAYTABLE_REDIS_TIMEOUT_S must be more than"
                f" {REDIS_LONGEST_BLOCK_S} s, the longest blocking read's wait"
            )
        if not settings.instance_id:
            instance = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
            settings = msgspec.structs.replace(settings, instance_id=instance)
        return settings

    def keyring(self) -> Keyring:
        """The keyring of ``secret_keys``; a process that needs it and has none stops here."""
        if not self.secret_keys:
            raise SystemExit(
                "PLAYTABLE_SECRET_KEYS is not set: it seals webhook secrets, the bots' key and"
                " idempotency records (comma-separated id:base64key entries of 32-byte keys, the"
                " same for every service; `playtable secrets new-key` prints one)"
            )
        try:
            return Keyring.parse(self.secret_keys)
        except KeyringError as error:
            raise SystemExit(f"bad PLAYTABLE_SECRET_KEYS: {error}") from None

    def redis_options(self) -> dict[str, float]:
        """The timeouts and health checks of every Redis client (``redis.Redis`` and
        ``redis.asyncio.Redis`` take them as keyword arguments, Celery's transport as options)."""
        return {
            "socket_timeout": self.redis_timeout_s,
            "socket_connect_timeout": self.redis_connect_timeout_s,
            "health_check_interval": self.redis_health_check_s,
        }

    @property
    def match_base_url(self) -> str:
        return self.match_url or f"http://{self.host}:{self.match_port}"

    @property
    def dead_consumer_after_ms(self) -> int:
        return int(self.dead_consumer_after_s * 1000)

    def stream(self, name: str) -> str:
        """The Redis key of a named stream, under this deployment's prefix (see
        ``stream_key``)."""
        return stream_key(self.stream_prefix, name)

    def slot_key(self, slot: str, name: str) -> str:
        """A Redis key that must share a Redis Cluster slot with the other keys of ``slot``:
        those one script or transaction touches together (a request's rate-limit buckets)."""
        return f"{self.stream_prefix}:{{{slot}}}:{name}"


def stream_key(prefix: str, name: str) -> str:
    """A stream's Redis key: its name is a hash tag, so the keys made from it (its
    dead-letter stream, ``<key>:dead``, written in one transaction with it) share its Redis
    Cluster slot, and the streams spread over the cluster."""
    return f"{prefix}:{{{name}}}"


def stream_name(prefix: str, key: str) -> str:
    """The name of the stream whose key is ``key`` (``stream_key`` undone)."""
    return key.removeprefix(f"{prefix}:").removeprefix("{").removesuffix("}")
