"""Tables: each is an event stream ``table-<id>`` plus a read model row, written together."""

from __future__ import annotations

import secrets
from typing import Any, NamedTuple

import msgspec
from psycopg import AsyncConnection

from services.lobby import schemas as s
from shared.domain.commitments import commit, published, stored
from shared.domain.hosting import NO_HOSTING, Hosting, bot_named
from shared.domain.messages import (
    SYSTEM,
    Actor,
    CloseReason,
    CreateMatch,
    EventEnvelope,
    RematchOffered,
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
from shared.edge import apps
from shared.edge.errors import Problem, not_found
from shared.edge.paging import table_cursor, table_position
from shared.edge.runtime import Runtime
from shared.edge.tokens import hash_token, new_token
from shared.infra import commands, outbox
from shared.infra.eventstore import NewEvent, StoredEvent
from shared.infra.streams import LOBBY_EVENTS_STREAM, MATCH_COMMANDS_STREAM

_json = msgspec.json.Encoder()
_hosting_decoder = msgspec.json.Decoder(Hosting)
IDLE_BATCH = 100
"""Idle tables one look of the sweep closes at most before looking again."""


def table_stream(table_id: str) -> str:
    return f"table-{table_id}"


class Holder(NamedTuple):
    """Who holds a seat: a player's name and token hash, or a bot (its name is the player's;
    its token, made at random, is nobody's)."""

    player: str
    token_hash: str
    bot: str | None = None


Holders = dict[int, Holder]


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


class Tables:
    """The lobby's domain: create, join, leave and start tables, seat bots, offer rematches;
    answers read queries."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.commands_topic = runtime.settings.stream(MATCH_COMMANDS_STREAM)
        self.events_topic = runtime.settings.stream(LOBBY_EVENTS_STREAM)

    # --- reads -------------------------------------------------------------------------------

    async def get(
        self, conn: AsyncConnection, table_id: str, secret_options: dict[str, set[str]]
    ) -> s.TableInfo:
        row, holders = await self._seated(conn, table_id, lock=False)
        return _table_info(row, holders, secret_options)

    async def app_of(self, table_id: str) -> str | None:
        """The app whose table it is (it never changes); a 404 for no table."""
        async with self.runtime.pool.connection() as conn:
            cursor = await conn.execute(
                "select app_id from lobby_tables where table_id = %s", (table_id,)
            )
            row = await cursor.fetchone()
        if row is None:
            raise not_found("table", table_id)
        return row[0]

    async def seen_by(
        self,
        conn: AsyncConnection,
        table_id: str,
        token: str | None,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """The table for a caller: a private one only for its invitation or a seat's token."""
        bearer_hash = None if token is None else hash_token(token)
        return await self.seen_by_hash(conn, table_id, bearer_hash, secret_options)

    async def known_token(self, conn: AsyncConnection, table_id: str, token: str) -> None:
        """That the token is a seat's at the table or its invitation: a public table shows
        itself to anyone, but nothing is given for a token it does not know."""
        row, holders = await self._seated(conn, table_id, lock=False)
        token_hash = hash_token(token)
        if _seat_of(holders, token_hash) is None:
            _require_invitation_hash(row, token_hash)  # a private table's: its invitation
            if row[10] == "public":
                raise Problem(
                    403, "not-seated", "Not seated", "the token is no seat's at this table"
                )

    async def seen_by_hash(
        self,
        conn: AsyncConnection,
        table_id: str,
        bearer_hash: str | None,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """``seen_by`` for the hash of the caller's token (a feed ticket's: it holds no token)."""
        row, holders = await self._seated(conn, table_id, lock=False)
        if bearer_hash is None or _seat_of(holders, bearer_hash) is None:
            _require_invitation_hash(row, bearer_hash)
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
        after_created, after_id = table_position(cursor)
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
            "select table_id, seat, player_name, token_hash, bot from lobby_seats"
            " where table_id = any(%s)",
            ([row[0] for row in listed],),
        )
        holders: dict[str, Holders] = {row[0]: {} for row in listed}
        for table_id, seat, name, hashed, bot in await seats.fetchall():
            holders[table_id][seat] = Holder(name, hashed, bot)
        items = [_table_info(row, holders[row[0]], secret_options) for row in listed]
        next_cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            next_cursor = table_cursor(last[-1], last[0])
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
        """Create the app's table, committed to its ``secret`` options, with its bots seated (a
        table of bots only starts at once); return it and, for a private one, its invitation."""
        bots = _bot_seats(body.game, body.seats, body.bots, body.hosting)
        await self._within_quota(conn, app_id)
        invitation = new_token() if body.visibility == "private" else None
        new = NewTable(
            game=body.game,
            name=body.name or f"{body.game} table",
            seats=body.seats,
            options=options,
            secret=secret,
            seed=body.seed if body.seed is not None else secrets.randbits(63),
            seeded=body.seed is not None,
            visibility=body.visibility,
            invitation_token_hash=None if invitation is None else hash_token(invitation),
            seats_per_invitation=body.seats_per_invitation,
            hosting=body.hosting,
        )
        table = await self._open(conn, new, bots, actor, app_id)
        return table, invitation

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
        _require_access(row, invitation, app_id)
        seat, invited_by = await self._free_seat(conn, row, taken, body.seat)
        token = new_token()
        taken[seat] = Holder(body.name, hash_token(token))
        actor = Actor(kind="player", seat=seat, name=body.name)
        version = await self._take_seat(conn, row, seat, taken[seat], invited_by, actor)
        return seat, token, _table_info(_at(row, version=version), taken, secret_options)

    async def seat_bot(
        self,
        conn: AsyncConnection,
        table_id: str,
        body: s.SeatBot,
        bearer: str | None,
        caller: apps.Caller,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Seat one of the game's bots as a join would seat a player, for the app's secret key
        or a player seated at the table; once bots hold every seat, the table starts (no player
        is there to start it)."""
        row, taken = await self._seated(conn, table_id, lock=True)
        if not _seated_here(row, taken, bearer, caller):
            _require_access(row, bearer, caller.app_id)
        _require_bot(row[1], body.bot)
        seat, invited_by = await self._free_seat(conn, row, taken, body.seat)
        taken[seat] = Holder(body.bot, hash_token(new_token()), body.bot)
        version = await self._take_seat(conn, row, seat, taken[seat], invited_by, SYSTEM)
        row = _at(row, version=version)
        if len(taken) == row[3] and all(holder.bot for holder in taken.values()):
            return await self._begin(conn, row, taken, SYSTEM, secret_options)
        return _table_info(row, taken, secret_options)

    async def unseat_bot(
        self,
        conn: AsyncConnection,
        table_id: str,
        seat: int,
        bearer: str | None,
        caller: apps.Caller,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Free a bot's seat at the app's open table, for its secret key or a player seated
        there; return the table."""
        row, holders = await self._seated(conn, table_id, lock=True)
        _seated_here(row, holders, bearer, caller)
        _require_seat_number(seat, row[3])
        _require_open(row)
        if seat not in holders or holders[seat].bot is None:
            raise Problem(409, "not-a-bot", "Not a bot's seat", f"no bot holds seat {seat}")
        bot = holders.pop(seat).player
        version = await self._free(conn, row, seat, bot, SYSTEM)
        return _table_info(_at(row, version=version), holders, secret_options)

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
        if seat not in holders or holders[seat].token_hash != hash_token(token):
            raise Problem(
                403, "not-your-seat", "Not your seat", f"the token does not hold seat {seat}"
            )
        _require_open(row)  # after the token: a private table tells strangers nothing
        player = holders.pop(seat).player
        actor = Actor(kind="player", seat=seat, name=player)
        version = await self._free(conn, row, seat, player, actor)
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
        seat = _seat_of(holders, hash_token(token))
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
        actor = Actor(kind="player", seat=seat, name=holders[seat].player)
        return await self._begin(conn, row, holders, actor, secret_options)

    async def close(
        self,
        conn: AsyncConnection,
        table_id: str,
        app_id: str | None,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Close the app's table before its match starts (a closed one answers as it is):
        its seats are emptied and it no longer counts against the app's quota."""
        row, holders = await self._seated(conn, table_id, lock=True)
        if row[12] != app_id:
            raise not_found("table", table_id)
        if row[7] != "closed":
            _require_open(row)
            row = await self._close(conn, table_id, "by_app", Actor(kind="app"))
            assert row is not None  # it is open, and locked since
            holders = {}
        return _table_info(row, holders, secret_options)

    async def close_idle(self, idle_s: float, limit: int = IDLE_BATCH) -> int:
        """Close up to ``limit`` open tables nobody joined, left or changed a seat of for
        ``idle_s``, each in a transaction of its own; return how many this call closed.

        Several lobbies may sweep at once: the condition is in each table's UPDATE, so one
        closes the table and the others (waiting on its row lock, then finding it closed, or
        changed by a join meanwhile) skip it."""
        async with self.runtime.pool.connection() as conn:
            result = await conn.execute(
                "select table_id from lobby_tables where status = 'open'"
                " and updated_at < now() - make_interval(secs => %s)"
                " order by updated_at limit %s",
                (idle_s, limit),
            )
            idle = [table_id for (table_id,) in await result.fetchall()]
        closed = 0
        for table_id in idle:
            async with self.runtime.pool.connection() as conn, conn.transaction():
                closed += await self._close(conn, table_id, "idle", SYSTEM, idle_s) is not None
        if closed:
            self.runtime.relay.wake()
        return closed

    async def rematch(
        self,
        conn: AsyncConnection,
        table_id: str,
        token: str,
        secret_options: dict[str, set[str]],
    ) -> tuple[int, str, s.TableInfo]:
        """Seat the token's player in the finished table's rematch, in their seat and under
        their name, offering the rematch first if no one has (its bots take their seats);
        return the seat, its new token and the rematch table.

        The finished table's row stays locked to the end, so players asking at once offer
        one rematch and take their seats in turn."""
        row, holders = await self._seated(conn, table_id, lock=True)
        token_hash = hash_token(token)
        status, reseated = (None, None)
        if row[8] is not None:
            status, reseated = await _match_standing(conn, row[8], token_hash)
        seat = _seat_of(holders, token_hash)
        if seat is None:
            seat = reseated
        if seat is None or seat not in holders:
            raise Problem(
                403, "not-seated", "Not seated", "only a player of the table may ask for a rematch"
            )
        if status != "finished":
            raise Problem(
                409,
                "match-running",
                "Match still running",
                "a rematch follows a finished match: this table's has not finished",
            )
        player = holders[seat].player
        actor = Actor(kind="player", seat=seat, name=player)
        rematch_id = row[17]
        if rematch_id is not None:
            new_row, taken = await self._seated(conn, rematch_id, lock=True)
        if rematch_id is None or new_row[7] == "closed":  # none yet, or it closed unplayed
            rematch_id = await self._offer_rematch(conn, row, holders, actor, secret_options)
            new_row, taken = await self._seated(conn, rematch_id, lock=True)
        _require_open(new_row)
        if seat in taken:
            raise Problem(409, "seat-taken", "Seat taken", f"seat {seat} is taken")
        seat_token = new_token()
        taken[seat] = Holder(player, hash_token(seat_token))
        version = await self._take_seat(conn, new_row, seat, taken[seat], None, actor)
        return seat, seat_token, _table_info(_at(new_row, version=version), taken, secret_options)

    async def _offer_rematch(
        self,
        conn: AsyncConnection,
        row: tuple[Any, ...],
        holders: Holders,
        actor: Actor,
        secret_options: dict[str, set[str]],
    ) -> str:
        """Open the finished table's rematch (its game, public options, seats, visibility,
        hosting and app) with its bots seated, and say so in the finished table's stream.

        Its secret options (a stacked deck, say) and seed never carry over: the finished match's
        full replay shows them to everyone, so its deal would be known before anyone plays."""
        await self._within_quota(conn, row[12])
        secret = secret_options.get(row[1], set())
        options = msgspec.json.decode(row[4])
        new = NewTable(
            game=row[1],
            name=row[2],
            seats=row[3],
            options={name: None if name in secret else value for name, value in options.items()},
            secret=secret,
            seed=secrets.randbits(63),
            seeded=False,
            visibility=row[10],
            invitation_token_hash=row[11],
            seats_per_invitation=row[14],
            hosting=_hosting(row),
            rematch_of=row[0],
        )
        bots = {seat: bot for seat, holder in holders.items() if (bot := holder.bot) is not None}
        rematch = await self._open(conn, new, bots, actor, row[12])
        await conn.execute(
            "update lobby_tables set rematch_table_id = %s, version = %s, updated_at = now()"
            " where table_id = %s",
            (rematch.table_id, row[9] + 1, row[0]),
        )
        offered = RematchOffered(rematch_table_id=rematch.table_id)
        await self._record(conn, row[0], row[9], [offered], actor, row[12])
        return rematch.table_id

    # --- steps of the commands -------------------------------------------------------------

    async def _open(
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
        # The row as it reads back (``_COLUMNS``) after the events recorded below.
        row = (
            table_id,
            new.game,
            new.name,
            new.seats,
            _json.encode(new.options),
            new.seed,
            new.seeded,
            "open",
            None,
            1 + len(seated),
            new.visibility,
            new.invitation_token_hash,
            app_id,
            _json.encode(committed),
            new.seats_per_invitation,
            _json.encode(new.hosting),
            new.rematch_of,
            None,
        )
        placeholders = ", ".join(["%s"] * len(row))
        await conn.execute(
            f"insert into lobby_tables ({_INSERT_COLUMNS}) values ({placeholders})", row
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
        await self._record(conn, table_id, 0, [created, *seated], actor, app_id)
        secret_options = {new.game: new.secret}
        if len(holders) == new.seats:
            return await self._begin(conn, row, holders, SYSTEM, secret_options)
        return _table_info(row, holders, secret_options)

    async def _free_seat(
        self,
        conn: AsyncConnection,
        row: tuple[Any, ...],
        taken: Holders,
        wanted: int | None,
    ) -> tuple[int, str | None]:
        """The seat a join (of a player or a bot) takes at the open table: ``wanted``, or the
        first free one; and the invitation it comes with (a private table's)."""
        _require_open(row)
        invited_by = row[11] if row[10] == "private" else None
        await self._require_invitation_seats(conn, row, invited_by)
        seats = row[3]
        if wanted is not None:
            _require_seat_number(wanted, seats)
            if wanted in taken:
                raise Problem(409, "seat-taken", "Seat taken", f"seat {wanted} is taken")
            return wanted, invited_by
        free = [number for number in range(seats) if number not in taken]
        if not free:
            raise Problem(409, "table-full", "Table full", "every seat is taken")
        return free[0], invited_by

    async def _take_seat(
        self,
        conn: AsyncConnection,
        row: tuple[Any, ...],
        seat: int,
        holder: Holder,
        invited_by: str | None,
        actor: Actor,
    ) -> int:
        """Seat ``holder`` (``SeatTaken``); return the table's version after."""
        version = row[9] + 1
        await conn.execute(
            "with seated as (insert into lobby_seats (table_id, seat, player_name, token_hash,"
            " invitation_token_hash, bot) values (%s, %s, %s, %s, %s, %s))"
            f" {_BUMP}",
            (row[0], seat, holder.player, holder.token_hash, invited_by, holder.bot)
            + (version, row[0]),
        )
        taken = SeatTaken(seat=seat, player=holder.player, bot=holder.bot)
        await self._record(conn, row[0], row[9], [taken], actor, row[12])
        return version

    async def _free(
        self, conn: AsyncConnection, row: tuple[Any, ...], seat: int, player: str, actor: Actor
    ) -> int:
        """Empty the seat (``SeatLeft``); return the table's version after."""
        version = row[9] + 1
        await conn.execute(
            f"with gone as (delete from lobby_seats where table_id = %s and seat = %s) {_BUMP}",
            (row[0], seat, version, row[0]),
        )
        await self._record(
            conn, row[0], row[9], [SeatLeft(seat=seat, player=player)], actor, row[12]
        )
        return version

    async def _close(
        self,
        conn: AsyncConnection,
        table_id: str,
        reason: CloseReason,
        actor: Actor,
        idle_s: float | None = None,
    ) -> tuple[Any, ...] | None:
        """Close the open table (with ``idle_s``: only if unchanged that long), emptying its
        seats (``TableClosed``); return its row after, or None if it is not (or no longer)
        such a table."""
        result = await conn.execute(
            "update lobby_tables set status = 'closed', version = version + 1,"
            " updated_at = now() where table_id = %s and status = 'open'"
            " and (%s::float8 is null or updated_at < now() - make_interval(secs => %s))"
            f" returning {_COLUMNS}",
            (table_id, idle_s, idle_s),
        )
        row = await result.fetchone()
        if row is None:
            return None
        await conn.execute("delete from lobby_seats where table_id = %s", (table_id,))
        closed = TableClosed(reason=reason)
        await self._record(conn, table_id, row[9] - 1, [closed], actor, row[12])
        return row

    async def _begin(
        self,
        conn: AsyncConnection,
        row: tuple[Any, ...],
        holders: Holders,
        actor: Actor,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Start the full table: ``TableStarted`` and the ``CreateMatch`` command (with the
        table's bots and hosting) commit together. Return the table, naming its match."""
        table_id = row[0]
        match_id = new_id()
        version = row[9] + 1
        await conn.execute(
            "update lobby_tables set status = 'started', match_id = %s, version = %s,"
            " updated_at = now() where table_id = %s",
            (match_id, version, table_id),
        )
        correlation = await self._record(
            conn, table_id, row[9], [TableStarted(match_id=match_id)], actor, row[12]
        )
        seats = range(row[3])
        create = CreateMatch(
            match_id=match_id,
            table_id=table_id,
            game=row[1],
            options=msgspec.json.decode(row[4]),
            seats=row[3],
            seat_token_hashes=[holders[number].token_hash for number in seats],
            players=[holders[number].player for number in seats],
            seed=row[5],
            private=row[10] == "private",
            invitation_token_hash=row[11],
            app_id=row[12],
            commitments=stored(row[13]),
            bots={number: bot for number in seats if (bot := holders[number].bot) is not None},
            hosting=_hosting(row),
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
    ) -> tuple[tuple[Any, ...], Holders]:
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
        return row, {seat: Holder(name, hashed, bot) for seat, name, hashed, bot in seats}

    async def _holders(self, conn: AsyncConnection, table_id: str) -> Holders:
        result = await conn.execute(
            "select seat, player_name, token_hash, bot from lobby_seats where table_id = %s",
            (table_id,),
        )
        return {seat: Holder(*held) for seat, *held in await result.fetchall()}


class IdleSweep(outbox.Pump):
    """Closes the open tables idle for ``idle_s`` (``Tables.close_idle``), looking every half
    of that time (at least once a minute); a Postgres outage is logged once and retried."""

    def __init__(self, tables: Tables, idle_s: float) -> None:
        super().__init__("idle table sweep", poll_interval_s=min(idle_s / 2, 60.0))
        self._tables = tables
        self._idle_s = idle_s

    async def run_pass(self) -> None:
        while await self._tables.close_idle(self._idle_s) == IDLE_BATCH:
            pass


async def _match_standing(
    conn: AsyncConnection, match_id: str, token_hash: str
) -> tuple[str | None, int | None]:
    """The table's match's status, and the seat ``token_hash`` holds in it now, or held until
    a bot took it over (a player who left or ran out of time).

    The match service's own rows, read here because a rematch needs both and nothing else in
    the lobby does: a player re-seated in the match (``PlayerReseated``) holds a token the
    lobby never saw, and the lobby's table does not learn when its match ends."""
    result = await conn.execute(
        "select m.status, (select seat from match_seats where match_id = m.match_id"
        " and (token_hash = %(token)s or former_token_hash = %(token)s) limit 1)"
        " from matches m where m.match_id = %(match)s",
        {"token": token_hash, "match": match_id},
    )
    found = await result.fetchone()
    return (None, None) if found is None else (found[0], found[1])


def _table_info(
    row: tuple[Any, ...],
    holders: Holders,
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
        seats=[_seat_info(number, holders.get(number)) for number in range(row[3])],
        version=row[9],
        visibility=row[10],
        secret_options_set=set_secretly,
        commitments=published(stored(row[13])),
        seats_per_invitation=row[14],
        hosting=_hosting(row),
        rematch_of=row[16],
        rematch_table_id=row[17],
    )


def _seat_info(seat: int, held: Holder | None) -> s.SeatInfo:
    if held is None:
        return s.SeatInfo(seat=seat, player=None, bot=None)
    return s.SeatInfo(seat=seat, player=held.player, bot=held.bot)


_INSERT_COLUMNS = (
    "table_id, game, name, seats, options, seed, seeded, status, match_id, version,"
    " visibility, invitation_token_hash, app_id, commitments, seats_per_invitation,"
    " hosting, rematch_of, rematch_table_id"
)
_COLUMNS = f"{_INSERT_COLUMNS}, created_at"
_COLUMN_INDEX = {name: index for index, name in enumerate(_COLUMNS.split(", "))}

_SEATED = f"""
select {_COLUMNS},
    (select version from lobby_tables where table_id = %(id)s) = version,
    coalesce((select json_agg(json_build_array(seat, player_name, token_hash, bot))
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


def _hosting(row: tuple[Any, ...]) -> Hosting:
    """The table's hosting (a table older than hosting has none)."""
    return NO_HOSTING if row[15] is None else _hosting_decoder.decode(row[15])


def _seat_of(holders: Holders, token_hash: str) -> int | None:
    return next((seat for seat, held in holders.items() if held.token_hash == token_hash), None)


def _bot_seats(game: str, seats: int, bots: list[s.BotSeat], hosting: Hosting) -> dict[int, str]:
    """Where a new table's bots sit (those without a seat: the first free ones, in order),
    once its bots and hosting are found to be the game's and to fit its seats."""
    problem = hosting.clock.problem() if hosting.clock is not None else None
    if problem is not None:
        raise Problem(422, "bad-hosting", "Invalid hosting", f"clock: {problem}")
    if hosting.bot is not None:
        _require_bot(game, hosting.bot)
    for bot in bots:
        _require_bot(game, bot.bot)
    if len(bots) > seats:
        raise Problem(422, "bad-bots", "Invalid bots", f"{len(bots)} bots do not fit {seats} seats")
    placed: dict[int, str] = {}
    for bot in bots:
        if bot.seat is None:
            continue
        _require_seat_number(bot.seat, seats)
        if bot.seat in placed:
            raise Problem(422, "bad-bots", "Invalid bots", f"two bots for seat {bot.seat}")
        placed[bot.seat] = bot.bot
    free = (seat for seat in range(seats) if seat not in placed)
    for bot in bots:
        if bot.seat is None:
            placed[next(free)] = bot.bot
    return placed


def _require_bot(game: str, name: str) -> None:
    if bot_named(game, name) is None:
        raise Problem(
            422,
            "unknown-bot",
            "Unknown bot",
            f"{game} has no bot {name!r}: its catalogue entry lists its bots",
        )


def _require_seat_number(seat: int, seats: int) -> None:
    if not 0 <= seat < seats:
        raise Problem(422, "no-such-seat", "No such seat", f"seats are 0 to {seats - 1}")


def _seated_here(
    row: tuple[Any, ...], holders: Holders, bearer: str | None, caller: apps.Caller
) -> bool:
    """Whether ``bearer`` holds a seat at the app's table; a publishable key (anyone's: a
    browser's) seats or removes bots only with one (a 403 otherwise), the secret key with or
    without. Another app's key sees no table."""
    if row[12] != caller.app_id:
        raise not_found("table", row[0])
    seated = bearer is not None and _seat_of(holders, hash_token(bearer)) is not None
    if not seated:
        caller.require_secret("seating or removing a bot without a seat's token at the table")
    return seated


def _require_access(row: tuple[Any, ...], invitation: str | None, app_id: str | None) -> None:
    """Only the table's app seats anyone at it (another's sees no table), and at a private
    table only with its invitation."""
    if row[12] != app_id:
        raise not_found("table", row[0])
    _require_invitation(row, invitation)


def _require_invitation(row: tuple[Any, ...], token: str | None) -> None:
    _require_invitation_hash(row, None if token is None else hash_token(token))


def _require_invitation_hash(row: tuple[Any, ...], bearer_hash: str | None) -> None:
    """A private table answers only its invitation; the refusal says nothing about the table."""
    if row[10] == "private" and (bearer_hash is None or bearer_hash != row[11]):
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
    if row[7] == "closed":
        raise Problem(
            409, "table-closed", "Table closed", "the table was closed before its match started"
        )
    if row[7] != "open":
        raise Problem(
            409, "table-started", "Table already started", "the table's match has started"
        )
