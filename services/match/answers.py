"""What a match's state-changing requests answer: their answer, the one recorded under a
repeated Idempotency-Key, and their refusals."""

from __future__ import annotations

from typing import NamedTuple

from services.match.snapshot import match_etag
from services.match.store import MatchStore
from shared.edge.errors import Problem
from shared.edge.idempotency import Idempotent, recall


class Answer(NamedTuple):
    """A state-changing request's answer (its status and encoded body), and whether it repeats
    the one recorded under the same Idempotency-Key."""

    status: int
    body: bytes
    replayed: bool = False


class Retry:
    """What a request under an Idempotency-Key answered the first time, if it was seen before."""

    def __init__(self, matches: MatchStore, request: Idempotent | None) -> None:
        self.matches = matches
        self.request = request

    async def answer_or(self, problem: Problem) -> Answer:
        if self.request is not None:
            async with self.matches.runtime.pool.connection() as conn:
                recorded = await recall(conn, self.matches.runtime.keyring, self.request)
            if recorded is not None:
                return Answer(recorded.status, recorded.body, replayed=True)
        raise problem


def not_former_holder(seat: int) -> Problem:
    return Problem(
        403,
        "not-your-seat",
        "Not your seat",
        f"only the app's secret key re-seats seat {seat}, or its former holder with the token"
        " it had, once a bot holds the seat",
    )


def match_busy() -> Problem:
    return Problem(
        409,
        "match-busy",
        "Match busy",
        "moves kept coming in while this was being recorded: try again",
        headers={"Retry-After": "1"},
    )


def match_finished() -> Problem:
    """A new problem each time: an exception raised carries its traceback with it, so no
    instance is shared between requests."""
    return Problem(409, "match-finished", "Match finished", "the match has ended")


def out_of_time_problem() -> Problem:
    return Problem(
        409,
        "out-of-time",
        "Out of time",
        "your clock ran out before this move arrived: the table's timeout policy applies",
    )


def wrong_game(game: str) -> Problem:
    return Problem(
        422,
        "wrong-game",
        "Not this match's game",
        f'the match plays {game}: send "game": "{game}" with one of its actions',
    )


def stale_version(current: int, expected: int, seat: int) -> Problem:
    """The mover's read of the match carries the ETag it names (``getMatch``)."""
    return Problem(
        409,
        "stale-version",
        "Stale version",
        f"the match is at version {current}, not {expected}: reload and choose again",
        headers={"ETag": match_etag(current, seat)},
    )
