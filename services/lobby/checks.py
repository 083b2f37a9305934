"""The lobby's checks before it writes: who may see or change a table, which seats and bots a
table may have. Each raises the ``Problem`` the caller answers; none reads Postgres."""

from __future__ import annotations

from services.lobby import schemas as s
from services.lobby.rows import Holders, TableRow
from shared.domain.hosting import Hosting, bot_named, timeout_problem
from shared.edge import apps
from shared.edge.errors import Problem, not_found
from shared.edge.tokens import hash_token


def seat_of(holders: Holders, token_hash: str) -> int | None:
    return next((seat for seat, held in holders.items() if held.token_hash == token_hash), None)


def bot_seats(game: str, seats: int, bots: list[s.BotSeat], hosting: Hosting) -> dict[int, str]:
    """Where a new table's bots sit (those without a seat: the first free ones, in order),
    once its bots and hosting are found to be the game's and to fit its seats."""
    problem = hosting.clock.problem() if hosting.clock is not None else None
    problem = problem and f"clock: {problem}"
    problem = problem or timeout_problem(game, hosting)
    if problem is not None:
        raise Problem(422, "bad-hosting", "Invalid hosting", problem)
    if hosting.bot is not None:
        require_bot(game, hosting.bot)
    for bot in bots:
        require_bot(game, bot.bot)
    if len(bots) > seats:
        raise Problem(422, "bad-bots", "Invalid bots", f"{len(bots)} bots do not fit {seats} seats")
    placed: dict[int, str] = {}
    for bot in bots:
        if bot.seat is None:
            continue
        require_seat_number(bot.seat, seats)
        if bot.seat in placed:
            raise Problem(422, "bad-bots", "Invalid bots", f"two bots for seat {bot.seat}")
        placed[bot.seat] = bot.bot
    free = (seat for seat in range(seats) if seat not in placed)
    for bot in bots:
        if bot.seat is None:
            placed[next(free)] = bot.bot
    return placed


def require_bot(game: str, name: str) -> None:
    if bot_named(game, name) is None:
        raise Problem(
            422,
            "unknown-bot",
            "Unknown bot",
            f"{game} has no bot {name!r}: its catalogue entry lists its bots",
        )


def require_seat_number(seat: int, seats: int) -> None:
    if not 0 <= seat < seats:
        raise Problem(422, "no-such-seat", "No such seat", f"seats are 0 to {seats - 1}")


def seated_here(row: TableRow, holders: Holders, bearer: str | None, caller: apps.Caller) -> bool:
    """Whether ``bearer`` holds a seat at the app's table; a publishable key (anyone's: a
    browser's) seats or removes bots only with one (a 403 otherwise), the secret key with or
    without. Another app's key sees no table."""
    if row.app_id != caller.app_id:
        raise not_found("table", row.table_id)
    seated = bearer is not None and seat_of(holders, hash_token(bearer)) is not None
    if not seated:
        caller.require_secret("seating or removing a bot without a seat's token at the table")
    return seated


def require_access(row: TableRow, invitation: str | None, app_id: str | None) -> None:
    """Only the table's app seats anyone at it (another's sees no table), and at a private
    table only with its invitation."""
    if row.app_id != app_id:
        raise not_found("table", row.table_id)
    require_invitation(row, invitation)


def require_invitation(row: TableRow, token: str | None) -> None:
    require_invitation_hash(row, None if token is None else hash_token(token))


def require_invitation_hash(row: TableRow, bearer_hash: str | None) -> None:
    """A private table answers only its invitation; the refusal says nothing about the table."""
    if row.visibility == "private" and (
        bearer_hash is None or bearer_hash != row.invitation_token_hash
    ):
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


def require_open(row: TableRow) -> None:
    if row.status == "closed":
        raise Problem(
            409, "table-closed", "Table closed", "the table was closed before its match started"
        )
    if row.status != "open":
        raise Problem(
            409, "table-started", "Table already started", "the table's match has started"
        )
