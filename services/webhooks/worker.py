"""``playtable webhooks``: the dispatcher and a Celery worker in one process.

The dispatcher runs its asyncio loop in a background thread; the Celery worker (thread pool,
``webhook_worker_concurrency`` threads) owns the main thread and its signals. When the worker
shuts down the dispatcher stops too. Run more of these processes to scale out: dispatchers share
the consumer group, workers share the Celery queue.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from services.webhooks.celery_app import configure, queues
from services.webhooks.delivery import enqueue
from services.webhooks.dispatch_loop import dispatch
from shared.infra import tracing
from shared.infra.db import new_pool, open_when_reachable
from shared.infra.sealed import WEBHOOK_COLUMNS, seal_rows
from shared.infra.settings import Settings

log = logging.getLogger(__name__)


class DispatcherThread(threading.Thread):
    def __init__(self, settings: Settings) -> None:
        super().__init__(name="webhook-dispatcher", daemon=True)
        self.settings = settings
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:
            self.error = error
            log.exception("webhook dispatcher died")
        finally:
            self.ready.set()

    async def _main(self) -> None:
        settings = self.settings
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        # the migrations are applied before the worker's first task; it waits for Postgres
        pool = new_pool(settings.database_url, min_size=1, max_size=settings.db_pool_max)
        try:
            if not await open_when_reachable(
                pool, settings.database_url, self._stopping, "starting"
            ):
                return
            async with pool.connection() as conn:  # rows from before secrets were sealed
                await seal_rows(conn, self.settings.keyring(), WEBHOOK_COLUMNS, rotate=False)
            self.ready.set()
            await dispatch(settings, pool, enqueue, self._stopping)
        finally:
            await pool.close()

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self.join(timeout=10)


def run_webhooks(settings: Settings) -> int:
    tracing.configure(settings, "webhooks")
    settings.keyring()  # its deliveries open sealed secrets: no keyring, no start
    app = configure(settings)
    dispatcher = DispatcherThread(settings)
    dispatcher.start()
    dispatcher.ready.wait()
    if dispatcher.error is not None:
        return 1
    try:
        app.worker_main(
            [
                "worker",
                "--pool=threads",
                f"--concurrency={settings.webhook_worker_concurrency}",
                f"--queues={','.join(queues(settings))}",
                f"--loglevel={settings.log_level.upper()}",
                f"--hostname=webhooks-{settings.instance_id}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ]
        )
    finally:
        dispatcher.stop()
    return 0
