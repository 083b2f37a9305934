"""The lobby's read model as named rows: a ``lobby_tables`` row (``TableRow``), a seat's holder
(``Holder``), how they are read, and the table as the API shows it (``table_info``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

import msgspec
from psycopg import AsyncConnection
from psycopg.rows import class_row, kwargs_row

from services.lobby import schemas as s
from shared.domain.commitments import published, stored
from shared.domain.hosting import NO_HOSTING, Hosting, as_played
from shared.domain.messages import TableCreated, Visibility
from shared.edge.errors import not_found
from shared.infra.eventstore import NewEvent, StoredEvent

_json = msgspec.json.Encoder()
_hosting_decoder = msgspec.json.Decoder(Hosting)


def table_stream(table_id: str) -> str:
    return f"table-{table_id}"


class TableRow(msgspec.Struct, frozen=True):
    """A ``lobby_tables`` row, by its columns' names (``TABLE_COLUMNS``)."""

    table_id: str
    game: str
    name: str
    seats: int
    options: bytes
    """The resolved options (JSON), secret ones included."""
    seed: int
    seeded: bool
    status: s.TableStatus
    match_id: str | None
    version: int
    visibility: Visibility
    invitation_token_hash: str | None
    app_id: str | None
    commitments: bytes
    seats_per_invitation: int | None
    hosting: bytes | None
    """The hosting policy (JSON); None for a table older than hosting."""
    rematch_of: str | None
    rematch_table_id: str | None
    created_at: datetime | None = None
    """Set by Postgres: None in a row built before it is written."""

    def changed(self, **changes: Any) -> TableRow:
        """The row as it reads after the change written: no read back needed."""
        return msgspec.structs.replace(self, **changes)

    def hosted(self) -> Hosting:
        """The table's hosting (a table older than hosting has none), named for what it does
        in its game (``as_played``)."""
        if self.hosting is None:
            return NO_HOSTING
        return as_played(self.game, _hosting_decoder.decode(self.hosting))


class Holder(NamedTuple):
    """Who holds a seat: a player's name and token hash, or a bot (its name is the player's;
    its token, made at random, is nobody's)."""

    player: str
    token_hash: str
    bot: str | None = None


Holders = dict[int, Holder]

INSERT_FIELDS = tuple(name for name in TableRow.__struct_fields__ if name != "created_at")
"""The columns a new table's row is written with (``created_at`` is Postgres')."""
INSERT_COLUMNS = ", ".join(INSERT_FIELDS)
TABLE_COLUMNS = f"{INSERT_COLUMNS}, created_at"
TABLE_ROW = class_row(TableRow)

_SEATED = f"""
select {TABLE_COLUMNS},
    (select version from lobby_tables where table_id = %(id)s) = version as fresh,
    coalesce((select json_agg(json_build_array(seat, player_name, token_hash, bot))
              from lobby_seats where table_id = %(id)s), '[]') as holders
from lobby_tables where table_id = %(id)s"""


class _Seated(NamedTuple):
    row: TableRow
    fresh: bool
    """Whether the seats were read in the locked row's snapshot (see ``read_seated``)."""
    holders: list[tuple[int, str, str, str | None]]


def _seated(*, fresh: bool, holders: list[Any], **columns: Any) -> _Seated:
    return _Seated(TableRow(**columns), fresh, holders)


def _holder(seat: int, player_name: str, token_hash: str, bot: str | None) -> tuple[int, Holder]:
    return seat, Holder(player_name, token_hash, bot)


async def read_row(conn: AsyncConnection, table_id: str, *, lock: bool) -> TableRow:
    query = f"select {TABLE_COLUMNS} from lobby_tables where table_id = %s"
    cursor = conn.cursor(row_factory=TABLE_ROW)
    await cursor.execute(query + (" for update" if lock else ""), (table_id,))
    row = await cursor.fetchone()
    if row is None:
        raise not_found("table", table_id)
    return row


async def read_seated(
    conn: AsyncConnection, table_id: str, *, lock: bool
) -> tuple[TableRow, Holders]:
    """The table's row and its seats' holders in one round trip; ``lock``: the row locked
    for this transaction's change.

    Under the lock the seats are as fresh as the row: the seats subquery reads the
    statement's snapshot, which predates a lock it waited for, but seats only change with
    a version bump under that lock, so a snapshot whose version is the locked row's has
    its seats (else, rarely, they are read again)."""
    cursor = conn.cursor(row_factory=kwargs_row(_seated))
    await cursor.execute(_SEATED + (" for update" if lock else ""), {"id": table_id})
    found = await cursor.fetchone()
    if found is None:
        raise not_found("table", table_id)
    if not found.fresh:
        return found.row, await read_holders(conn, table_id)
    return found.row, dict(_holder(*held) for held in found.holders)


async def read_holders(conn: AsyncConnection, table_id: str) -> Holders:
    cursor = conn.cursor(row_factory=kwargs_row(_holder))
    await cursor.execute(
        "select seat, player_name, token_hash, bot from lobby_seats where table_id = %s",
        (table_id,),
    )
    return dict(await cursor.fetchall())


def table_info(row: TableRow, holders: Holders, secret_options: dict[str, set[str]]) -> s.TableInfo:
    """The table as anyone may see it: secret options (a deck order, say) show as null, and
    which of them are set."""
    options = msgspec.json.decode(row.options)
    hidden = secret_options.get(row.game, set())
    set_secretly = sorted(name for name in hidden if options.get(name) is not None)
    shown = {name: (None if name in hidden else value) for name, value in options.items()}
    return s.TableInfo(
        table_id=row.table_id,
        game=row.game,
        name=row.name,
        options=shown,
        seeded=row.seeded,
        status=row.status,
        match_id=row.match_id,
        seats=[_seat_info(number, holders.get(number)) for number in range(row.seats)],
        version=row.version,
        visibility=row.visibility,
        secret_options_set=set_secretly,
        commitments=published(stored(row.commitments)),
        seats_per_invitation=row.seats_per_invitation,
        hosting=row.hosted(),
        rematch_of=row.rematch_of,
        rematch_table_id=row.rematch_table_id,
    )


def _seat_info(seat: int, held: Holder | None) -> s.SeatInfo:
    if held is None:
        return s.SeatInfo(seat=seat, player=None, bot=None)
    return s.SeatInfo(seat=seat, player=held.player, bot=held.bot)


def public_event(event: NewEvent | StoredEvent) -> bytes:
    """Lobby events carry no secrets except a created table's secret options: drop them all."""
    if event.type != "TableCreated":
        return event.data
    created = msgspec.json.decode(event.data, type=TableCreated)
    return _json.encode(msgspec.structs.replace(created, options={}))
