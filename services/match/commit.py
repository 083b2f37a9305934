"""Group commit of moves.

Moves of different matches that are ready to commit together (decided in the same event-loop
turn, or while the previous group's commit was in flight) share one statement: one round trip,
one transaction, one commit. Each keeps its own version guard and its own outcome, and nothing
one move does can abort the others' transaction (see ``_MOVED``).

The statement writes each move's public copies into the outbox with its events. After a commit
that moved anything the committer wakes the process's outbox relay, which publishes the whole
outbox in id order under the relays' lock (``shared/infra/outbox.py``), so the first copy of each
event reaches Redis in its stream's version order, wherever the earlier events came from.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import psycopg
from psycopg.errors import TransactionRollback, UniqueViolation
from psycopg_pool import AsyncConnectionPool

from shared.infra.eventstore import Append, Record, Snapshot, append_all
from shared.infra.outbox import OutboxRelay


@dataclass(frozen=True, slots=True)
class PendingMove:
    """A decided move, ready to commit on top of version ``expected`` of its match."""

    match_id: str
    stream: str
    expected: int
    state: bytes
    to_move: list[int]
    status: str
    result: bytes | None
    clocks: bytes | None
    deadline: float | None
    types: list[str]
    data: list[bytes]
    metadata: bytes
    """The encoded metadata every event of the move shares."""
    publications: list[tuple[str, bytes]]
    """``(topic, payload)`` to publish: the events' public copies, then ``MatchFinished`` if
    over, and whatever else announces the move."""
    scope: str | None = None
    key: str | None = None
    fingerprint: str | None = None
    reply: bytes | None = None
    """The sealed answer recorded under the Idempotency-Key (``key``), if any."""


class Committer:
    """Commits the moves handed to ``commit`` in groups, one group in flight at a time.

    A move waits for its group's commit and learns whether it moved (``False``: its version
    guard failed, or its Idempotency-Key was already used, as when it ran alone). A group holds
    at most one move per match (a second waits for the next group, where its guard fails if the
    first moved) and takes its rows in match order. Should the group's statement fail all the
    same through one of its moves (a deadlock with another process's group, say), each of its
    moves is committed again alone, as it would have been without grouping.
    """

    def __init__(
        self,
        pool: AsyncConnectionPool,
        relay: OutboxRelay,
        *,
        snapshot_every: int,
        max_group: int = 100,
    ) -> None:
        self._pool = pool
        self._relay = relay
        self._snapshot_every = snapshot_every
        self._max_group = max_group
        self._waiting: list[tuple[PendingMove, asyncio.Future[bool]]] = []
        self._flushing: asyncio.Task[None] | None = None

    async def commit(self, move: PendingMove) -> bool:
        """Commit ``move`` with whatever else is ready; whether it moved, once committed."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((move, done))
        if self._flushing is None:
            # Starts on the next turn of the loop: moves ready in this one join the group.
            self._flushing = asyncio.create_task(self._flush())
        return await done

    async def _flush(self) -> None:
        try:
            while self._waiting:
                await self._commit_group(self._next_group())
        finally:
            self._flushing = None

    def _next_group(self) -> list[tuple[PendingMove, asyncio.Future[bool]]]:
        group: dict[str, tuple[PendingMove, asyncio.Future[bool]]] = {}
        later: list[tuple[PendingMove, asyncio.Future[bool]]] = []
        for waiting in self._waiting:
            match_id = waiting[0].match_id
            if match_id in group or len(group) >= self._max_group:
                later.append(waiting)
            else:
                group[match_id] = waiting
        self._waiting = later
        return [group[match_id] for match_id in sorted(group)]

    async def _commit_group(self, group: list[tuple[PendingMove, asyncio.Future[bool]]]) -> None:
        moves = [move for move, _ in group]
        try:
            moved = await self._execute(moves)
        except psycopg.Error as error:
            if len(group) > 1 and isinstance(error, _ONE_MOVES_FAULT):
                for alone in group:
                    await self._commit_group([alone])
            elif len(group) == 1 and isinstance(error, UniqueViolation):
                _settle(group[0][1], False)  # a concurrent move won the race
            else:  # Postgres is out of reach: every move answers so, as it would alone
                for _, done in group:
                    _fail(done, error)
            return
        except BaseException as error:
            for _, done in group:
                _fail(done, error)
            raise
        if moved:
            self._relay.wake()
        for number, (_, done) in enumerate(group, 1):
            _settle(done, number in moved)

    async def _execute(self, moves: list[PendingMove]) -> set[int]:
        """Append the group's moves under their guard (``_MOVED``): those that moved (numbered
        from 1)."""
        appends = [self._append(move) for move in moves]
        async with self._pool.connection() as conn:
            return await append_all(conn, appends, guard=_MOVED, guard_params=_rows(moves))

    def _append(self, move: PendingMove) -> Append:
        """The move's events, publications, snapshot (when it crosses a multiple of the
        interval) and idempotency record."""
        version = move.expected + len(move.types)
        every = self._snapshot_every
        return Append(
            move.stream,
            move.expected,
            [
                (type_, data, move.metadata)
                for type_, data in zip(move.types, move.data, strict=True)
            ],
            move.publications,
            [Snapshot(move.match_id, version, move.state)]
            if version // every > move.expected // every
            else (),
            None
            if move.key is None
            else Record(move.scope or "", move.key, move.fingerprint or "", 201, move.reply or b""),
        )


def _rows(moves: list[PendingMove]) -> dict[str, object]:
    """The ``matches`` rows after the moves: ``_MOVED``'s parameters."""
    return {
        "match_ids": [move.match_id for move in moves],
        "states": [move.state for move in moves],
        "to_moves": [_int_array(move.to_move) for move in moves],
        "statuses": [move.status for move in moves],
        "results": [move.result for move in moves],
        "clocks": [move.clocks for move in moves],
        "deadlines": [move.deadline for move in moves],
    }


_ONE_MOVES_FAULT = (psycopg.IntegrityError, psycopg.DataError, TransactionRollback)
"""Errors that one move of a group may cause (a deadlock with another group, too): its
companions are not to blame, so each move is tried again alone."""


def _int_array(values: list[int]) -> str:
    """An int[] literal: a column of arrays of different lengths travels as text."""
    return "{" + ",".join(map(str, values)) + "}"


def _settle(done: asyncio.Future[bool], moved: bool) -> None:
    if not done.done():  # its request may have been cancelled meanwhile
        done.set_result(moved)


def _fail(done: asyncio.Future[bool], error: BaseException) -> None:
    if not done.done():
        done.set_exception(error)


_MOVED = """
    update matches
    set version = matches.version + append.event_count, state = m.state,
        to_move = m.to_move::int[], status = m.status, result = m.result, clocks = m.clocks,
        deadline = to_timestamp(m.deadline / 1000), updated_at = now()
    from unnest(
        %(match_ids)b::text[], %(states)b::bytea[], %(to_moves)b::text[], %(statuses)b::text[],
        %(results)b::bytea[], %(clocks)b::bytea[], %(deadlines)b::float8[]
    ) with ordinality as m(match_id, state, to_move, status, result, clocks, deadline, n)
    join append on append.n = m.n
    where matches.match_id = m.match_id and matches.version = append.expected
      and not append.key_used
    returning append.n, append.stream, append.expected
"""
"""The guard of the group's appends (``shared.infra.eventstore.append_all``), each move as
``_COMMIT_MOVE`` once did alone. A match's row moves only from the version its move was decided
on, and only by the number of events decided: of racing moves decided on the same version, the
first to commit wins and the others find no row and lose (nothing fails: the row just does not
move). The events, their public copies for the outbox, the idempotency record and the snapshot
(when the move crosses a multiple of the interval) are written with it or not at all.

An Idempotency-Key already recorded stops the move in its guard, as the unique key once did by
failing its transaction, so it cannot abort the group. (Only moves write records of a match's
scope, each after taking its match's row, so no other commit can record the key between the
guard's look and the insert.) ``unique(stream_id, version)`` on events still backs the version
guard up."""
