"""Tables: each is an event stream ``table-<id>`` plus a read model row, written together
(``steps.py``). ``Tables`` answers the lobby's reads and runs its commands; closing and
rematches are in ``closing.py`` and ``rematch.py``."""

from __future__ import annotations

import secrets
from typing import Any

from psycopg import AsyncConnection

from services.lobby import closing, rematch
from services.lobby import schemas as s
from services.lobby.checks import (
    bot_seats,
    not_private,
    require_access,
    require_bot,
    require_invitation_hash,
    require_open,
    require_seat_number,
    seat_of,
    seated_here,
)
from services.lobby.rows import (
    TABLE_COLUMNS,
    TABLE_ROW,
    Holder,
    Holders,
    read_row,
    read_seated,
    table_info,
)
from services.lobby.steps import NewTable, TableSteps
from shared.domain.messages import SYSTEM, Actor
from shared.edge import apps
from shared.edge.errors import Problem, not_found
from shared.edge.paging import table_cursor, table_position
from shared.edge.runtime import Runtime
from shared.edge.tokens import hash_token, new_token


class Tables:
    """The lobby's domain: create, join, leave and start tables, seat bots, offer rematches,
    close tables; answers read queries."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.steps = TableSteps(runtime)

    # --- reads -------------------------------------------------------------------------------

    async def get(
        self, conn: AsyncConnection, table_id: str, secret_options: dict[str, set[str]]
    ) -> s.TableInfo:
        row, holders = await read_seated(conn, table_id, lock=False)
        return table_info(row, holders, secret_options)

    async def app_of(self, table_id: str) -> str | None:
        """The app whose table it is (it never changes); a 404 for no table."""
        async with self.runtime.pool.connection() as conn:
            cursor = await conn.execute(
                "select app_id from lobby_tables where table_id = %s", (table_id,)
            )
            found = await cursor.fetchone()
        if found is None:
            raise not_found("table", table_id)
        (app_id,) = found
        return app_id

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
        row, holders = await read_seated(conn, table_id, lock=False)
        token_hash = hash_token(token)
        if seat_of(holders, token_hash) is None:
            require_invitation_hash(row, token_hash)  # a private table's: its invitation
            if row.visibility == "public":
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
        row, holders = await read_seated(conn, table_id, lock=False)
        if bearer_hash is None or seat_of(holders, bearer_hash) is None:
            require_invitation_hash(row, bearer_hash)
        return table_info(row, holders, secret_options)

    async def page(
        self,
        conn: AsyncConnection,
        *,
        app_id: str | None,
        status: str | None,
        match_status: str | None,
        game: str | None,
        cursor: str | None,
        limit: int,
        secret_options: dict[str, set[str]],
    ) -> s.TablePage:
        after_created, after_id = table_position(cursor)
        tables = conn.cursor(row_factory=TABLE_ROW)
        await tables.execute(
            f"select {TABLE_COLUMNS} from lobby_tables"
            " where (created_at, table_id) > (%s::timestamptz, %s)"
            " and visibility = 'public' and app_id is not distinct from %s"
            " and (%s::text is null or status = %s) and (%s::text is null or game = %s)"
            " and (%s::text is null or exists (select from match_statuses m"
            " where m.match_id = lobby_tables.match_id and m.status = %s))"
            " order by created_at, table_id limit %s",
            (after_created, after_id, app_id, status, status, game, game)
            + (match_status, match_status, limit + 1),
        )
        rows = await tables.fetchall()
        listed = rows[:limit]
        seats = await conn.execute(
            "select table_id, seat, player_name, token_hash, bot from lobby_seats"
            " where table_id = any(%s)",
            ([row.table_id for row in listed],),
        )
        holders: dict[str, Holders] = {row.table_id: {} for row in listed}
        for table_id, seat, name, hashed, bot in await seats.fetchall():
            holders[table_id][seat] = Holder(name, hashed, bot)
        items = [table_info(row, holders[row.table_id], secret_options) for row in listed]
        next_cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            assert last.created_at is not None  # read back: Postgres set it
            next_cursor = table_cursor(last.created_at, last.table_id)
        return s.TablePage(items=items, next_cursor=next_cursor)

    # --- commands ----------------------------------------------------------------------------

    async def create(
        self,
        conn: AsyncConnection,
        body: s.CreateTable,
        title: str,
        options: dict[str, Any],
        secret: set[str],
        actor: Actor,
        app_id: str | None,
    ) -> tuple[s.TableInfo, str | None]:
        """Create the app's table, committed to its ``secret`` options, with its bots seated (a
        table of bots only starts at once), named after its game's ``title`` if its body names
        it not; return it and, for a private one, its invitation."""
        bots = bot_seats(body.game, body.seats, body.bots, body.hosting)
        await self.steps.within_quota(conn, app_id)
        invitation = new_token() if body.visibility == "private" else None
        new = NewTable(
            game=body.game,
            name=body.name or f"{title} table",
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
        table = await self.steps.open(conn, new, bots, actor, app_id)
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
        row, taken = await read_seated(conn, table_id, lock=True)
        require_access(row, invitation, app_id)
        seat, invited_by = await self.steps.free_seat(conn, row, taken, body.seat)
        token = new_token()
        taken[seat] = Holder(body.name, hash_token(token))
        actor = Actor(kind="player", seat=seat, name=body.name)
        version = await self.steps.take_seat(conn, row, seat, taken[seat], invited_by, actor)
        return seat, token, table_info(row.changed(version=version), taken, secret_options)

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
        row, taken = await read_seated(conn, table_id, lock=True)
        if not seated_here(row, taken, bearer, caller):
            require_access(row, bearer, caller.app_id)
        require_bot(row.game, body.bot)
        seat, invited_by = await self.steps.free_seat(conn, row, taken, body.seat)
        taken[seat] = Holder(body.bot, hash_token(new_token()), body.bot)
        version = await self.steps.take_seat(conn, row, seat, taken[seat], invited_by, SYSTEM)
        row = row.changed(version=version)
        if len(taken) == row.seats and all(holder.bot for holder in taken.values()):
            return await self.steps.begin(conn, row, taken, SYSTEM, secret_options)
        return table_info(row, taken, secret_options)

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
        row, holders = await read_seated(conn, table_id, lock=True)
        seated_here(row, holders, bearer, caller)
        require_seat_number(seat, row.seats)
        require_open(row)
        if seat not in holders or holders[seat].bot is None:
            raise Problem(409, "not-a-bot", "Not a bot's seat", f"no bot holds seat {seat}")
        bot = holders.pop(seat).player
        version = await self.steps.free(conn, row, seat, bot, SYSTEM)
        return table_info(row.changed(version=version), holders, secret_options)

    async def leave(
        self,
        conn: AsyncConnection,
        table_id: str,
        seat: int,
        token: str,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Free the token's seat while the table is open; return the table."""
        row, holders = await read_seated(conn, table_id, lock=True)
        if seat not in holders or holders[seat].token_hash != hash_token(token):
            raise Problem(
                403, "not-your-seat", "Not your seat", f"the token does not hold seat {seat}"
            )
        require_open(row)  # after the token: a private table tells strangers nothing
        player = holders.pop(seat).player
        actor = Actor(kind="player", seat=seat, name=player)
        version = await self.steps.free(conn, row, seat, player, actor)
        return table_info(row.changed(version=version), holders, secret_options)

    async def start(
        self,
        conn: AsyncConnection,
        table_id: str,
        token: str,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """Start the full table's match (for a seated player's token): return the table, which
        names its match; the ``CreateMatch`` command about it commits with it."""
        row, holders = await read_seated(conn, table_id, lock=True)
        seat = seat_of(holders, hash_token(token))
        if seat is None:
            raise Problem(
                403, "not-seated", "Not seated", "only a seated player may start the table"
            )
        require_open(row)
        if len(holders) < row.seats:
            raise Problem(
                409,
                "table-not-full",
                "Table not full",
                f"{len(holders)} of {row.seats} seats are taken",
            )
        actor = Actor(kind="player", seat=seat, name=holders[seat].player)
        return await self.steps.begin(conn, row, holders, actor, secret_options)

    async def close(
        self,
        conn: AsyncConnection,
        table_id: str,
        bearer: str | None,
        caller: apps.Caller,
        secret_options: dict[str, set[str]],
    ) -> s.TableInfo:
        """``closing.close``: the app, or its one seated player, closes its table before its
        match starts."""
        return await closing.close(self.steps, conn, table_id, bearer, caller, secret_options)

    async def rematch(
        self,
        conn: AsyncConnection,
        table_id: str,
        token: str,
        secret_options: dict[str, set[str]],
    ) -> tuple[int, str, s.TableInfo]:
        """``rematch.rematch``: the token's player takes their seat in the finished table's
        rematch."""
        return await rematch.rematch(self.steps, conn, table_id, token, secret_options)

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
        row = await read_row(conn, table_id, lock=True)
        if row.app_id != app_id:
            raise not_found("table", table_id)
        if row.visibility != "private":
            raise not_private()
        require_open(row)
        await conn.execute(
            "update lobby_tables set invitation_token_hash = %s, updated_at = now()"
            " where table_id = %s",
            (hashed, table_id),
        )
