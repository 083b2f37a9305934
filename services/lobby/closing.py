"""Closing tables before their match starts: by their app or its one seated player
(``close``), or when nobody joined, left or changed a seat for the lobby's idle time
(``close_idle``, swept by ``IdleSweep``)."""

from __future__ import annotations

from psycopg import AsyncConnection

from services.lobby import schemas as s
from services.lobby.checks import require_open, seat_of
from services.lobby.rows import Holders, read_seated, table_info
from services.lobby.steps import TableSteps
from shared.domain.messages import SYSTEM, Actor
from shared.edge import apps
from shared.edge.errors import Problem, not_found
from shared.edge.tokens import hash_token
from shared.infra import outbox

IDLE_BATCH = 100
"""Idle tables one look of the sweep closes at most before looking again."""


async def close(
    steps: TableSteps,
    conn: AsyncConnection,
    table_id: str,
    bearer: str | None,
    caller: apps.Caller,
    secret_options: dict[str, set[str]],
) -> s.TableInfo:
    """Close the app's table before its match starts (a closed one answers as it is, to the
    secret key): its seats are emptied and it no longer counts against the app's quota.

    The app's secret key closes any of its open tables. A publishable key (a browser's) closes
    one only with the seat token of the one person seated there (bots may be), as its creator
    waiting alone does; once another person sits down, closing it is the app's, and each
    player may only leave."""
    row, holders = await read_seated(conn, table_id, lock=True)
    if row.app_id != caller.app_id:
        raise not_found("table", table_id)
    actor = Actor(kind="app")
    if caller.kind != "secret":
        seat = None if bearer is None else seat_of(holders, hash_token(bearer))
        if seat is None:
            caller.require_secret("closing a table without the seat token of its one player")
        else:
            actor = _sole_player(holders, seat)
    if row.status != "closed":
        require_open(row)
        closed = await steps.close(conn, table_id, "by_app", actor)
        assert closed is not None  # it is open, and locked since
        row, holders = closed, {}
    return table_info(row, holders, secret_options)


def _sole_player(holders: Holders, seat: int) -> Actor:
    """The player at ``seat``, who may close the table with a publishable key if no other
    person sits there."""
    others = [held.player for at, held in holders.items() if at != seat and held.bot is None]
    if others:
        raise Problem(
            409,
            "players-seated",
            "Other players seated",
            f"{', '.join(others)} sat down too: only the app's secret key closes the table now;"
            " leave your seat instead",
        )
    return Actor(kind="player", seat=seat, name=holders[seat].player)


async def close_idle(steps: TableSteps, idle_s: float, limit: int = IDLE_BATCH) -> int:
    """Close up to ``limit`` open tables nobody joined, left or changed a seat of for
    ``idle_s``, each in a transaction of its own; return how many this call closed.

    Several lobbies may sweep at once: the condition is in each table's UPDATE, so one
    closes the table and the others (waiting on its row lock, then finding it closed, or
    changed by a join meanwhile) skip it."""
    pool = steps.runtime.pool
    async with pool.connection() as conn:
        result = await conn.execute(
            "select table_id from lobby_tables where status = 'open'"
            " and updated_at < now() - make_interval(secs => %s)"
            " order by updated_at limit %s",
            (idle_s, limit),
        )
        idle = [table_id for (table_id,) in await result.fetchall()]
    closed = 0
    for table_id in idle:
        async with pool.connection() as conn, conn.transaction():
            closed += await steps.close(conn, table_id, "idle", SYSTEM, idle_s) is not None
    if closed:
        steps.runtime.relay.wake()
    return closed


class IdleSweep(outbox.Pump):
    """Closes the open tables idle for ``idle_s`` (``close_idle``), looking every half of that
    time (at least once a minute); a Postgres outage is logged once and retried."""

    def __init__(self, steps: TableSteps, idle_s: float) -> None:
        super().__init__("idle table sweep", poll_interval_s=min(idle_s / 2, 60.0))
        self._steps = steps
        self._idle_s = idle_s

    async def run_pass(self) -> None:
        while await close_idle(self._steps, self._idle_s) == IDLE_BATCH:
            pass
