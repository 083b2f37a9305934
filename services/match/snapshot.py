"""A match as the service holds it between moves (its row's cache), and as a caller sees it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from services.match import schemas as s
from shared.domain.hosting import NO_HOSTING, Clocks, ClockView, Hosting, clock_view
from shared.domain.messages import CreateMatch, now_ms
from shared.edge.errors import Problem
from shared.edge.tokens import hash_token


def match_stream(match_id: str) -> str:
    return f"match-{match_id}"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the service keeps of a match between moves (a cache of its row).

    Frozen: a move decides on one snapshot and commits against exactly its version, so no
    concurrent request may change the copy a decision is being made on; newer copies replace
    it in the cache instead.
    """

    match_id: str
    table_id: str | None
    game: str
    players: list[str]
    seat_by_token_hash: dict[str, int]
    version: int
    state: bytes
    to_move: list[int]
    status: str
    result: dict[str, Any] | None
    private: bool = False
    invitation_token_hash: str | None = None
    app_id: str | None = None
    """The client app whose match this is (named in its events' metadata, for webhooks)."""
    legal_actions: dict[int, list[msgspec.Raw]] | None = None
    """At this version, each seat to move's legal actions, when this process decided the move
    that led here (the rules gave them with the decision); None: ask the rules."""
    views: dict[int | None, msgspec.Raw] = field(default_factory=dict)
    """At this version, the views this process has shown or been given (by seat, None for a
    spectator): a view at a version never changes, so reading it again costs no rules call."""
    hosting: Hosting = NO_HOSTING
    bots: dict[int, str] = field(default_factory=dict)
    clocks: Clocks | None = None
    seating: int = 0
    """Counts the changes of who holds a seat: the seat tokens are re-read when it moved."""

    def clock(self, now: int) -> ClockView | None:
        control = self.hosting.clock
        if control is None or self.clocks is None:
            return None
        return clock_view(control, self.clocks, now)

    def seat_of(self, token: str | None) -> int | None:
        """Who the bearer is here: a seat, or None for a spectator; anyone else gets a 403.

        Every read goes through this, so a private match is watched only with its invitation.
        """
        return self.seat_of_hash(None if token is None else hash_token(token))

    def seat_of_hash(self, hashed: str | None) -> int | None:
        """``seat_of`` for the hash of the bearer's token (a feed ticket's: it holds no token)."""
        if hashed is not None and hashed in self.seat_by_token_hash:
            return self.seat_by_token_hash[hashed]
        if self.private:
            if hashed is None or hashed != self.invitation_token_hash:
                raise Problem(
                    403,
                    "private-match",
                    "Private match",
                    "this match is private: watch it with an invitation token",
                )
            return None
        if hashed is not None:
            raise Problem(403, "unknown-token", "Unknown token", "the token holds no seat here")
        return None

    def player_of(self, token: str) -> int:
        """The bearer's seat, for what only a player may do (a spectator's token gets a 403)."""
        seat = self.seat_of(token)
        if seat is None:
            raise Problem(403, "not-seated", "Not seated", "only a seated player may do this")
        return seat


class MatchCreating(Problem):
    """A match whose table has started but which does not exist yet: its reads answer this
    409 (retry shortly), except ``GET /matches/{id}``, which shows the ``creating`` state."""

    def __init__(self, command: CreateMatch) -> None:
        super().__init__(
            409,
            "match-creating",
            "Match being created",
            "the match is being set up: retry in a moment",
            headers={"Retry-After": "1"},
        )
        self.command = command

    def info(self, token: str | None) -> s.MatchInfo:
        """The match as the caller may see it before its set-up: who plays, no view yet."""
        command = self.command
        seats = {hashed: seat for seat, hashed in enumerate(command.seat_token_hashes)}
        pending = Snapshot(
            match_id=command.match_id,
            table_id=command.table_id,
            game=command.game,
            players=command.players,
            seat_by_token_hash=seats,
            version=0,
            state=b"",
            to_move=[],
            status="creating",
            result=None,
            private=command.private,
            invitation_token_hash=command.invitation_token_hash,
        )
        return match_info(pending, pending.seat_of(token), None)


def match_etag(version: int, seat: int | None) -> str:
    """The ETag of the match read by a seat (None: a spectator): one per version and viewer,
    so a copy cached for one seat is never current for another caller."""
    return f'"{version}-{"spectator" if seat is None else f"seat{seat}"}"'


def match_info(
    snapshot: Snapshot, seat: int | None, view: msgspec.Raw | None, now: int | None = None
) -> s.MatchInfo:
    return s.MatchInfo(
        bots=snapshot.bots,
        hosting=snapshot.hosting,
        clock=snapshot.clock(now_ms() if now is None else now),
        match_id=snapshot.match_id,
        table_id=snapshot.table_id,
        game=snapshot.game,
        players=snapshot.players,
        version=snapshot.version,
        status=snapshot.status,
        to_move=snapshot.to_move,
        you=seat,
        view=view,
        result=snapshot.result,
    )
