"""Durable commands: Postgres holds each command until it has taken effect; Redis carries it.

The sender writes the command in the transaction that decides it (``send``), and a
``CommandRedriver`` publishes every pending command on its Redis stream, at once and then
again with backoff until the receiver marks it done (``complete``, in the transaction of its
effect). So a wiped Redis, a consumer that crashed, or a receiver that could not act yet (its
rules worker down) only delays a command: none is dead-lettered or lost, and receivers must
treat a repeat as a no-op.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from shared.bus import Bus
from shared.outbox import Pump

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
    """Mark a command as taken effect (in the transaction of its effect): no more re-drives."""
    await conn.execute(
        "update commands set done_at = now(), outcome = %s"
        " where command_id = %s and done_at is null",
        (outcome, command_id),
    )


async def latest_about(conn: AsyncConnection, subject: str) -> CommandState | None:
    """The newest command about ``subject``, if any: what it says and whether it is done."""
    found = await conn.execute(
        "select payload, done_at is not null, outcome from commands where subject = %s"
        " order by created_at desc limit 1",
        (subject,),
    )
    row = await found.fetchone()
    return None if row is None else CommandState(bytes(row[0]), row[1], row[2])


async def wait_until_done(
    pool: AsyncConnectionPool, subject: str, timeout_s: float
) -> CommandState | None:
    """Poll until the command about ``subject`` is done, or ``timeout_s`` passed; its state."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    pause = 0.005
    while True:
        async with pool.connection() as conn:
            state = await latest_about(conn, subject)
        if state is None or state.done or loop.time() >= deadline:
            return state
        await asyncio.sleep(min(pause, max(deadline - loop.time(), 0)))
        pause = min(pause * 2, 0.1)


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
