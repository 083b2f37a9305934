"""App keys as a process last read them, forgotten the moment any key changes anywhere.

Asking Postgres who holds the ``X-API-Key`` of each request was a tenth of the match service's
CPU under load. A process that serves HTTP keeps what it read, by the key's hash: the keys it
found (their app, scopes and kind) and the ones it did not (each kind bounded, so a flood of
made-up keys never pushes out the real ones), and only while it listens to Postgres: every
change of ``api_keys`` (a key created, revoked; by a service, ``playtable apps`` or plain SQL)
notifies ``KEYS_CHANNEL`` when it commits (a trigger: migration 210), and on any notification
the process forgets every key. Its listening connection is read as soon as anything arrives
on it, before the requests that arrived with it; while that connection is down, and until it
listens again, nothing is kept, so every request asks Postgres as before. A read that was on
its way when the keys were forgotten is not kept either.

The process that revokes a key forgets at once and answers only once it heard the change
itself (``forget_changed``), which Postgres tells every listener at the same moment: the next
request, to whichever process, finds the key revoked. (Not strictly: each listener's backend
sends the notification when the scheduler runs it, mostly within microseconds, a few
milliseconds at worst under load, which the answer's way to the client and the next
request's way back usually outlast.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable

import psycopg
from psycopg_pool import AsyncConnectionPool

from shared.infra.bus import OutageLog
from shared.infra.db import listening_connection

log = logging.getLogger(__name__)

KEYS_CHANNEL = "api_keys_changed"
"""What the trigger on ``api_keys`` notifies (migration 210): the payload says nothing."""
KNOWN_KEYS_MAX = 10_000
"""Valid keys a process keeps (the oldest read is forgotten first)."""
UNKNOWN_KEYS_MAX = 10_000
"""Unknown or revoked keys a process keeps, apart from the valid ones."""
HEARD_WAIT_S = 1.0
"""How long a process that changed keys waits at most to hear its own notification."""
MAX_BACKOFF_S = 5.0
"""The longest wait between two attempts to listen again."""

KeyRow = tuple[str, str | None, tuple[str, ...], str]
"""A valid key's ``key_id``, ``app_id``, ``scopes`` and ``kind``."""
ReadKey = Callable[[str], Awaitable[KeyRow | None]]
"""Reads a key's row by its hash from Postgres (``None``: unknown or revoked)."""


class KeyCache:
    """The keys one process read, kept while it listens for their changes (``listen``)."""

    def __init__(self, database_url: str) -> None:
        self._database_url = database_url
        self._known: dict[str, KeyRow] = {}
        self._unknown: dict[str, None] = {}
        self._generation = 0
        """Moves on whenever the keys are forgotten: a read begun before is not kept."""
        self._conn: psycopg.AsyncConnection | None = None
        """The listening connection, while it listens: keys are kept only then."""
        self._socket = -1
        self._lost = asyncio.Event()
        self.heard = 0
        """Notifications heard so far (a mark for ``forget_changed``)."""
        self._news = asyncio.Event()

    @property
    def listening(self) -> bool:
        return self._conn is not None

    async def row(self, key_hash: str, read: ReadKey) -> KeyRow | None:
        """The key's row, from memory when known (``None``: unknown or revoked), else ``read``
        and kept if no change was heard meanwhile."""
        if (known := self._known.get(key_hash)) is not None:
            return known
        if key_hash in self._unknown:
            return None
        generation = self._generation if self._conn is not None else None
        found = await read(key_hash)
        if generation is not None and generation == self._generation:
            self._keep(key_hash, found)
        return found

    def _keep(self, key_hash: str, found: KeyRow | None) -> None:
        if found is None:
            if len(self._unknown) >= UNKNOWN_KEYS_MAX:
                del self._unknown[next(iter(self._unknown))]
            self._unknown[key_hash] = None
        else:
            if len(self._known) >= KNOWN_KEYS_MAX:
                del self._known[next(iter(self._known))]
            self._known[key_hash] = found

    def forget(self) -> None:
        """Forget every key, and any read on its way."""
        self._known.clear()
        self._unknown.clear()
        self._generation += 1

    async def forget_changed(self, mark: int) -> None:
        """After this process committed a change of keys (``mark``: ``heard`` before it):
        forget every key now, then wait to hear the change (``HEARD_WAIT_S`` at most), so the
        answer leaves once the other processes were told too."""
        self.forget()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HEARD_WAIT_S):
                while self._conn is not None and self.heard <= mark:
                    await self._news.wait()

    async def listen(self, stop: asyncio.Event) -> None:
        """Listen until ``stop``, listening again with backoff after a failure (logged once
        per outage); keys are kept only while listening."""
        outage = OutageLog(log, "api key cache", "postgres")
        backoff = 0.1
        while not stop.is_set():
            try:
                if await self._listen_once(stop, outage):
                    backoff = 0.1  # it listened until now: try again soon
            except (psycopg.Error, OSError) as error:
                outage.failed(error)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff):
                    await stop.wait()
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _listen_once(self, stop: asyncio.Event, outage: OutageLog) -> bool:
        """Listen until ``stop`` or the connection is lost; whether it listened at all."""
        conn = await listening_connection(self._database_url, KEYS_CHANNEL)
        async with conn:
            outage.succeeded()
            self._lost = asyncio.Event()
            self._conn, self._socket = conn, conn.pgconn.socket
            asyncio.get_running_loop().add_reader(self._socket, self._read)
            try:
                self._read()  # what the LISTEN's answer brought along
                await _first_of(stop.wait(), self._lost.wait())
            finally:
                self._stop_keeping()
        return True

    def _read(self) -> None:
        """What arrived on the listening connection, read as it arrives (the loop calls this
        before it runs the requests that came with it): any notification forgets every key,
        a connection lost stops keeping any."""
        conn = self._conn
        if conn is None:
            return
        pgconn = conn.pgconn
        try:
            pgconn.consume_input()
        except psycopg.Error:
            self._stop_keeping()
            return
        notified = False
        while pgconn.notifies() is not None:
            notified = True
        if notified:
            self.forget()
            self.heard += 1
            self._tell_waiters()

    def _stop_keeping(self) -> None:
        if self._conn is not None:
            asyncio.get_running_loop().remove_reader(self._socket)
        self._conn = None
        self.forget()
        self._lost.set()
        self._tell_waiters()  # a change waited for will not be heard on this connection

    def _tell_waiters(self) -> None:
        self._news.set()
        self._news = asyncio.Event()


async def _first_of(*waits: Awaitable[object]) -> None:
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


_BY_POOL: weakref.WeakKeyDictionary[AsyncConnectionPool, KeyCache] = weakref.WeakKeyDictionary()


def cache_keys(pool: AsyncConnectionPool) -> KeyCache:
    """A cache of the keys read through ``pool`` (on its database), which ``apps.authenticate``
    uses from now on; run its ``listen`` while the pool serves."""
    cache = _BY_POOL[pool] = KeyCache(pool.conninfo)
    return cache


def key_cache(pool: AsyncConnectionPool) -> KeyCache | None:
    return _BY_POOL.get(pool)
