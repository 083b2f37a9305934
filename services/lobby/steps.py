"""The steps the lobby's commands are made of: each changes the read model (``lobby_tables``,
``lobby_seats``) and records its events in the table's stream ``table-<id>``, in the caller's
transaction."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec
from psycopg import AsyncConnection

from services.lobby import schemas as s
from services.lobby.checks import require_open, require_seat_number
from services.lobby.rows import (
    INSERT_COLUMNS,
    INSERT_FIELDS,
    TABLE_COLUMNS,
    TABLE_ROW,
    Holder,
    Holders,
    TableRow,
    public_event,
    table_info,
    table_stream,
)
from shared.domain.commitments import commit, published, stored
from shared.domain.hosting import Hosting
from shared.domain.messages import (
    SYSTEM,
    Actor,
    CloseReason,
    CreateMatch,
    EventEnvelope,
    SeatLeft,
    SeatTaken,
    TableClosed,
    TableCreated,
    TableStarted,
    Visibility,
    command,
    metadata,
    new_id,
)
from shared.edge.errors import Problem
from shared.edge.runtime import Runtime
from shared.edge.tokens import hash_token, new_token
from shared.infra import commands
from shared.infra.eventstore import NewEvent
from shared.infra.streams import LOBBY_EVENTS_STREAM, MATCH_COMMANDS_STREAM

_json = msgspec.json.Encoder()

_BUMP = "update lobby_tables set version = %s, updated_at = now() where table_id = %s"
"""The read model's side of recording events, joined to the statement of the change."""


class NewTable(NamedTuple):
    """What a new table is, however it came to be (created, or a finished table's rematch)."""

    game: str
    name: str
    seats: int
    options: dict[str, Any]
    secret: set[str]
    """The game's secret options: committed to, never shown."""
    seed: int
    seeded: bool
    visibility: Visibility
    invitation_token_hash: str | None
    seats_per_invitation: int | None
    hosting: Hosting
    rematch_of: str | None = None


class TableSteps:
    """Writes the lobby's tables: opens, seats, frees, closes and starts them, each step with
    its events."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.commands_topic = runtime.settings.stream(MATCH_COMMANDS_STREAM)
        self.events_topic = runtime.settings.stream(LOBBY_EVENTS_STREAM)

    async def open(
        self,
        conn: AsyncConnection,
        new: NewTable,
        bots: dict[int, str],
        actor: Actor,
        app_id: str | None,
    ) -> s.TableInfo:
        """Record a new table with ``bots`` in their seats; a table of bots only starts at
        once."""
        table_id = new_id()
        committed = commit(new.options, new.secret)
        created = TableCreated(
            table_id=table_id,
            game=new.game,
            name=new.name,
            seats=new.seats,
            options=new.options,
            seeded=new.seeded,
            visibility=new.visibility,
            commitments=published(committed),
            hosting=new.hosting,
            rematch_of=new.rematch_of,
        )
        seated = [SeatTaken(seat=seat, player=bot, bot=bot) for seat, bot in sorted(bots.items())]
        # The row as it reads back after the events recorded below.
        row = TableRow(
            table_id=table_id,
            game=new.game,
            name=new.name,
            seats=new.seats,
            options=_json.encode(new.options),
            seed=new.seed,
            seeded=new.seeded,
            status="open",
            match_id=None,
            version=1 + len(seated),
            visibility=new.visibility,
            invitation_token_hash=new.invitation_token_hash,
            app_id=app_id,
            commitments=_json.encode(committed),
            seats_per_invitation=new.seats_per_invitation,
            hosting=_json.encode(new.hosting),
            rematch_of=new.rematch_of,
            rematch_table_id=None,
        )
        values = [getattr(row, name) for name in INSERT_FIELDS]
        placeholders = ", ".join(["%s"] * len(values))
        await conn.execute(
            f"insert into lobby_tables ({INSERT_COLUMNS}) values ({placeholders})", values
        )
        holders = {seat: Holder(bot, hash_token(new_token()), bot) for seat, bot in bots.items()}
        if holders:
            await conn.execute(
                "insert into lobby_seats (table_id, seat, player_name, token_hash, bot)"
                " select %s, seat, bot, token_hash, bot"
                " from unnest(%s::int[], %s::text[], %s::text[]) as bots(seat, bot, token_hash)",
                (
                    table_id,
                    list(holders),
                    [holder.bot for holder in holders.values()],
                    [holder.token_hash for holder in holders.values()],
                ),
            )
        await self.record(conn, table_id, 0, [created, *seated], actor, app_id)
        secret_options = {new.game: new.secret}
        if len(holders) == new.seats:
            return await self.begin(conn, row, holders, SYSTEM, secret_options)
        return table_info(row, holders, secret_options)

    async def free_seat(
        self, conn: AsyncConnection, row: TableRow, taken: Holders, wanted: int | None
    ) -> tuple[int, str | None]:
        """The seat a join (of a player or a bot) takes at the open table: ``wanted``, or the
        first free one; and the invitation it comes with (a private table's)."""
        require_open(row)
        invited_by = row.invitation_token_hash if row.visibility == "private" else None
        await self.require_invitation_seats(conn, row, invited_by)
        if wanted is not None:
            require_seat_number(wanted, row.seats)
            if wanted in taken:
                raise Problem(409, "seat-taken", "Seat taken", f"seat {wanted} is taken")
            return wanted, invited_by
        free = [number for number in range(row.seats) if number not in taken]
        if not free:
            raise Problem(409, "table-full", "Table full", "every seat is taken")
        return free[0], invited_by

    async def take_seat(
        self,
        conn: AsyncConnection,
        row: TableRow,
        seat: int,
        holder: Holder,
        invited_by: str | None,
        actor: Actor,
    ) -> int:
        """Seat ``holder`` (``SeatTaken``); return the table's version after."""
        version = row.version + 1
        await conn.execute(
            "with seated as (insert into lobby_seats (table_id, seat, player_name, token_hash,"
            " invitation_token_hash, bot) values (%s, %s, %s, %s, %s, %s))"
            f" {_BUMP}",
            (row.table_id, seat, holder.player, holder.token_hash, invited_by, holder.bot)
            + (version, row.table_id),
        )
        taken = SeatTaken(seat=seat, player=holder.player, bot=holder.bot)
        await self.record(conn, row.table_id, row.version, [taken], actor, row.app_id)
        return version

    async def free(
        self, conn: AsyncConnection, row: TableRow, seat: int, player: str, actor: Actor
    ) -> int:
        """Empty the seat (``SeatLeft``); return the table's version after."""
        version = row.version + 1
        await conn.execute(
            f"with gone as (delete from lobby_seats where table_id = %s and seat = %s) {_BUMP}",
            (row.table_id, seat, version, row.table_id),
        )
        left = SeatLeft(seat=seat, player=player)
        await self.record(conn, row.table_id, row.version, [left], actor, row.app_id)
        return version

    async def close(
        self,
        conn: AsyncConnection,
        table_id: str,
        reason: CloseReason,
        actor: Actor,
        idle_s: float | None = None,
    ) -> TableRow | None:
        """Close the open table (with ``idle_s``: only if unchanged that long), emptying its
        seats (``TableClosed``); return its row after, or None if it is not (or no longer)
        such a table."""
        cursor = conn.cursor(row_factory=TABLE_ROW)
        await cursor.execute(
            "update lobby_tables set status = 'closed', version = version + 1,"
            " updated_at = now() where table_id = %s and status = 'open'"
            " and (%s::float8 is null or updated_at < now() - make_interval(secs => %s))"
            f" returning {TABLE_COLUMNS}",
            (table_id, idle_s, idle_s),
        )
        row = await cursor.fetchone()
        if row is None:
            return None
        await conn.execute("delete from lobby_seats where table_id = %s", (table_id,))
        closed = TableClosed(reason=reason)
        await self.record(conn, table_id, row.version - 1, [closed], actor, row.app_id)
        return row

    async def begin(
        self,
        conn: AsyncConnection,
        row: TableRow,
        holders: Holders,
        actor: Actor,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Start the full table: ``TableStarted`` and the ``CreateMatch`` command (with the
        table's bots and hosting) commit together. Return the table, naming its match."""
        table_id = row.table_id
        match_id = new_id()
        version = row.version + 1
        await conn.execute(
            "update lobby_tables set status = 'started', match_id = %s, version = %s,"
            " updated_at = now() where table_id = %s",
            (match_id, version, table_id),
        )
        started = TableStarted(match_id=match_id)
        correlation = await self.record(conn, table_id, row.version, [started], actor, row.app_id)
        seats = range(row.seats)
        create = CreateMatch(
            match_id=match_id,
            table_id=table_id,
            game=row.game,
            options=msgspec.json.decode(row.options),
            seats=row.seats,
            seat_token_hashes=[holders[number].token_hash for number in seats],
            players=[holders[number].player for number in seats],
            seed=row.seed,
            private=row.visibility == "private",
            invitation_token_hash=row.invitation_token_hash,
            app_id=row.app_id,
            commitments=stored(row.commitments),
            bots={number: bot for number in seats if (bot := holders[number].bot) is not None},
            hosting=row.hosted(),
        )
        envelope = command("CreateMatch", create, correlation_id=correlation, actor=actor)
        await commands.send(
            conn, envelope.command_id, self.commands_topic, match_id, _json.encode(envelope)
        )
        now = row.changed(status="started", match_id=match_id, version=version)
        return table_info(now, holders, secret_options)

    async def record(
        self,
        conn: AsyncConnection,
        table_id: str,
        version: int,
        events: list[Any],
        actor: Actor,
        app_id: str | None,
    ) -> str:
        """Append to the table's stream and queue the public events (their metadata names the
        table's app, whose webhooks alone receive them). The caller sets the read model's
        ``version`` to ``version + len(events)`` in its own statement (one round trip less)."""
        correlation_id = new_id()
        meta = metadata(correlation_id=correlation_id, actor=actor, app_id=app_id)
        new_events = [NewEvent(type(e).__name__, _json.encode(e), meta) for e in events]
        stream = table_stream(table_id)
        envelopes = [
            EventEnvelope(
                stream_id=stream,
                version=version + number,
                type=event.type,
                data=msgspec.Raw(public_event(event)),
                metadata=event.metadata,
            )
            for number, event in enumerate(new_events, start=1)
        ]
        await self.runtime.store.append(
            stream,
            version,
            new_events,
            envelopes=[(self.events_topic, _json.encode(envelope)) for envelope in envelopes],
            conn=conn,
        )
        return correlation_id

    async def require_invitation_seats(
        self, conn: AsyncConnection, row: TableRow, invited_by: str | None
    ) -> None:
        """A 409 once the invitation filled as many seats as the table lets one fill."""
        limit = row.seats_per_invitation
        if invited_by is None or limit is None:
            return
        result = await conn.execute(
            "select count(*) from lobby_seats where table_id = %s and invitation_token_hash = %s",
            (row.table_id, invited_by),
        )
        (filled,) = await result.fetchone() or (0,)
        if filled >= limit:
            raise Problem(
                409,
                "invitation-used-up",
                "Invitation used up",
                f"this invitation has filled the {limit} seat(s) it may: ask for a new one",
            )

    async def within_quota(self, conn: AsyncConnection, app_id: str | None) -> None:
        """A 429 once the app has as many tables waiting for players as its quota allows;
        creations by one app are serialised (a transaction-scoped lock), so none slips past."""
        if app_id is None:
            return
        await conn.execute("select pg_advisory_xact_lock(hashtext(%s))", (f"tables:{app_id}",))
        # After the lock, in a statement of its own: it sees every creation committed before.
        result = await conn.execute(
            "select (select max_open_tables from apps where app_id = %s),"
            " (select count(*) from lobby_tables where app_id = %s and status = 'open')",
            (app_id, app_id),
        )
        quota, waiting = await result.fetchone() or (None, 0)
        if quota is None:
            quota = self.runtime.settings.max_open_tables_per_app
        if waiting >= quota:
            raise Problem(
                429,
                "table-quota-reached",
                "Table quota reached",
                f"the app has {waiting} tables waiting for players, its quota: start or leave"
                " some first",
            )
