"""Tables: each is an event stream ``table-<id>`` plus a read model row, written together."""

from __future__ import annotations

import base64
import secrets
from datetime import datetime
from typing import Annotated, Any

import msgspec
from psycopg import AsyncConnection

from services.lobby import schemas as s
from shared import commands, outbox
from shared.commitments import commit, published, stored
from shared.eventstore import NewEvent, StoredEvent
from shared.http import Problem, hash_token, new_token, not_found
from shared.messages import (
    Actor,
    CreateMatch,
    EventEnvelope,
    SeatLeft,
    SeatTaken,
    TableCreated,
    TableStarted,
    command,
    metadata,
    new_id,
)
from shared.runtime import Runtime

_json = msgspec.json.Encoder()
_cursor_decoder = msgspec.json.Decoder(
    tuple[
        Annotated[datetime, msgspec.Meta(tz=True)],
        Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{32}$")],
    ]
)
"""A page cursor is ``[created_at, table_id]`` of the last table shown, exactly."""


def table_stream(table_id: str) -> str:
    return f"table-{table_id}"


class Tables:
    """The lobby's domain: create, join, leave and start tables; answers read queries."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.commands_topic = runtime.settings.stream("commands:match")
        self.events_topic = runtime.settings.stream("lobby-events")

    # --- reads -------------------------------------------------------------------------------

    async def get(
        self, conn: AsyncConnection, table_id: str, secret_options: dict[str, set[str]]
    ) -> s.TableInfo:
        row, holders = await self._seated(conn, table_id, lock=False)
        return _table_info(row, holders, secret_options)

    async def seen_by(
        self,
        conn: AsyncConnection,
        table_id: str,
        token: str | None,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """The table for a caller: a private one only for its invitation or a seat's token."""
        row, holders = await self._seated(conn, table_id, lock=False)
        if token is None or hash_token(token) not in {hashed for _, hashed in holders.values()}:
            _require_invitation(row, token)
        return _table_info(row, holders, secret_options)

    async def page(
        self,
        conn: AsyncConnection,
        *,
        app_id: str | None,
        status: str | None,
        game: str | None,
        cursor: str | None,
        limit: int,
        secret_options: dict[str, set[str]],
    ) -> s.TablePage:
        after_created, after_id = _decode_cursor(cursor) if cursor else ("-infinity", "")
        result = await conn.execute(
            f"select {_COLUMNS} from lobby_tables"
            " where (created_at, table_id) > (%s::timestamptz, %s)"
            " and visibility = 'public' and app_id is not distinct from %s"
            " and (%s::text is null or status = %s) and (%s::text is null or game = %s)"
            " order by created_at, table_id limit %s",
            (after_created, after_id, app_id, status, status, game, game, limit + 1),
        )
        rows = await result.fetchall()
        listed = rows[:limit]
        seats = await conn.execute(
            "select table_id, seat, player_name, token_hash from lobby_seats"
            " where table_id = any(%s)",
            ([row[0] for row in listed],),
        )
        holders: dict[str, dict[int, tuple[str, str]]] = {row[0]: {} for row in listed}
        for table_id, seat, name, hashed in await seats.fetchall():
            holders[table_id][seat] = (name, hashed)
        items = [_table_info(row, holders[row[0]], secret_options) for row in listed]
        next_cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            next_cursor = _encode_cursor(last[-1].isoformat(), last[0])
        return s.TablePage(items=items, next_cursor=next_cursor)

    # --- commands ----------------------------------------------------------------------------

    async def create(
        self,
        conn: AsyncConnection,
        body: s.CreateTable,
        options: dict[str, Any],
        secret: set[str],
        actor: Actor,
        app_id: str | None,
    ) -> tuple[s.TableInfo, str | None]:
        """Create the app's table, committed to its ``secret`` options; return it and, for a
        private table, its invitation."""
        await self._within_quota(conn, app_id)
        table_id = new_id()
        invitation = new_token() if body.visibility == "private" else None
        seed = body.seed if body.seed is not None else secrets.randbits(63)
        committed = commit(options, secret)
        created = TableCreated(
            table_id=table_id,
            game=body.game,
            name=body.name or f"{body.game} table",
            seats=body.seats,
            options=options,
            seeded=body.seed is not None,
            visibility=body.visibility,
            commitments=published(committed),
        )
        # The row as it reads back (``_COLUMNS``) at version 1, after the event recorded below.
        row = (
            table_id,
            body.game,
            created.name,
            body.seats,
            _json.encode(options),
            seed,
            created.seeded,
            "open",
            None,
            1,
            body.visibility,
            None if invitation is None else hash_token(invitation),
            app_id,
            _json.encode(committed),
            body.seats_per_invitation,
        )
        await conn.execute(
            f"insert into lobby_tables ({_INSERT_COLUMNS})"
            " values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            row,
        )
        await self._record(conn, table_id, 0, [created], actor, app_id)
        return _table_info(row, {}, {body.game: secret}), invitation

    async def join(
        self,
        conn: AsyncConnection,
        table_id: str,
        body: s.JoinTable,
        invitation: str | None,
        app_id: str | None,
        secret_options: dict[str, set[str]],
    ) -> tuple[int, str, s.TableInfo]:
        """Seat a player of the table's app (a private table: only its invitation's bearers);
        return the seat, its token and the table."""
        row, taken = await self._seated(conn, table_id, lock=True)
        if row[12] != app_id:  # another app's table: as if there were none
            raise not_found("table", table_id)
        _require_invitation(row, invitation)
        _require_open(row)
        invited_by = row[11] if row[10] == "private" else None
        await self._require_invitation_seats(conn, row, invited_by)
        seats = row[3]
        if body.seat is not None:
            if not 0 <= body.seat < seats:
                raise Problem(422, "no-such-seat", "No such seat", f"seats are 0 to {seats - 1}")
            if body.seat in taken:
                raise Problem(409, "seat-taken", "Seat taken", f"seat {body.seat} is taken")
            seat = body.seat
        else:
            free = [number for number in range(seats) if number not in taken]
            if not free:
                raise Problem(409, "table-full", "Table full", "every seat is taken")
            seat = free[0]
        token = new_token()
        version = row[9] + 1
        await conn.execute(
            "with seated as (insert into lobby_seats (table_id, seat, player_name, token_hash,"
            " invitation_token_hash) values (%s, %s, %s, %s, %s))"
            f" {_BUMP}",
            (table_id, seat, body.name, hash_token(token), invited_by, version, table_id),
        )
        actor = Actor(kind="player", seat=seat, name=body.name)
        await self._record(
            conn, table_id, row[9], [SeatTaken(seat=seat, player=body.name)], actor, row[12]
        )
        taken[seat] = (body.name, hash_token(token))
        return seat, token, _table_info(_at(row, version=version), taken, secret_options)

    async def leave(
        self,
        conn: AsyncConnection,
        table_id: str,
        seat: int,
        token: str,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Free the token's seat while the table is open; return the table."""
        row, holders = await self._seated(conn, table_id, lock=True)
        if seat not in holders or holders[seat][1] != hash_token(token):
            raise Problem(
                403, "not-your-seat", "Not your seat", f"the token does not hold seat {seat}"
            )
        _require_open(row)  # after the token: a private table tells strangers nothing
        player = holders.pop(seat)[0]
        version = row[9] + 1
        await conn.execute(
            f"with gone as (delete from lobby_seats where table_id = %s and seat = %s) {_BUMP}",
            (table_id, seat, version, table_id),
        )
        actor = Actor(kind="player", seat=seat, name=player)
        left = SeatLeft(seat=seat, player=player)
        await self._record(conn, table_id, row[9], [left], actor, row[12])
        return _table_info(_at(row, version=version), holders, secret_options)

    async def start(
        self,
        conn: AsyncConnection,
        table_id: str,
        token: str,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Start the full table's match (for a seated player's token): return the table, which
        names its match; the ``CreateMatch`` command about it commits with it."""
        row, holders = await self._seated(conn, table_id, lock=True)
        token_hash = hash_token(token)
        seat = next(
            (number for number, (_, hashed) in holders.items() if hashed == token_hash), None
        )
        if seat is None:
            raise Problem(
                403, "not-seated", "Not seated", "only a seated player may start the table"
            )
        _require_open(row)
        if len(holders) < row[3]:
            raise Problem(
                409,
                "table-not-full",
                "Table not full",
                f"{len(holders)} of {row[3]} seats are taken",
            )
        match_id = new_id()
        version = row[9] + 1
        await conn.execute(
            "update lobby_tables set status = 'started', match_id = %s, version = %s,"
            " updated_at = now() where table_id = %s",
            (match_id, version, table_id),
        )
        actor = Actor(kind="player", seat=seat, name=holders[seat][0])
        correlation = await self._record(
            conn, table_id, row[9], [TableStarted(match_id=match_id)], actor, row[12]
        )
        create = CreateMatch(
            match_id=match_id,
            table_id=table_id,
            game=row[1],
            options=msgspec.json.decode(row[4]),
            seats=row[3],
            seat_token_hashes=[holders[number][1] for number in range(row[3])],
            players=[holders[number][0] for number in range(row[3])],
            seed=row[5],
            private=row[10] == "private",
            invitation_token_hash=row[11],
            app_id=row[12],
            commitments=stored(row[13]),
        )
        envelope = command("CreateMatch", create, correlation_id=correlation, actor=actor)
        await commands.send(
            conn, envelope.command_id, self.commands_topic, match_id, _json.encode(envelope)
        )
        started = _at(row, status="started", match_id=match_id, version=version)
        return _table_info(started, holders, secret_options)

    # --- helpers -----------------------------------------------------------------------------

    async def _record(
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
        await self.runtime.store.append(stream, version, new_events, conn=conn)
        published = [
            _json.encode(
                EventEnvelope(
                    stream_id=stream,
                    version=version + number,
                    type=event.type,
                    data=msgspec.Raw(public_event(event)),
                    metadata=event.metadata,
                )
            )
            for number, event in enumerate(new_events, start=1)
        ]
        await outbox.enqueue(conn, [(self.events_topic, payload) for payload in published])
        return correlation_id

    async def rotate_invitation(self, conn: AsyncConnection, table_id: str, app_id: str) -> str:
        """A new invitation for the app's open private table; the one before stops working."""
        invitation = new_token()
        await self._set_invitation(conn, table_id, app_id, hash_token(invitation))
        return invitation

    async def revoke_invitation(self, conn: AsyncConnection, table_id: str, app_id: str) -> None:
        """No invitation works any more: the seated stay, no one else sees or joins."""
        await self._set_invitation(conn, table_id, app_id, None)

    async def _set_invitation(
        self, conn: AsyncConnection, table_id: str, app_id: str, hashed: str | None
    ) -> None:
        row = await self._row(conn, table_id, lock=True)
        if row[12] != app_id:
            raise not_found("table", table_id)
        if row[10] != "private":
            raise not_private()
        _require_open(row)
        await conn.execute(
            "update lobby_tables set invitation_token_hash = %s, updated_at = now()"
            " where table_id = %s",
            (hashed, table_id),
        )

    async def _require_invitation_seats(
        self, conn: AsyncConnection, row: tuple[Any, ...], invited_by: str | None
    ) -> None:
        """A 409 once the invitation filled as many seats as the table lets one fill."""
        limit = row[14]
        if invited_by is None or limit is None:
            return
        result = await conn.execute(
            "select count(*) from lobby_seats where table_id = %s and invitation_token_hash = %s",
            (row[0], invited_by),
        )
        filled = (await result.fetchone() or (0,))[0]
        if filled >= limit:
            raise Problem(
                409,
                "invitation-used-up",
                "Invitation used up",
                f"this invitation has filled the {limit} seat(s) it may: ask for a new one",
            )

    async def _within_quota(self, conn: AsyncConnection, app_id: str | None) -> None:
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

    async def _row(self, conn: AsyncConnection, table_id: str, *, lock: bool) -> tuple[Any, ...]:
        query = f"select {_COLUMNS} from lobby_tables where table_id = %s"
        result = await conn.execute(query + (" for update" if lock else ""), (table_id,))
        row = await result.fetchone()
        if row is None:
            raise not_found("table", table_id)
        return row

    async def _seated(
        self, conn: AsyncConnection, table_id: str, *, lock: bool
    ) -> tuple[tuple[Any, ...], dict[int, tuple[str, str]]]:
        """The table's row and its seats' holders in one round trip; ``lock``: the row locked
        for this transaction's change.

        Under the lock the seats are as fresh as the row: the seats subquery reads the
        statement's snapshot, which predates a lock it waited for, but seats only change with
        a version bump under that lock, so a snapshot whose version is the locked row's has
        its seats (else, rarely, they are read again)."""
        result = await conn.execute(_SEATED + (" for update" if lock else ""), {"id": table_id})
        found = await result.fetchone()
        if found is None:
            raise not_found("table", table_id)
        row, fresh, seats = found[:-2], found[-2], found[-1]
        if not fresh:
            return row, await self._holders(conn, table_id)
        return row, {seat: (name, hashed) for seat, name, hashed in seats}

    async def _holders(self, conn: AsyncConnection, table_id: str) -> dict[int, tuple[str, str]]:
        result = await conn.execute(
            "select seat, player_name, token_hash from lobby_seats where table_id = %s", (table_id,)
        )
        return {seat: (name, hashed) for seat, name, hashed in await result.fetchall()}


def _table_info(
    row: tuple[Any, ...],
    holders: dict[int, tuple[str, str]],
    secret_options: dict[str, set[str]],
) -> s.TableInfo:
    """The table as anyone may see it: secret options (a deck order, say) show as null, and
    which of them are set."""
    options = msgspec.json.decode(row[4])
    hidden = secret_options.get(row[1], set())
    set_secretly = sorted(name for name in hidden if options.get(name) is not None)
    shown = {name: (None if name in hidden else value) for name, value in options.items()}
    return s.TableInfo(
        table_id=row[0],
        game=row[1],
        name=row[2],
        options=shown,
        seeded=row[6],
        status=row[7],
        match_id=row[8],
        seats=[
            s.SeatInfo(seat=number, player=holders[number][0] if number in holders else None)
            for number in range(row[3])
        ],
        version=row[9],
        visibility=row[10],
        secret_options_set=set_secretly,
        commitments=published(stored(row[13])),
        seats_per_invitation=row[14],
    )


_INSERT_COLUMNS = (
    "table_id, game, name, seats, options, seed, seeded, status, match_id, version,"
    " visibility, invitation_token_hash, app_id, commitments, seats_per_invitation"
)
_COLUMNS = f"{_INSERT_COLUMNS}, created_at"
_COLUMN_INDEX = {name: index for index, name in enumerate(_COLUMNS.split(", "))}

_SEATED = f"""
select {_COLUMNS},
    (select version from lobby_tables where table_id = %(id)s) = version,
    coalesce((select json_agg(json_build_array(seat, player_name, token_hash))
              from lobby_seats where table_id = %(id)s), '[]')
from lobby_tables where table_id = %(id)s"""

_BUMP = "update lobby_tables set version = %s, updated_at = now() where table_id = %s"
"""The read model's side of recording events, joined to the statement of the change."""


def _at(row: tuple[Any, ...], **changed: Any) -> tuple[Any, ...]:
    """``row`` (of ``_COLUMNS``) as it reads after the change written: no read back needed."""
    values = list(row)
    for name, value in changed.items():
        values[_COLUMN_INDEX[name]] = value
    return tuple(values)


def public_event(event: NewEvent | StoredEvent) -> bytes:
    """Lobby events carry no secrets except a created table's secret options: drop them all."""
    if event.type != "TableCreated":
        return event.data
    created = msgspec.json.decode(event.data, type=TableCreated)
    return _json.encode(msgspec.structs.replace(created, options={}))


def _require_invitation(row: tuple[Any, ...], token: str | None) -> None:
    """A private table answers only its invitation; the refusal says nothing about the table."""
    if row[10] == "private" and (token is None or hash_token(token) != row[11]):
        raise Problem(
            403,
            "private-table",
            "Private table",
            "this table is private: send its invitation token as 'Authorization: Bearer <token>'",
        )


def not_private() -> Problem:
    return Problem(
        422, "not-private", "Not a private table", "only a private table has an invitation"
    )


def _require_open(row: tuple[Any, ...]) -> None:
    if row[7] != "open":
        raise Problem(
            409, "table-started", "Table already started", "the table's match has started"
        )


def _encode_cursor(created_at: str, table_id: str) -> str:
    return base64.urlsafe_b64encode(_json.encode([created_at, table_id])).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        return _cursor_decoder.decode(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, msgspec.DecodeError):
        raise Problem(
            400, "bad-cursor", "Bad cursor", "the cursor is not one this API gave"
        ) from None
