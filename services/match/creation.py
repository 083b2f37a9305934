"""Match creation: the set-up a table's ``CreateMatch`` asks for, and imported match files."""

from __future__ import annotations

from typing import Any

import msgspec

from services.match import schemas as s
from services.match.snapshot import match_stream
from services.match.store import MatchStore, move_metadata
from services.match.timing import clock_event
from shared.domain import hosting
from shared.domain import rules_api as api
from shared.domain.commitments import Commitment
from shared.domain.hosting import NO_HOSTING, Hosting, start_clocks
from shared.domain.match_file import is_match_file
from shared.domain.messages import CreateMatch, new_id, now_ms
from shared.edge.errors import Problem
from shared.edge.tokens import hash_token, new_token
from shared.infra import commands
from shared.infra.eventstore import NewEvent
from shared.infra.eventstore import Snapshot as StoredSnapshot

_json = msgspec.json.Encoder()


class MatchCreation(MatchStore):
    """Creates matches: from a table's command, or from an imported match file."""

    async def create(self, command: CreateMatch, correlation_id: str, command_id: str) -> bool:
        """Set up the match a table asked for and mark the command done with it; a repeated
        command changes nothing. The rules' refusal marks the command refused (never retried);
        any other failure leaves it pending, to be re-driven."""
        if await self._exists(command.match_id):
            async with self.runtime.pool.connection() as conn:
                await commands.complete(conn, command_id)
            return False
        try:
            done: api.SetUpDone = await self.runtime.ask_rules(
                api.SetUp(
                    game=command.game,
                    options=command.options,
                    seats=command.seats,
                    seed=command.seed,
                ),
                api.SetUpDone,
            )
        except Problem as problem:
            if problem.status != 422:
                raise
            async with self.runtime.pool.connection() as conn:
                await commands.complete(conn, command_id, f"{commands.REFUSED}: {problem.detail}")
            raise
        return await self._insert(
            match_id=command.match_id,
            table_id=command.table_id,
            game=command.game,
            options=done.options,
            players=command.players,
            token_hashes=command.seat_token_hashes,
            events=done.events,
            public_events=done.public_events,
            progress=done.progress,
            correlation_id=correlation_id,
            private=command.private,
            invitation_token_hash=command.invitation_token_hash,
            app_id=command.app_id,
            commitments=command.commitments,
            command_id=command_id,
            bots=command.bots,
            hosting_policy=command.hosting,
        )

    async def import_match(self, body: s.ImportMatch, app_id: str | None) -> tuple[str, list[str]]:
        game = body.game or _game_named_in(body.document)
        imported: api.Imported = await self.runtime.ask_rules(
            api.ImportMatch(
                game=game,
                document=msgspec.Raw(_json.encode(body.document)),
                snapshot_every=self.runtime.settings.snapshot_every,
            ),
            api.Imported,
        )
        redacted: list[msgspec.Raw] = await self.runtime.ask_rules(
            api.RedactEvents(game=game, events=[e.data for e in imported.events], seat=None),
            list[msgspec.Raw],
        )
        match_id = new_id()
        tokens = [new_token() for _ in range(imported.seats)]
        await self._insert(
            match_id=match_id,
            table_id=None,
            game=game,
            options=imported.options,
            players=imported.players,
            token_hashes=[hash_token(token) for token in tokens],
            events=imported.events,
            public_events=redacted,
            progress=imported.progress,
            correlation_id=match_id,
            snapshots=imported.snapshots,
            actors=imported.actors,
            app_id=app_id,
        )
        return match_id, tokens

    async def _exists(self, match_id: str) -> bool:
        async with self.runtime.pool.connection() as conn:
            result = await conn.execute("select 1 from matches where match_id = %s", (match_id,))
            return await result.fetchone() is not None

    async def _insert(
        self,
        *,
        match_id: str,
        table_id: str | None,
        game: str,
        options: dict[str, Any],
        players: list[str],
        token_hashes: list[str],
        events: list[api.EncodedEvent],
        public_events: list[msgspec.Raw],
        progress: api.Progress,
        correlation_id: str,
        private: bool = False,
        invitation_token_hash: str | None = None,
        snapshots: list[api.StateSnapshot] | None = None,
        actors: list[int | None] | None = None,
        app_id: str | None = None,
        commitments: dict[str, Commitment] | None = None,
        command_id: str | None = None,
        bots: dict[int, str] | None = None,
        hosting_policy: Hosting = NO_HOSTING,
    ) -> bool:
        """Create the match row, its seats, its snapshots (default: the state now) and events,
        and mark the command that asked for it done, all in one transaction.

        ``actors`` (an imported match's seat per event) records each run of one seat's events
        with that seat, as played moves are, so replays show who moved. Seats ``bots`` play
        get their bot's token; a time control starts the clocks of the seats to move, which a
        ``ClockUpdated`` after the set-up records."""
        status = "finished" if progress.result is not None else "running"
        bots = bots or {}
        token_hashes = [
            await self.bot_token_hash(match_id, seat) if seat in bots else hashed
            for seat, hashed in enumerate(token_hashes)
        ]
        events, public_events = list(events), list(public_events)
        actors = actors or [None] * len(events)
        clocks = None
        control = hosting_policy.clock
        if control is not None and status == "running":
            now = now_ms()
            clocks = start_clocks(control, len(token_hashes), progress.to_move, set(bots), now)
            started = clock_event(control, clocks, None, None, now)
            events.append(started)
            public_events.append(started.data)
            actors = [*actors, None]
        async with self.runtime.pool.connection() as conn, conn.transaction():
            inserted = await conn.execute(
                "insert into matches (match_id, table_id, game, seats, options, players, version,"
                " state, to_move, status, result, private, invitation_token_hash, app_id,"
                " commitments, hosting, bots, bot_seats, clocks, deadline) values (%s, %s, %s,"
                " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                " to_timestamp(%s::float8 / 1000)) on conflict (match_id) do nothing",
                (
                    match_id,
                    table_id,
                    game,
                    len(token_hashes),
                    _json.encode(options),
                    _json.encode(players),
                    len(events),
                    progress.state,
                    progress.to_move,
                    status,
                    None if progress.result is None else _json.encode(progress.result),
                    private,
                    invitation_token_hash,
                    app_id,
                    _json.encode(commitments or {}),
                    _json.encode(hosting_policy),
                    _json.encode(bots),
                    sorted(bots),
                    None if clocks is None else _json.encode(clocks),
                    None if control is None else hosting.deadline_ms(control, clocks),
                ),
            )
            if command_id is not None:
                await commands.complete(conn, command_id)
            if inserted.rowcount == 0:
                return False
            async with conn.cursor() as cursor:
                await cursor.executemany(
                    "insert into match_seats (match_id, seat, token_hash) values (%s, %s, %s)",
                    [(match_id, seat, hashed) for seat, hashed in enumerate(token_hashes)],
                )
            metas = move_metadata(correlation_id, actors, app_id)
            await self.runtime.store.append(
                match_stream(match_id),
                0,
                [
                    NewEvent(e.type, bytes(e.data), meta)
                    for e, meta in zip(events, metas, strict=True)
                ],
                envelopes=self._envelopes(
                    match_id,
                    game,
                    0,
                    events,
                    public_events,
                    metas,
                    progress,
                    bots=bots,
                    deadline_ms=None if control is None else hosting.deadline_ms(control, clocks),
                ),
                snapshots=[
                    StoredSnapshot(match_id, kept.version, kept.state)
                    for kept in snapshots or [api.StateSnapshot(len(events), progress.state)]
                ],
                conn=conn,
            )
        self.runtime.relay.wake()
        return True


def _game_named_in(document: dict[str, Any]) -> str:
    """The game a playtable match file names (other formats need the game given)."""
    if is_match_file(document) and isinstance(document.get("game"), str):
        return document["game"]
    raise Problem(
        422,
        "game-required",
        "Game required",
        "name the game: only a playtable match file names its own",
    )
