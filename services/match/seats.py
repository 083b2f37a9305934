"""Changes of who holds a seat: timeouts, leaving, re-seating, each recorded only at the version
it was decided on."""

from __future__ import annotations

import hmac
from dataclasses import replace
from typing import Any

import msgspec

from services.match import schemas as s
from services.match.answers import Answer, Retry, match_busy, match_finished, not_former_holder
from services.match.snapshot import Snapshot, match_info, match_stream
from services.match.store import MatchStore, move_metadata
from services.match.timing import clock_event, encoded_event
from shared.domain import hosting
from shared.domain import rules_api as api
from shared.domain.hosting import (
    PASS_ACTIONS,
    BotTookOver,
    Clocks,
    MatchForfeited,
    PlayerLeft,
    PlayerReseated,
    TurnTimedOut,
    run_clocks,
    seat_deadlines,
)
from shared.domain.messages import TimeOut, new_id, now_ms
from shared.edge import apps
from shared.edge.errors import Problem
from shared.edge.idempotency import Idempotent, idempotent
from shared.edge.tokens import hash_token, new_token
from shared.infra import commands
from shared.infra.eventstore import Append, Record, append_all
from shared.infra.eventstore import Snapshot as StoredSnapshot
from shared.infra.logs import correlation_id

_json = msgspec.json.Encoder()


class SeatChanges(MatchStore):
    """Applies timeouts, lets players leave, and re-seats them."""

    async def time_out(self, command: TimeOut, command_id: str) -> None:
        """Apply the table's timeout policy to the seats whose clocks ran out at the version the
        clocks service saw, unless a move came first (the version moved on: then nothing). A
        clock that has not run out yet by this server's time leaves the command pending, to be
        re-driven."""
        try:
            snapshot = await self.load(command.match_id, fresh=True)
        except Problem:
            snapshot = None
        now = now_ms()
        control = None if snapshot is None else snapshot.hosting.clock
        if (
            snapshot is None
            or control is None
            or snapshot.clocks is None
            or snapshot.version != command.version
            or snapshot.status != "running"
        ):
            async with self.runtime.pool.connection() as conn:
                await commands.complete(conn, command_id, "moved on")
            return
        deadlines = seat_deadlines(control, snapshot.clocks)
        expired = sorted(seat for seat, deadline in deadlines.items() if deadline <= now)
        if not expired:
            raise Problem(409, "not-out-of-time", "Not out of time", "no clock has run out yet")
        policy = snapshot.hosting.on_timeout
        passed = None
        if policy == "pass":
            expired = expired[:1]  # one pass at a time: the others' turns come next
            passed = await self._pass(snapshot, expired[0])
            if passed is None:
                policy = "forfeit"  # the rules allow no pass here
        change = _SeatChange(snapshot, now)
        for seat in expired:
            change.add(TurnTimedOut(seat=seat, policy=policy, deadline_ms=deadlines[seat]))
        if passed is not None:
            change.played(expired[0], passed)
        elif policy == "bot":
            for seat in expired:
                await self._hand_to_bot(change, seat, "timeout")
        else:
            await self._forfeit(change, expired, "timeout")
        await self._record(change, command_id=command_id)

    async def _hand_to_bot(self, change: _SeatChange, seat: int, reason: str) -> None:
        snapshot = change.snapshot
        bot = snapshot.hosting.takeover_bot(snapshot.game)
        change.add(BotTookOver(seat=seat, bot=bot, reason=reason))  # type: ignore[arg-type]
        change.bots[seat] = bot
        change.tokens[seat] = await self.bot_token_hash(snapshot.match_id, seat)
        if seat not in snapshot.bots:  # a person held it: they may take it back
            held = snapshot.seat_by_token_hash.items()
            change.former.update((at, hashed) for hashed, at in held if at == seat)

    async def _pass(self, snapshot: Snapshot, seat: int) -> api.Decided | None:
        """The seat's pass, where its rules offer one now (None where they do not)."""
        actions = await self.runtime.ask_rules(
            api.ListLegalActions(game=snapshot.game, state=snapshot.state, seat=seat),
            list[dict[str, Any]],
        )
        passing = next((action for action in actions if action.get("type") in PASSES), None)
        if passing is None:
            return None
        decided: api.Decided = await self.runtime.ask_rules(
            api.Decide(
                game=snapshot.game,
                state=snapshot.state,
                seat=seat,
                action=msgspec.Raw(_json.encode(passing)),
            ),
            api.Decided,
        )
        return decided

    async def _forfeit(self, change: _SeatChange, seats: list[int], reason: str) -> None:
        snapshot = change.snapshot
        result = await self.runtime.ask_rules(
            api.EndEarly(
                game=snapshot.game, seats=len(snapshot.players), forfeited=seats, reason=reason
            ),
            dict[str, Any],
        )
        change.add(MatchForfeited(seats=seats, reason=reason, result=result))  # type: ignore[arg-type]
        change.finish(result)

    async def leave(self, match_id: str, token: str, key: str | None) -> Answer:
        """The bearer leaves the running match: the table's leave policy hands the seat to a bot
        or ends the match as abandoned. The token holds no seat afterwards."""
        retry = Retry(self, idempotent(f"match-leave:{match_id}", key, token))
        for _ in range(SEAT_CHANGE_ATTEMPTS):
            snapshot = await self.load(match_id, fresh=True)
            try:
                seat = snapshot.player_of(token)
            except Problem as unseated:
                return await retry.answer_or(unseated)
            if snapshot.status == "finished":
                return await retry.answer_or(match_finished())
            policy = snapshot.hosting.on_leave
            change = _SeatChange(snapshot, now_ms(), actor=seat)
            change.add(PlayerLeft(seat=seat, player=snapshot.players[seat], policy=policy))
            if policy == "bot":
                await self._hand_to_bot(change, seat, "left")
            else:
                await self._forfeit(change, [seat], "abandoned")
            if await self._record(change, idempotency=retry.request, info=True):
                return Answer(200, change.answer)
        return await retry.answer_or(match_busy())  # or its key was used: its first answer

    async def reseat(
        self,
        match_id: str,
        seat: int,
        caller: apps.Caller | None,
        bearer: str | None,
        body: s.Reseat,
        key: str | None,
    ) -> Answer:
        """A new token for the seat of a running match, for the app's secret key (any seat: a
        player who lost theirs plays on, a seat a bot took over comes back to a person) or for
        the seat's former holder, with the token they had, while a bot holds the seat (they
        left or timed out). No one else: a seat is its player's, and an invitation or a
        publishable key is in every invited player's or browser's hands."""
        snapshot = await self.load(match_id, fresh=True)
        if caller is not None and caller.app_id != snapshot.app_id:
            raise Problem(
                403,
                "not-your-match",
                "Not your match",
                "re-seat with the secret key of the app whose match it is",
            )
        if not 0 <= seat < len(snapshot.players):
            last = len(snapshot.players) - 1
            raise Problem(422, "no-such-seat", "No such seat", f"seats are 0 to {last}")
        by_app = caller is not None and caller.kind == "secret"
        if not by_app and bearer is None:
            assert caller is not None  # the route asks for a key when there is no token
            caller.require_secret("re-seating a player")
        asker = caller.credential if by_app and caller is not None else bearer or ""
        retry = Retry(
            self,
            idempotent(f"match-reseat:{match_id}:{seat}", key, asker, _json.encode(body)),
        )
        for _ in range(SEAT_CHANGE_ATTEMPTS):
            if snapshot.status == "finished":
                return await retry.answer_or(match_finished())
            if not by_app and not await self._former_holder(snapshot, seat, asker):
                return await retry.answer_or(not_former_holder(seat))
            token = new_token()
            player = body.name or snapshot.players[seat]
            change = _SeatChange(snapshot, now_ms())
            from_bot = snapshot.bots.get(seat)
            change.add(PlayerReseated(seat=seat, player=player, from_bot=from_bot))
            change.bots.pop(seat, None)
            change.tokens[seat] = hash_token(token)
            change.players[seat] = player
            if await self._record(change, idempotency=retry.request, reseated=(seat, token)):
                return Answer(201, change.answer)
            snapshot = await self.load(match_id, fresh=True)
        return await retry.answer_or(match_busy())  # or its key was used: its first answer

    async def _former_holder(self, snapshot: Snapshot, seat: int, token: str) -> bool:
        """Whether ``token`` held the seat before the bot that holds it now took over. Read as
        of now; the re-seat commits only at the snapshot's version, and every change of who
        holds a seat moves the version."""
        if seat not in snapshot.bots:
            return False
        async with self.runtime.pool.connection() as conn:
            cursor = await conn.execute(
                "select former_token_hash from match_seats where match_id = %s and seat = %s",
                (snapshot.match_id, seat),
            )
            row = await cursor.fetchone()
        former = None if row is None else row[0]
        return former is not None and hmac.compare_digest(former, hash_token(token))

    async def _record(
        self,
        change: _SeatChange,
        *,
        command_id: str | None = None,
        idempotency: Idempotent | None = None,
        info: bool = False,
        reseated: tuple[int, str] | None = None,
    ) -> bool:
        """Commit a change of seats at the version it was decided on (else nothing: a move came
        first), with its events, the seats' new tokens and the command or request it answers."""
        snapshot = change.snapshot
        events, public, actors, progress, clocks = change.events()
        new_version = snapshot.version + len(events)
        status = "finished" if progress.result is not None else "running"
        settled = replace(
            snapshot,
            version=new_version,
            state=progress.state,
            to_move=progress.to_move,
            status=status,
            result=progress.result,
            players=change.players,
            bots=change.bots,
            clocks=clocks,
            legal_actions=None,
            views={},
        )
        if reseated is not None:
            seat, token = reseated
            change.answer = _json.encode(
                s.Reseated(
                    seat=seat, token=token, match=match_info(settled, seat, None, change.now)
                )
            )
        elif info:
            change.answer = _json.encode(match_info(settled, None, None, change.now))
        metas = move_metadata(correlation_id() or new_id(), actors, snapshot.app_id)
        deadline = hosting.deadline_ms(snapshot.hosting.clock, clocks)
        every = self.runtime.settings.snapshot_every
        append = Append(
            match_stream(snapshot.match_id),
            snapshot.version,
            [(e.type, bytes(e.data), _json.encode(m)) for e, m in zip(events, metas, strict=True)],
            self._envelopes(
                snapshot.match_id,
                snapshot.game,
                snapshot.version,
                events,
                public,
                metas,
                progress,
                bots=change.bots,
                deadline_ms=deadline,
            ),
            [StoredSnapshot(snapshot.match_id, new_version, progress.state)]
            if new_version // every > snapshot.version // every
            else (),
            None
            if idempotency is None
            else Record(
                idempotency.scope,
                idempotency.key,
                idempotency.fingerprint,
                201 if reseated else 200,
                idempotency.seal(change.answer, self.runtime.keyring),
            ),
        )
        async with self.runtime.pool.connection() as conn, conn.transaction():
            moved = await append_all(
                conn,
                [append],
                guard=_SEATS_MOVED,
                guard_params={
                    "match_id": snapshot.match_id,
                    "version": new_version,
                    "state": progress.state,
                    "to_move": progress.to_move,
                    "status": status,
                    "result": None if progress.result is None else _json.encode(progress.result),
                    "players": _json.encode(change.players),
                    "bots": _json.encode(change.bots),
                    "bot_seats": sorted(change.bots),
                    "clocks": None if clocks is None else _json.encode(clocks),
                    "deadline": deadline,
                    "reseated": 1 if change.tokens else 0,
                },
            )
            if not moved:
                return False
            async with conn.cursor() as cursor:
                await cursor.executemany(
                    "update match_seats set token_hash = %s, former_token_hash = %s"
                    " where match_id = %s and seat = %s",
                    [
                        (hashed, change.former.get(seat), snapshot.match_id, seat)
                        for seat, hashed in change.tokens.items()
                    ],
                )
            if command_id is not None:
                await commands.complete(conn, command_id)
        self._cache.pop(snapshot.match_id, None)
        self.runtime.relay.wake()
        return True


class _SeatChange:
    """A change of seats being decided: the events it records (hosting events, and a pass's
    game events), the seats' bots, tokens and players after it, and the clocks."""

    def __init__(self, snapshot: Snapshot, now: int, actor: int | None = None) -> None:
        self.snapshot = snapshot
        self.now = now
        self.actor = actor
        self.bots = dict(snapshot.bots)
        self.tokens: dict[int, str] = {}
        self.former: dict[int, str] = {}
        """Of the seats given new tokens, those a bot takes from a person: the hash of that
        person's token (any other seat's former holder is forgotten)."""
        self.players = list(snapshot.players)
        self.answer = b""
        self._events: list[tuple[api.EncodedEvent, msgspec.Raw, int | None]] = []
        self._progress = api.Progress(
            state=snapshot.state, to_move=snapshot.to_move, result=snapshot.result
        )
        self._moved: int | None = None

    def add(self, event: Any) -> None:
        encoded = encoded_event(event)
        self._events.append((encoded, encoded.data, self.actor))

    def played(self, seat: int, decided: api.Decided) -> None:
        """The seat's move (its pass) decided by the rules."""
        for event, public in zip(decided.events, decided.public_events, strict=True):
            self._events.append((event, public, seat))
        self._progress = decided.progress
        self._moved = seat

    def finish(self, result: dict[str, Any]) -> None:
        self._progress = api.Progress(state=self._progress.state, to_move=[], result=result)

    def events(
        self,
    ) -> tuple[
        list[api.EncodedEvent], list[msgspec.Raw], list[int | None], api.Progress, Clocks | None
    ]:
        """Its events (a ``ClockUpdated`` last, when there is a clock), who caused each, the
        match after it and the clocks."""
        snapshot, progress = self.snapshot, self._progress
        entries = list(self._events)
        clocks = None
        control = snapshot.hosting.clock
        if control is not None and snapshot.clocks is not None:
            clocks = run_clocks(
                control,
                snapshot.clocks,
                moved=self._moved,
                to_move=progress.to_move,
                unclocked=set(self.bots),
                now_ms=self.now,
            )
            clocked = clock_event(control, clocks, self._moved, snapshot.clocks, self.now)
            entries.append((clocked, clocked.data, None))
        return (
            [event for event, _, _ in entries],
            [public for _, public, _ in entries],
            [actor for _, _, actor in entries],
            progress,
            clocks,
        )


SEAT_CHANGE_ATTEMPTS = 5
"""A change of seats decided on a version a move just left is decided again, this often."""


PASSES = frozenset(PASS_ACTIONS.values())
"""The actions that pass a turn, where a game's rules have one (Breaking News)."""


_SEATS_MOVED = """
    update matches
    set version = %(version)s, state = %(state)s, to_move = %(to_move)s, status = %(status)s,
        result = %(result)s, players = %(players)s, bots = %(bots)s, bot_seats = %(bot_seats)s,
        clocks = %(clocks)s, deadline = to_timestamp(%(deadline)s::float8 / 1000),
        seating = seating + %(reseated)s, updated_at = now()
    from append
    where matches.match_id = %(match_id)s and matches.version = append.expected
      and not append.key_used
    returning append.n, append.stream, append.expected
"""
"""The guard of a change of seats (``shared.infra.eventstore.append_all``): it commits only on the
version it was decided on, as a move does, and not under an Idempotency-Key already used."""
