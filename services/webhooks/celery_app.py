"""The Celery app of webhook deliveries on this deployment's Redis, and what its tasks share in
a worker process: the Postgres pool, the keyring and the event loop that sends the POSTs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
from celery import Celery
from celery.app.amqp import AMQP
from kombu import Connection
from kombu.transport import redis as kombu_redis
from psycopg_pool import ConnectionPool

from services.webhooks.targets import Network, allowed_networks
from shared.infra.secretbox import Keyring
from shared.infra.settings import Settings
from shared.infra.streams import WEBHOOK_BACKLOG_QUEUE, WEBHOOK_DELIVERIES_QUEUE

RECONNECT_S = 0.5
"""How often a worker that lost Redis tries it again (kombu's default waits 2 s, then 4, 6 and
on up to 30: a worker reconnected 6 s after Redis was back, its deliveries waiting)."""


class BrokerConnection(Connection):
    """A broker connection that, lost, is tried again every ``RECONNECT_S``."""

    def ensure_connection(self, *args: Any, **kwargs: Any) -> Connection:
        kwargs.setdefault("interval_start", 0)
        kwargs.setdefault("interval_step", RECONNECT_S)
        kwargs.setdefault("interval_max", RECONNECT_S)
        return super().ensure_connection(*args, **kwargs)


class BrokerAMQP(AMQP):
    Connection = BrokerConnection
    BrokerConnection = BrokerConnection


celery_app = Celery("playtable.webhooks", amqp=f"{__name__}:{BrokerAMQP.__name__}")
celery_app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    task_ignore_result=True,
    worker_prefetch_multiplier=1,  # none reserved beyond those running: a fresh task waits for one
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    broker_connection_max_retries=None,  # Redis down for long: wait for it, never exit
)

BROKER_POLL_S = 5
"""How long the worker's wait for a task (BRPOP) lasts before it asks again: a task wakes it at
once, so this only sets what an idle worker costs."""


BUSY_POLL_S = 0.02
"""How often a worker that holds all the tasks it may looks whether it may take the next."""


class _BrokerPoller(kombu_redis.MultiChannelPoller):
    """Kombu's poller of the Redis transport, but a worker holding all the tasks it may looks
    again every ``BUSY_POLL_S`` whether it may take the next, not every second: the next task
    (a fresh delivery behind a busy worker) waited up to a second for nothing."""

    def get(self, callback: Any, timeout: float | None = None) -> Any:
        if self._paused_brpop:
            timeout = BUSY_POLL_S if timeout is None else min(timeout, BUSY_POLL_S)
        return super().get(callback, timeout)


class BrokerTransport(kombu_redis.Transport):
    """Kombu's Redis transport, each wait for a task (BRPOP) lasting ``BROKER_POLL_S``. Not
    through its ``polling_interval`` option, which also made the worker sleep that long (at
    most 2 s) each time it held all the tasks it may and looked for the next; and with
    ``_BrokerPoller``."""

    brpop_timeout = BROKER_POLL_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cycle = _BrokerPoller()


celery_app.conf.update(broker_transport=f"{__name__}:{BrokerTransport.__name__}")


def restore_interval_s(visibility_timeout_s: int) -> int:
    """How often the worker looks for tasks whose worker died (unacknowledged for the
    visibility timeout), in whole seconds: a few times per timeout, at most once a minute (the
    default an hour: once a second would cost an idle worker three round trips a second)."""
    return max(1, min(60, visibility_timeout_s // 4))


def queues(settings: Settings) -> tuple[str, str]:
    """The fresh deliveries' queue and the backlog's, which workers take from in turns (Celery
    on Redis asks for the queue it did not take from last time first)."""
    return settings.stream(WEBHOOK_DELIVERIES_QUEUE), settings.stream(WEBHOOK_BACKLOG_QUEUE)


def configure(settings: Settings) -> Celery:
    """Point the app at this deployment's Redis, under its key prefix, with its timeouts. The
    connections and producers of an earlier configuration are let go: Celery keeps its producer
    pool across ``close()``, so tasks sent after pointing it elsewhere still went to the first
    broker (a test's enqueue landed in another Redis database, without its prefix)."""
    global _settings
    _settings = settings
    celery_app.close()
    celery_app.amqp._producer_pool = None
    celery_app.conf.update(
        broker_url=settings.redis_url,
        task_default_queue=queues(settings)[0],
        broker_transport_options={
            "global_keyprefix": f"{settings.stream_prefix}:celery:",
            "visibility_timeout": settings.webhook_visibility_timeout_s,
            "unacked_restore_interval": restore_interval_s(settings.webhook_visibility_timeout_s),
            "unacked_restore_throttle": 1,
            # a BRPOP waits up to BROKER_POLL_S on purpose: the timeout counts from then
            **settings.redis_options(),
            "socket_timeout": BROKER_POLL_S + settings.redis_timeout_s,
        },
    )
    return celery_app


_settings: Settings | None = None


def backlog_queue() -> str:
    """The backlog's queue of this deployment (as configured)."""
    return queues(_settings or Settings.from_env())[1]


_lock = threading.Lock()
_T = TypeVar("_T")


class Sender:
    """The worker process's event loop, in a thread of its own, with one HTTP client session:
    the task threads hand it their batches, whose POSTs then go out concurrently over
    kept-alive connections instead of one synchronous POST per task thread."""

    def __init__(self, settings: Settings) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="webhook-sender", daemon=True
        )
        self._thread.start()
        self.http = self.run(self._session(settings))

    @staticmethod
    async def _session(settings: Settings) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=settings.webhook_max_connections),
            timeout=aiohttp.ClientTimeout(total=settings.webhook_timeout_s),
            cookie_jar=aiohttp.DummyCookieJar(),  # no receiver's cookie reaches another
            auto_decompress=False,
        )

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run on the loop and wait for the result (called from a task's thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        self.run(self.http.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


@dataclass
class Context:
    settings: Settings
    pool: ConnectionPool
    sender: Sender
    allowed: list[Network]
    keyring: Keyring

    @classmethod
    def open(cls, settings: Settings) -> Context:
        size = settings.webhook_worker_concurrency + 2
        keyring = settings.keyring()  # first: without one, nothing is opened
        return cls(
            settings=settings,
            pool=ConnectionPool(
                settings.database_url,
                min_size=1,
                max_size=size,
                kwargs={"autocommit": True},
                open=True,
            ),
            sender=Sender(settings),
            allowed=allowed_networks(settings.webhook_allowed_networks),
            keyring=keyring,
        )

    def close(self) -> None:
        self.sender.close()
        self.pool.close()


_context: Context | None = None


def shared_context() -> Context:
    """Opened on the first task of the worker process and kept for its life."""
    global _context
    with _lock:
        if _context is None:
            _context = Context.open(_settings or Settings.from_env())
        return _context
