"""Rematches: the players of a finished table take their seats again at a new one, which the
first of them to ask opens (``rematch``)."""

from __future__ import annotations

import secrets
from typing import NamedTuple

import msgspec
from psycopg import AsyncConnection
from psycopg.rows import class_row

from services.lobby import schemas as s
from services.lobby.checks import require_open, seat_of
from services.lobby.rows import Holder, Holders, TableRow, read_seated, table_info
from services.lobby.steps import NewTable, TableSteps
from shared.domain.messages import Actor, RematchOffered
from shared.edge.errors import Problem
from shared.edge.tokens import hash_token, new_token


async def rematch(
    steps: TableSteps,
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
    row, holders = await read_seated(conn, table_id, lock=True)
    token_hash = hash_token(token)
    standing = MatchStanding(None, None)
    if row.match_id is not None:
        standing = await match_standing(conn, row.match_id, token_hash)
    seat = seat_of(holders, token_hash)
    if seat is None:
        seat = standing.seat
    if seat is None or seat not in holders:
        raise Problem(
            403, "not-seated", "Not seated", "only a player of the table may ask for a rematch"
        )
    if standing.status != "finished":
        raise Problem(
            409,
            "match-running",
            "Match still running",
            "a rematch follows a finished match: this table's has not finished",
        )
    player = holders[seat].player
    actor = Actor(kind="player", seat=seat, name=player)
    rematch_id = row.rematch_table_id
    if rematch_id is not None:
        new_row, taken = await read_seated(conn, rematch_id, lock=True)
    if rematch_id is None or new_row.status == "closed":  # none yet, or it closed unplayed
        rematch_id = await _offer(steps, conn, row, holders, actor, secret_options)
        new_row, taken = await read_seated(conn, rematch_id, lock=True)
    require_open(new_row)
    if seat in taken:
        raise Problem(409, "seat-taken", "Seat taken", f"seat {seat} is taken")
    seat_token = new_token()
    taken[seat] = Holder(player, hash_token(seat_token))
    version = await steps.take_seat(conn, new_row, seat, taken[seat], None, actor)
    return seat, seat_token, table_info(new_row.changed(version=version), taken, secret_options)


async def _offer(
    steps: TableSteps,
    conn: AsyncConnection,
    row: TableRow,
    holders: Holders,
    actor: Actor,
    secret_options: dict[str, set[str]],
) -> str:
    """Open the finished table's rematch (its game, public options, seats, visibility,
    hosting and app) with its bots seated, and say so in the finished table's stream.

    Its secret options (a stacked deck, say) and seed never carry over: the finished match's
    full replay shows them to everyone, so its deal would be known before anyone plays."""
    await steps.within_quota(conn, row.app_id)
    secret = secret_options.get(row.game, set())
    options = msgspec.json.decode(row.options)
    new = NewTable(
        game=row.game,
        name=row.name,
        seats=row.seats,
        options={name: None if name in secret else value for name, value in options.items()},
        secret=secret,
        seed=secrets.randbits(63),
        seeded=False,
        visibility=row.visibility,
        invitation_token_hash=row.invitation_token_hash,
        seats_per_invitation=row.seats_per_invitation,
        hosting=row.hosted(),
        rematch_of=row.table_id,
    )
    bots = {seat: bot for seat, holder in holders.items() if (bot := holder.bot) is not None}
    offered = await steps.open(conn, new, bots, actor, row.app_id)
    await conn.execute(
        "update lobby_tables set rematch_table_id = %s, version = %s, updated_at = now()"
        " where table_id = %s",
        (offered.table_id, row.version + 1, row.table_id),
    )
    said = RematchOffered(rematch_table_id=offered.table_id)
    await steps.record(conn, row.table_id, row.version, [said], actor, row.app_id)
    return offered.table_id


class MatchStanding(NamedTuple):
    """The table's match's status, and the seat a token holds in it now, or held until a bot
    took it over (a player who left or ran out of time)."""

    status: str | None
    seat: int | None


async def match_standing(conn: AsyncConnection, match_id: str, token_hash: str) -> MatchStanding:
    """The match's standing for ``token_hash`` (both None for no such match).

    Read from the match service's published read models ``match_statuses`` and
    ``match_seat_holders`` (docs/architecture.md), because a rematch needs both and nothing
    else in the lobby does: a player re-seated in the match (``PlayerReseated``) holds a token
    the lobby never saw, and the lobby's table does not learn when its match ends."""
    cursor = conn.cursor(row_factory=class_row(MatchStanding))
    await cursor.execute(
        "select m.status, (select seat from match_seat_holders where match_id = m.match_id"
        " and (token_hash = %(token)s or former_token_hash = %(token)s) limit 1) as seat"
        " from match_statuses m where m.match_id = %(match)s",
        {"token": token_hash, "match": match_id},
    )
    return await cursor.fetchone() or MatchStanding(None, None)
