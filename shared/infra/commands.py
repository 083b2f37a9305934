"""Durable commands: Postgres holds each command until it has taken effect; Redis carries it.

The sender writes the command in the transaction that decides it (``send``), and a
``CommandRedriver`` publishes every pending command on its Redis stream, at once and then
again with backoff until the receiver marks it done (``complete``, in the transaction of its
effect). So a wiped Redis, a consumer that crashed, or a receiver that could not act yet (its
rules worker down) only delays a command: none is dead-lettered or lost, and receivers must
treat a repeat as a no-op.

A sender that waits for its command to take effect (the lobby starting a table) is woken by a
``CommandWatch``: ``complete`` notifies on commit, so nobody polls the commands table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import NamedTuple

import msgspec
import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from shared.infra.bus import Bus, OutageLog
from shared.infra.db import listening_connection
from shared.infra.outbox import Pump

log = logging.getLogger(__name__)

REFUSED = "refused"
"""Outcome of a command its receiver will never carry out (not retried)."""


class CommandState(NamedTuple):
    payload: bytes
    done: bool
    outcome: str | None


async def send(
    conn: AsyncConnection, command_id: str, topic: str, subject: str, payload: bytes
) -> None:
    """Record a command to deliver on ``topic``, in the caller's transaction."""
    await conn.execute(
        "insert into commands (command_id, topic, subject, payload) values (%s, %s, %s, %s)",
        (command_id, topic, subject, payload),
    )


async def complete(conn: AsyncConnection, command_id: str, outcome: str = "done") -> None:
    """Mark a command as taken effect (in the transaction of its effect): no more re-drives.
    Its waiters (``CommandWatch``) are told on commit, in the same statement."""
    await conn.execute(_COMPLETE, {"outcome": outcome, "command_id": command_id})


async def latest_about(conn: AsyncConnection, subject: str) -> CommandState | None:
    """The newest command about ``subject``, if any: what it says and whether it is done."""
    found = await conn.execute(
        "select payload, done_at is not null, outcome from commands where subject = %s"
        " order by created_at desc limit 1",
        (subject,),
    )
    row = await found.fetchone()
    return None if row is None else CommandState(bytes(row[0]), row[1], row[2])


DONE_CHANNEL = "commands_done"
"""Postgres notifies it when a command is done (on commit): ``{"subject", "outcome"}``."""

NOTIFIED_OUTCOME_MAX = 1000
"""Longer outcomes are not sent (a notification holds under 8000 bytes): waiters read them."""

_COMPLETE = f"""
with done as (
    update commands set done_at = now(), outcome = %(outcome)s
    where command_id = %(command_id)s and done_at is null
    returning subject, outcome
)
select pg_notify('{DONE_CHANNEL}', json_build_object(
    'subject', subject,
    'outcome', case when octet_length(outcome) <= {NOTIFIED_OUTCOME_MAX} then outcome end)::text)
from done
"""


class CommandStatus(NamedTuple):
    done: bool
    outcome: str | None


class _Notified(msgspec.Struct):
    subject: str
    outcome: str | None = None


_notified = msgspec.json.Decoder(_Notified)


class Waiter:
    """One wait for the command about ``subject``: woken when it is done (with its outcome, if
    the notification carried it) or when notifications may have been missed."""

    __slots__ = ("subject", "outcome", "woken")

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.outcome: str | None = None
        self.woken = asyncio.Event()


class CommandWatch:
    """Waits for commands to be done without polling: one connection of its own (not the
    pool's) LISTENs on ``DONE_CHANNEL`` and wakes the waiters of each subject done.

    A notification is missed only while that connection is down: each waiter also looks every
    ``recheck_s``, and everyone looks once it listens again (after a Postgres restart, say,
    reconnecting with backoff), so a lost notification delays a wait and never hangs it.
    """

    def __init__(
        self,
        pool: AsyncConnectionPool,
        database_url: str,
        *,
        recheck_s: float = 0.5,
        max_backoff_s: float = 5.0,
    ) -> None:
        self._pool = pool
        self._database_url = database_url
        self._recheck_s = recheck_s
        self._max_backoff_s = max_backoff_s
        self._waiters: dict[str, set[Waiter]] = {}
        self.listening = asyncio.Event()
        """Set while notifications arrive (tests wait for it)."""

    @contextlib.contextmanager
    def watch(self, subject: str) -> Iterator[Waiter]:
        """Register a waiter for ``subject`` (for ``wait``); registered before the command
        commits, its notification cannot be missed, so its wait need not look first."""
        waiter = Waiter(subject)
        self._waiters.setdefault(subject, set()).add(waiter)
        try:
            yield waiter
        finally:
            waiting = self._waiters.get(subject)
            if waiting is not None:
                waiting.discard(waiter)
                if not waiting:
                    del self._waiters[subject]

    async def wait(
        self, subject: str, timeout_s: float, waiter: Waiter | None = None
    ) -> CommandStatus | None:
        """Whether the command about ``subject`` is done, once it is or ``timeout_s`` passed
        (``None``: there is no such command). ``waiter``: one from ``watch``, registered
        before the command was committed."""
        if waiter is None:
            with self.watch(subject) as registered:
                return await self._wait(registered, timeout_s, look=True)
        return await self._wait(waiter, timeout_s, look=False)

    async def _wait(self, waiter: Waiter, timeout_s: float, *, look: bool) -> CommandStatus | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        status: CommandStatus | None = CommandStatus(False, None)
        while True:
            waiter.woken.clear()
            if waiter.outcome is not None:
                return CommandStatus(True, waiter.outcome)
            if look:
                status = await self._status(waiter.subject)
                if status is None or status.done:
                    return status
            remaining = deadline - loop.time()
            if remaining <= 0:
                if look:
                    return status
                look = True  # the time is up: one last look, to answer what is true now
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(self._recheck_s, remaining)):
                    await waiter.woken.wait()
            look = True  # unless the notification told the outcome (see the loop's start)

    async def _status(self, subject: str) -> CommandStatus | None:
        async with self._pool.connection() as conn:
            state = await latest_about(conn, subject)
        return None if state is None else CommandStatus(state.done, state.outcome)

    async def run(self, stop: asyncio.Event) -> None:
        """Listen until ``stop``, reconnecting with backoff; an outage is logged once."""
        outage = OutageLog(log, "command watch", "postgres")
        backoff = 0.1
        while not stop.is_set():
            try:
                await self._listen(stop, outage)
            except (psycopg.Error, OSError) as error:
                outage.failed(error)
            if self.listening.is_set():  # it listened until now: try again soon
                self.listening.clear()
                backoff = 0.1
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff):
                    await stop.wait()
            backoff = min(backoff * 2, self._max_backoff_s)

    async def _listen(self, stop: asyncio.Event, outage: OutageLog) -> None:
        # meanwhile a lost connection goes unnoticed, the waiters' own looks cover it
        conn = await listening_connection(self._database_url, DONE_CHANNEL)
        async with conn:
            outage.succeeded()
            self.listening.set()
            self._wake_all()  # what was done while nobody listened was told to nobody
            while not stop.is_set():
                async for notification in conn.notifies(timeout=1.0):
                    self._notified(notification.payload)

    def _notified(self, payload: str) -> None:
        try:
            notified = _notified.decode(payload)
        except msgspec.DecodeError:
            log.warning("command watch: ignored a notification it cannot read: %r", payload)
            return
        for waiter in self._waiters.get(notified.subject, ()):
            waiter.outcome = notified.outcome
            waiter.woken.set()

    def _wake_all(self) -> None:
        for waiting in self._waiters.values():
            for waiter in waiting:
                waiter.woken.set()


_DUE = """
with due as (
    select command_id from commands
    where done_at is null and next_attempt_at <= now()
    order by next_attempt_at
    limit %(batch)s
    for update skip locked
)
update commands c
set attempts = c.attempts + 1,
    next_attempt_at = now() + make_interval(
        secs => least(%(first_retry_s)s * power(2, c.attempts), %(max_retry_s)s))
from due
where c.command_id = due.command_id
returning c.created_at, c.topic, c.payload
"""


class CommandRedriver(Pump):
    """Publishes pending commands: when woken after a commit, then each time one is due.

    Several processes may run one: ``skip locked`` gives each pending command to one of them
    per pass, and the attempt count only moves once Redis took the command."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        bus: Bus,
        *,
        first_retry_s: float = 1.0,
        max_retry_s: float = 2.0,
        poll_interval_s: float = 0.5,
        batch: int = 200,
    ) -> None:
        super().__init__("command re-driver", poll_interval_s=poll_interval_s)
        self._pool = pool
        self._bus = bus
        self._first_retry_s = first_retry_s
        self._max_retry_s = max_retry_s
        self._batch = batch

    async def run_pass(self) -> None:
        while await self.redrive() == self._batch:
            pass

    async def redrive(self) -> int:
        """Publish the commands due now, oldest first; return how many."""
        async with self._pool.connection() as conn, conn.transaction():
            found = await conn.execute(
                _DUE,
                {
                    "batch": self._batch,
                    "first_retry_s": self._first_retry_s,
                    "max_retry_s": self._max_retry_s,
                },
            )
            rows = sorted(await found.fetchall())
            # The attempt is counted only if Redis took every command (else all roll back).
            await self._bus.publish_many([(topic, bytes(payload)) for _, topic, payload in rows])
        return len(rows)
