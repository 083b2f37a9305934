"""Durable commands: Postgres holds each command until it has taken effect; Redis carries it.

The sender writes the command in the transaction that decides it (``send``), and a
``CommandRedriver`` publishes it on its Redis stream at once, then looks at it with backoff
until the receiver marks it done (``complete``, in the transaction of its effect), publishing
it again whenever its entry can no longer take effect. So a wiped Redis, a consumer that
crashed, or a receiver that could not act yet (its rules worker down) only delays a command:
none is dead-lettered or lost, and receivers must treat a repeat as a no-op. A receiver that
is only slow gets no repeats: an entry not read yet, or held by a live consumer, is left to it.

A sender that waits for its command to take effect (the lobby starting a table) is woken by a
``CommandWatch``: ``complete`` notifies on commit, so nobody polls the commands table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import NamedTuple

import msgspec
import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from shared.infra.bus import Bus, OutageLog, redis_text
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


class BySubject:
    """Lets a receiver carry out commands side by side, at most ``limit`` at once, but those
    about one subject one at a time, in the order they came (each waits its turn in a fair
    lock): one slow command holds up no other subject's, and two commands about one match (a
    repeat, or timeouts at two versions) never race each other for it."""

    def __init__(self, limit: int) -> None:
        self._gate = asyncio.Semaphore(limit)
        self._turns: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def turn(self, subject: str) -> AsyncIterator[None]:
        lock, waiting = self._turns.get(subject, (asyncio.Lock(), 0))
        self._turns[subject] = (lock, waiting + 1)
        try:
            async with lock, self._gate:
                yield
        finally:
            lock, waiting = self._turns[subject]
            if waiting == 1:
                del self._turns[subject]
            else:
                self._turns[subject] = (lock, waiting - 1)


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
select command_id, created_at, topic, payload, entry_id, attempts from commands
where done_at is null and next_attempt_at <= now()
order by next_attempt_at
limit %(batch)s
for update skip locked
"""

_LOOKED = """
update commands c
set attempts = c.attempts + case when looked.published then 1 else 0 end,
    entry_id = coalesce(looked.entry_id, c.entry_id),
    next_attempt_at = now() + make_interval(
        secs => least(%(first_retry_s)s * power(2, c.attempts), %(max_retry_s)s))
from unnest(%(ids)s::text[], %(entries)s::text[], %(published)s::bool[])
    as looked(command_id, entry_id, published)
where c.command_id = looked.command_id
"""


class _Due(NamedTuple):
    command_id: str
    created_at: datetime
    topic: str
    payload: bytes
    entry_id: str | None
    attempts: int


def _position(entry_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = entry_id.partition("-")
    return int(milliseconds), int(sequence or 0)


class CommandRedriver(Pump):
    """Publishes pending commands: when woken after a commit, then each time one is due.

    A command is published again only if its last entry can no longer take effect: gone from
    the stream (Redis lost it, or trimmed it), read and acknowledged without the command being
    done (its receiver could not act yet, the rules down, say), or held by a consumer that has
    been silent for ``owner_silent_ms`` (a process that died) or for ``held_limit_ms`` since
    it took it. An entry not read yet (a backlog) or held by a live consumer (a slow one) is
    only looked at again, with the same backoff: a slow receiver gets no duplicates, which
    would only slow it down more.

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
        owner_silent_ms: int = 10_000,
        held_limit_ms: int = 30_000,
    ) -> None:
        super().__init__("command re-driver", poll_interval_s=poll_interval_s, bus=bus)
        self._pool = pool
        self._bus = bus
        self._first_retry_s = first_retry_s
        self._max_retry_s = max_retry_s
        self._batch = batch
        self._owner_silent_ms = owner_silent_ms
        self._held_limit_ms = held_limit_ms

    async def run_pass(self) -> None:
        while (await self._redrive())[0] == self._batch:
            pass

    async def redrive(self) -> int:
        """Publish the commands due now whose entries cannot take effect, oldest first (the
        others are looked at again later); return how many were published."""
        return (await self._redrive())[1]

    async def _redrive(self) -> tuple[int, int]:
        """How many due commands were looked at, and how many of them published."""
        async with self._pool.connection() as conn, conn.transaction():
            found = await conn.execute(_DUE, {"batch": self._batch})
            due = sorted((_Due(*row) for row in await found.fetchall()), key=lambda d: d.created_at)
            if not due:
                return 0, 0
            held = await self._held([d for d in due if d.entry_id is not None])
            sending = [d for d in due if d.command_id not in held]
            # The attempt is counted only if Redis took every command (else all roll back).
            entries = await self._bus.publish_many([(d.topic, bytes(d.payload)) for d in sending])
            new_entries = dict(zip((d.command_id for d in sending), entries, strict=True))
            await conn.execute(
                _LOOKED,
                {
                    "ids": [d.command_id for d in due],
                    "entries": [new_entries.get(d.command_id) for d in due],
                    "published": [d.command_id in new_entries for d in due],
                    "first_retry_s": self._first_retry_s,
                    "max_retry_s": self._max_retry_s,
                },
            )
        return len(due), len(sending)

    async def _held(self, due: list[_Due]) -> set[str]:
        """The commands whose last entry is still on its way: not read yet, or held by a
        consumer alive and not stuck (see the class)."""
        if not due:
            return set()
        redis = self._bus.redis
        topics = sorted({d.topic for d in due})
        asked = redis.pipeline(transaction=False)
        for topic in topics:
            asked.xinfo_groups(topic)
        groups: dict[str, list[tuple[str, str]]] = {}
        for topic, reply in zip(topics, await asked.execute(raise_on_error=False), strict=True):
            groups[topic] = (
                []
                if isinstance(reply, Exception)  # no such stream: Redis lost it
                else [(redis_text(g["name"]), redis_text(g["last-delivered-id"])) for g in reply]
            )
        asked = redis.pipeline(transaction=False)
        members = [(topic, group) for topic in topics for group, _ in groups[topic]]
        for topic, group in members:
            asked.xinfo_consumers(topic, group)
        for d in due:
            asked.xrange(d.topic, d.entry_id, d.entry_id, count=1)
            for group, _ in groups[d.topic]:
                asked.xpending_range(d.topic, group, d.entry_id, d.entry_id, 1)
        replies = iter(await asked.execute(raise_on_error=False))
        silent: dict[tuple[str, str, str], int] = {}
        for topic, group in members:
            reply = next(replies)
            for member in [] if isinstance(reply, Exception) else reply:
                silent[topic, group, redis_text(member["name"])] = int(member["idle"])
        held = set()
        for d in due:
            assert d.entry_id is not None
            exists = next(replies)
            pending = [next(replies) for _ in groups[d.topic]]
            if isinstance(exists, Exception) or not exists:
                continue  # lost: publish it again
            if not groups[d.topic]:
                held.add(d.command_id)  # no receiver has joined yet: it will read it
                continue
            for (group, last_read), holders in zip(groups[d.topic], pending, strict=True):
                if isinstance(holders, Exception):
                    continue
                if holders:
                    holder = holders[0]
                    owner = (d.topic, group, redis_text(holder["consumer"]))
                    if (
                        silent.get(owner, self._owner_silent_ms) < self._owner_silent_ms
                        and int(holder["time_since_delivered"]) < self._held_limit_ms
                    ):
                        held.add(d.command_id)
                elif _position(d.entry_id) > _position(last_read):
                    held.add(d.command_id)  # not read yet: a backlog, not a loss
        return held
