"""Matches: the event log of each match, its snapshot, and the moves that extend it.

The match service holds no game code. States are opaque bytes from the rules service; the
``matches`` row caches the fold of the stream and guards appends by version, so a move commits
only on top of the version it was decided on.
"""

from __future__ import annotations

import hmac
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Any, NamedTuple

import msgspec
from psycopg import AsyncConnection

from services.match import schemas as s
from services.match.commit import Committer, PendingMove
from shared.domain import commitments, hosting
from shared.domain import rules_api as api
from shared.domain.commitments import Commitment
from shared.domain.hosting import (
    NO_HOSTING,
    BotTookOver,
    Clocks,
    ClockUpdated,
    ClockView,
    Hosting,
    MatchForfeited,
    PlayerLeft,
    PlayerReseated,
    TurnTimedOut,
    clock_view,
    run_clocks,
    seat_deadlines,
    start_clocks,
)
from shared.domain.match_file import ExportFormat, is_match_file, match_file
from shared.domain.messages import (
    MATCH_FINISHED,
    SYSTEM,
    Actor,
    BotTurnDue,
    ClockSet,
    CreateMatch,
    EventEnvelope,
    EventMetadata,
    FinishedMatch,
    TimeOut,
    decode_command,
    metadata,
    new_id,
    now_ms,
)
from shared.edge import apps
from shared.edge.errors import Problem, not_found
from shared.edge.idempotency import Idempotent, idempotent, recall
from shared.edge.paging import next_cursor_after
from shared.edge.runtime import Runtime
from shared.edge.tokens import hash_token, new_token
from shared.infra import commands
from shared.infra.eventstore import Append, NewEvent, Record, StoredEvent, append_all
from shared.infra.eventstore import Snapshot as StoredSnapshot
from shared.infra.logs import correlation_id
from shared.infra.metrics import MOVES
from shared.infra.streams import BOT_TURNS_STREAM, CLOCKS_STREAM, MATCH_EVENTS_STREAM

_json = msgspec.json.Encoder()
_bots_decoder = msgspec.json.Decoder(dict[int, str])
_clocks_decoder = msgspec.json.Decoder(Clocks)
_hosting_decoder = msgspec.json.Decoder(Hosting)
CACHE_SIZE = 20_000


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


_SELECT_MATCH = (
    "select table_id, game, players, version, state, to_move, status, result,"
    " private, invitation_token_hash, app_id, hosting, bots, clocks, seating"
    " from matches where match_id = %s"
)


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
        return _info(pending, pending.seat_of(token), None)


class Matches:
    """Creates matches, serves them as each seat may see them, and records moves."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.topic = runtime.settings.stream(MATCH_EVENTS_STREAM)
        self.bot_turns = runtime.settings.stream(BOT_TURNS_STREAM)
        self.clocks_set = runtime.settings.stream(CLOCKS_STREAM)
        self._cache: OrderedDict[str, Snapshot] = OrderedDict()
        self._bot_secret: bytes | None = None
        self._moves: Committer | None = None

    def _committer(self) -> Committer:
        """The group committer of moves, made once the runtime has its pool and relay."""
        if self._moves is None:
            self._moves = Committer(
                self.runtime.pool,
                self.runtime.relay,
                snapshot_every=self.runtime.settings.snapshot_every,
            )
        return self._moves

    # --- creation ------------------------------------------------------------------------------

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

    async def bot_secret(self) -> bytes:
        """The key of bot seats' tokens (``shared.domain.hosting.bot_token``), read once."""
        if self._bot_secret is None:
            async with self.runtime.pool.connection() as conn:
                self._bot_secret = await hosting.bot_secret(
                    conn, self.runtime.settings.bot_secret, self.runtime.keyring
                )
        return self._bot_secret

    async def bot_token_hash(self, match_id: str, seat: int) -> str:
        return hash_token(hosting.bot_token(await self.bot_secret(), match_id, seat))

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
            started = _clock_event(control, clocks, None, None, now)
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
            metas = _move_metadata(correlation_id, actors, app_id)
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

    def _envelopes(
        self,
        match_id: str,
        game: str,
        version: int,
        events: list[api.EncodedEvent],
        public_events: list[msgspec.Raw],
        metas: list[EventMetadata],
        progress: api.Progress,
        *,
        bots: Collection[int],
        deadline_ms: int | None,
    ) -> list[tuple[str, bytes]]:
        """``(topic, payload)`` to publish with events appended after ``version``: their public
        form (and the result, once there is one), then the wake-ups of the bots and clocks
        services (``_wakeups``)."""
        payloads = self._publications(
            match_id, game, version, events, public_events, metas, progress
        )
        return [
            *((self.topic, payload) for payload in payloads),
            *self._wakeups(match_id, version + len(events), progress, bots, deadline_ms),
        ]

    def _wakeups(
        self,
        match_id: str,
        version: int,
        progress: api.Progress,
        bots: Collection[int],
        deadline_ms: int | None,
    ) -> list[tuple[str, bytes]]:
        """``(topic, payload)`` to publish with a change committed at ``version``: a
        ``BotTurnDue`` when a bot is first to move, a ``ClockSet`` when a clock runs. Matches
        without bot seats or clocks publish neither, so those services read nothing of them."""
        woken: list[tuple[str, bytes]] = []
        if progress.result is None and progress.to_move and progress.to_move[0] in bots:
            woken.append((self.bot_turns, _json.encode(BotTurnDue(match_id, version))))
        if deadline_ms is not None and progress.result is None:
            woken.append((self.clocks_set, _json.encode(ClockSet(match_id, version, deadline_ms))))
        return woken

    def _publications(
        self,
        match_id: str,
        game: str,
        version: int,
        events: list[api.EncodedEvent],
        public_events: list[msgspec.Raw],
        metas: list[EventMetadata],
        progress: api.Progress,
    ) -> list[bytes]:
        """The envelopes to publish: each event's public copy, then ``MatchFinished`` if over."""
        stream = match_stream(match_id)
        envelopes = [
            EventEnvelope(
                stream_id=stream,
                version=version + number,
                type=event.type,
                data=public,
                metadata=meta,
                game=game,
            )
            for number, (event, public, meta) in enumerate(
                zip(events, public_events, metas, strict=True), 1
            )
        ]
        if progress.result is not None:
            finished = FinishedMatch(match_id=match_id, result=progress.result)
            envelopes.append(
                EventEnvelope(
                    stream_id=stream,
                    version=version + len(events),
                    type=MATCH_FINISHED,
                    data=msgspec.Raw(_json.encode(finished)),
                    metadata=metas[-1],
                    game=game,
                )
            )
        return [_json.encode(envelope) for envelope in envelopes]

    # --- reads ---------------------------------------------------------------------------------

    async def app_of(self, match_id: str) -> str | None:
        """The app whose match it is (it never changes, and a match being created already has
        it); a 404 for no match."""
        try:
            return (await self.load(match_id)).app_id
        except MatchCreating as creating:
            return creating.command.app_id

    async def load(self, match_id: str, *, fresh: bool = False) -> Snapshot:
        """The match as this process knows it; ``fresh`` re-reads what moves change.

        Other processes may have moved the match since, so whatever is served to a client is
        read ``fresh``; a move may start from the cached copy, because its commit holds only if
        the match is still at the version it was decided on. What never changes (game, players,
        seat tokens) is read once.
        """
        cached = self._cache.get(match_id)
        if cached is not None:
            self._cache.move_to_end(match_id)
            if not fresh:
                return cached
        async with self.runtime.pool.connection() as conn:
            row = await (await conn.execute(_SELECT_MATCH, (match_id,))).fetchone()
            if row is None:
                missing = await self._missing(conn, match_id)
                # the creation may have committed between the two reads: its command is done
                row = await (await conn.execute(_SELECT_MATCH, (match_id,))).fetchone()
                if row is None:
                    raise missing
            if cached is None or cached.seating != row[14]:
                seats = await conn.execute(
                    "select token_hash, seat from match_seats where match_id = %s", (match_id,)
                )
                token_hashes = dict(await seats.fetchall())
            else:
                token_hashes = cached.seat_by_token_hash
        position = {
            "version": row[3],
            "state": bytes(row[4]),
            "to_move": list(row[5]),
            "status": row[6],
            "result": None if row[7] is None else msgspec.json.decode(row[7]),
            "legal_actions": (
                cached.legal_actions if cached is not None and cached.version == row[3] else None
            ),
            "views": cached.views if cached is not None and cached.version == row[3] else {},
            "players": msgspec.json.decode(row[2]),
            "seat_by_token_hash": token_hashes,
            "bots": {} if row[12] is None else _bots_decoder.decode(row[12]),
            "clocks": None if row[13] is None else _clocks_decoder.decode(row[13]),
            "seating": row[14],
        }
        if cached is not None:
            return self._remember(replace(cached, **position))
        return self._remember(
            Snapshot(
                match_id=match_id,
                table_id=row[0],
                game=row[1],
                private=row[8],
                invitation_token_hash=row[9],
                app_id=row[10],
                hosting=NO_HOSTING if row[11] is None else _hosting_decoder.decode(row[11]),
                **position,
            )
        )

    async def _missing(self, conn: AsyncConnection, match_id: str) -> Problem:
        """Why there is no row: the match is still being created (its table started, its
        ``CreateMatch`` not done yet), or there is no such match."""
        asked = await commands.latest_about(conn, match_id)
        if asked is None or asked.done:
            return not_found("match", match_id)
        envelope = decode_command(asked.payload)
        return MatchCreating(msgspec.json.decode(envelope.body, type=CreateMatch))

    def _remember(self, snapshot: Snapshot) -> Snapshot:
        """Cache ``snapshot`` unless a newer version of the match is cached already (a read
        that started before a move may finish after it)."""
        cached = self._cache.get(snapshot.match_id)
        if cached is None or cached.version <= snapshot.version:
            self._cache[snapshot.match_id] = snapshot
        self._cache.move_to_end(snapshot.match_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return snapshot

    async def info(self, match_id: str, token: str | None) -> s.MatchInfo:
        try:
            snapshot = await self.load(match_id, fresh=True)
        except MatchCreating as creating:
            return creating.info(token)
        seat = snapshot.seat_of(token)
        view = snapshot.views.get(seat)
        if view is None:
            view = await self.runtime.ask_rules(
                api.ShowView(game=snapshot.game, state=snapshot.state, seat=seat), msgspec.Raw
            )
            snapshot.views[seat] = view
        return _info(snapshot, seat, view)

    async def legal_actions(
        self, match_id: str, token: str, version: int | None = None
    ) -> s.LegalActions:
        """The seat's actions now, or at ``version`` when this process still holds them (the
        actions at a version never change): a client that knows the version it is to move at
        costs no read of the match."""
        snapshot = self._cache.get(match_id)
        if snapshot is None or snapshot.version != version or snapshot.legal_actions is None:
            snapshot = await self.load(match_id, fresh=True)
        seat = snapshot.player_of(token)
        if snapshot.legal_actions is not None:
            actions = snapshot.legal_actions.get(seat, [])
        else:
            actions = await self.runtime.ask_rules(
                api.ListLegalActions(game=snapshot.game, state=snapshot.state, seat=seat),
                list[msgspec.Raw],
            )
        return s.LegalActions(
            game=snapshot.game, version=snapshot.version, seat=seat, actions=actions
        )

    async def events(self, match_id: str, token: str | None, after: int, limit: int) -> s.EventPage:
        bearer_hash = None if token is None else hash_token(token)
        return await self.events_seen(match_id, bearer_hash, after, limit)

    async def events_seen(
        self, match_id: str, bearer_hash: str | None, after: int, limit: int
    ) -> s.EventPage:
        """``events`` for the hash of the bearer's token (a feed's caller: maybe a ticket's)."""
        snapshot = await self.load(match_id)
        seat = snapshot.seat_of_hash(bearer_hash)
        stored = await self.runtime.store.read_stream(
            match_stream(match_id), after_version=after, limit=limit
        )
        redacted: list[msgspec.Raw] = (
            await self.runtime.ask_rules(
                api.RedactEvents(
                    game=snapshot.game, events=[msgspec.Raw(e.data) for e in stored], seat=seat
                ),
                list[msgspec.Raw],
            )
            if stored
            else []
        )
        items = [
            _event_item(snapshot.game, event, data)
            for event, data in zip(stored, redacted, strict=True)
        ]
        last = stored[-1].version if len(stored) == limit else None
        return s.EventPage(items=items, next_cursor=next_cursor_after(last), next_after=last)

    async def stored_events(self, match_id: str) -> list[StoredEvent]:
        return await self.runtime.store.read_stream(match_stream(match_id))

    async def export(
        self, match_id: str, format: ExportFormat | None = None, *, token: str | None = None
    ) -> msgspec.Raw:
        snapshot = await self.load(match_id, fresh=True)
        snapshot.seat_of(token)  # a private match's file is for its seats and invited only
        if snapshot.status != "finished":
            raise Problem(
                409, "match-running", "Match still running", "a match exports once it has finished"
            )
        stored = await self.stored_events(match_id)
        if format != "playtable":  # the game's community format, if it has one
            document: msgspec.Raw = await self.runtime.ask_rules(
                api.ExportMatch(
                    game=snapshot.game,
                    events=[msgspec.Raw(e.data) for e in stored],
                    players=snapshot.players,
                    format=format,
                ),
                msgspec.Raw,
            )
            if bytes(document) != b"null":
                return document
        async with self.runtime.pool.connection() as conn:
            found = await conn.execute(
                "select options, commitments from matches where match_id = %s", (match_id,)
            )
            options, committed = await found.fetchone() or (b"{}", b"{}")
        return msgspec.Raw(
            _json.encode(
                match_file(
                    game=snapshot.game,
                    options=msgspec.json.decode(options),
                    players=snapshot.players,
                    result=snapshot.result,
                    events=stored,
                    commitments=commitments.stored(committed),
                )
            )
        )

    # --- moves ---------------------------------------------------------------------------------

    async def act(self, match_id: str, token: str, body: s.SubmitAction, key: str | None) -> Answer:
        """Decide, then commit events + snapshot + outbox + idempotency record at once.

        A retried request is recognised only when it cannot proceed (its version is stale, or
        the match ended): a fresh request, the common case, costs no idempotency look-up.
        """
        snapshot = await self.load(match_id)
        seat = snapshot.player_of(token)
        if body.game != snapshot.game:
            raise _wrong_game(snapshot.game)
        action = _json.encode(body.action)
        retry = _Retry(
            self,
            idempotent(f"match:{match_id}", key, token, str(body.expected_version), action),
        )
        if body.expected_version != snapshot.version:
            snapshot = await self.load(match_id, fresh=True)
            seat = snapshot.player_of(token)  # a seat may have changed hands since
            if body.expected_version != snapshot.version:
                return await retry.answer_or(_stale(snapshot.version, body.expected_version, seat))
        if snapshot.status == "finished":
            return await retry.answer_or(_finished())
        now = now_ms()
        if _out_of_time(snapshot, seat, now):
            return await retry.answer_or(_out_of_time_problem())
        decided: api.Decided = await self.runtime.ask_rules(
            api.Decide(
                game=snapshot.game, state=snapshot.state, seat=seat, action=msgspec.Raw(action)
            ),
            api.Decided,
        )
        progress = decided.progress
        status = "finished" if progress.result is not None else "running"
        events, public_events = decided.events, decided.public_events
        actor_events = decided.actor_events
        clocks = _clocks_after(snapshot, seat, progress.to_move, now)
        if clocks is not None:
            assert snapshot.hosting.clock is not None and snapshot.clocks is not None
            clocked = _clock_event(snapshot.hosting.clock, clocks, seat, snapshot.clocks, now)
            events = [*events, clocked]
            public_events = [*public_events, clocked.data]
            actor_events = [*actor_events, clocked.data]
        new_version = snapshot.version + len(events)
        clocked_snapshot = replace(snapshot, clocks=clocks)
        reply = _json.encode(
            s.ActionAccepted(
                game=snapshot.game,
                version=new_version,
                events=actor_events,
                to_move=progress.to_move,
                status=status,
                result=progress.result,
                view=decided.actor_view,
                legal_actions=decided.legal_actions.get(seat, []),
                clock=clocked_snapshot.clock(now),
            )
        )
        meta = metadata(
            correlation_id=correlation_id(),
            actor=Actor(kind="seat", seat=seat),
            app_id=snapshot.app_id,
        )
        encoded_meta = _json.encode(meta)
        result_json = None if progress.result is None else _json.encode(progress.result)
        outbox_payloads = self._publications(
            match_id,
            snapshot.game,
            snapshot.version,
            events,
            public_events,
            [meta] * len(events),
            progress,
        )
        deadline = hosting.deadline_ms(snapshot.hosting.clock, clocks)
        moved = await self._committer().commit(
            PendingMove(
                match_id=match_id,
                stream=match_stream(match_id),
                expected=snapshot.version,
                state=progress.state,
                to_move=progress.to_move,
                status=status,
                result=result_json,
                clocks=None if clocks is None else _json.encode(clocks),
                deadline=None if deadline is None else float(deadline),
                types=[event.type for event in events],
                data=[bytes(event.data) for event in events],
                metadata=encoded_meta,
                publications=[
                    *((self.topic, payload) for payload in outbox_payloads),
                    *self._wakeups(match_id, new_version, progress, snapshot.bots, deadline),
                ],
                scope=None if retry.request is None else retry.request.scope,
                key=key,
                fingerprint=None if retry.request is None else retry.request.fingerprint,
                reply=(
                    None
                    if retry.request is None
                    else retry.request.seal(reply, self.runtime.keyring)
                ),
            )
        )
        if not moved:
            self._cache.pop(match_id, None)
            current = await self.load(match_id, fresh=True)
            return await retry.answer_or(_stale(current.version, body.expected_version, seat))
        MOVES.labels(snapshot.game).inc()
        self._remember(
            replace(
                clocked_snapshot,
                version=new_version,
                state=progress.state,
                to_move=progress.to_move,
                status=status,
                result=progress.result,
                legal_actions=decided.legal_actions,
                views={seat: decided.actor_view},
            )
        )
        return Answer(201, reply)

    # --- seats: timeouts, leaving, re-seating -----------------------------------------------------

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
        retry = _Retry(self, idempotent(f"match-leave:{match_id}", key, token))
        for _ in range(SEAT_CHANGE_ATTEMPTS):
            snapshot = await self.load(match_id, fresh=True)
            try:
                seat = snapshot.player_of(token)
            except Problem as unseated:
                return await retry.answer_or(unseated)
            if snapshot.status == "finished":
                return await retry.answer_or(_finished())
            policy = snapshot.hosting.on_leave
            change = _SeatChange(snapshot, now_ms(), actor=seat)
            change.add(PlayerLeft(seat=seat, player=snapshot.players[seat], policy=policy))
            if policy == "bot":
                await self._hand_to_bot(change, seat, "left")
            else:
                await self._forfeit(change, [seat], "abandoned")
            if await self._record(change, idempotency=retry.request, info=True):
                return Answer(200, change.answer)
        return await retry.answer_or(_busy())  # or its key was used: its first answer

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
        retry = _Retry(
            self,
            idempotent(f"match-reseat:{match_id}:{seat}", key, asker, _json.encode(body)),
        )
        for _ in range(SEAT_CHANGE_ATTEMPTS):
            if snapshot.status == "finished":
                return await retry.answer_or(_finished())
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
        return await retry.answer_or(_busy())  # or its key was used: its first answer

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
                s.Reseated(seat=seat, token=token, match=_info(settled, seat, None, change.now))
            )
        elif info:
            change.answer = _json.encode(_info(settled, None, None, change.now))
        metas = _move_metadata(correlation_id() or new_id(), actors, snapshot.app_id)
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
        encoded = _encoded(event)
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
            clocked = _clock_event(control, clocks, self._moved, snapshot.clocks, self.now)
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


def not_former_holder(seat: int) -> Problem:
    return Problem(
        403,
        "not-your-seat",
        "Not your seat",
        f"only the app's secret key re-seats seat {seat}, or its former holder with the token"
        " it had, once a bot holds the seat",
    )


def _busy() -> Problem:
    return Problem(
        409,
        "match-busy",
        "Match busy",
        "moves kept coming in while this was being recorded: try again",
        headers={"Retry-After": "1"},
    )


def _finished() -> Problem:
    """A new problem each time: an exception raised carries its traceback with it, so no
    instance is shared between requests."""
    return Problem(409, "match-finished", "Match finished", "the match has ended")


PASSES = frozenset({"PassTurn"})
"""The actions that pass a turn, where a game's rules have one (Breaking News)."""


def _out_of_time_problem() -> Problem:
    return Problem(
        409,
        "out-of-time",
        "Out of time",
        "your clock ran out before this move arrived: the table's timeout policy applies",
    )


def _out_of_time(snapshot: Snapshot, seat: int, now: int) -> bool:
    control = snapshot.hosting.clock
    if control is None or snapshot.clocks is None:
        return False
    deadline = seat_deadlines(control, snapshot.clocks).get(seat)
    return deadline is not None and now > deadline


def _clocks_after(snapshot: Snapshot, seat: int, to_move: list[int], now: int) -> Clocks | None:
    control = snapshot.hosting.clock
    if control is None or snapshot.clocks is None:
        return None
    return run_clocks(
        control,
        snapshot.clocks,
        moved=seat,
        to_move=to_move,
        unclocked=set(snapshot.bots),
        now_ms=now,
    )


def _encoded(event: Any) -> api.EncodedEvent:
    return api.EncodedEvent(type(event).__name__, msgspec.Raw(_json.encode(event)))


def _clock_event(
    control: Any, clocks: Clocks, moved: int | None, before: Clocks | None, now: int
) -> api.EncodedEvent:
    """A ``ClockUpdated`` of the clocks at ``now``; the mover's time taken from ``before``."""
    shown = clock_view(control, clocks, now)
    started = None if before is None or moved is None else before.running_since_ms[moved]
    return _encoded(
        ClockUpdated(
            moved=moved,
            used_ms=None if started is None else now - started,
            remaining_ms=shown.remaining_ms,
            on_clock=shown.on_clock,
            deadline_ms=shown.deadline_ms,
            server_time_ms=now,
        )
    )


class Answer(NamedTuple):
    """A state-changing request's answer (its status and encoded body), and whether it repeats
    the one recorded under the same Idempotency-Key."""

    status: int
    body: bytes
    replayed: bool = False


class _Retry:
    """What a request under an Idempotency-Key answered the first time, if it was seen before."""

    def __init__(self, matches: Matches, request: Idempotent | None) -> None:
        self.matches = matches
        self.request = request

    async def answer_or(self, problem: Problem) -> Answer:
        if self.request is not None:
            async with self.matches.runtime.pool.connection() as conn:
                recorded = await recall(conn, self.matches.runtime.keyring, self.request)
            if recorded is not None:
                return Answer(recorded.status, recorded.body, replayed=True)
        raise problem


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


def _move_metadata(
    correlation_id: str, actors: list[int | None], app_id: str | None
) -> list[EventMetadata]:
    """Each event's metadata: one per run of events caused by the same seat (one move), with
    that seat as the actor (``None``: the system, setting up)."""
    metas: list[EventMetadata] = []
    for actor, run in groupby(actors):
        meta = metadata(
            correlation_id=correlation_id,
            actor=SYSTEM if actor is None else Actor(kind="seat", seat=actor),
            app_id=app_id,
        )
        metas.extend(meta for _ in run)
    return metas


def _wrong_game(game: str) -> Problem:
    return Problem(
        422,
        "wrong-game",
        "Not this match's game",
        f'the match plays {game}: send "game": "{game}" with one of its actions',
    )


def match_etag(version: int, seat: int | None) -> str:
    """The ETag of the match read by a seat (None: a spectator): one per version and viewer,
    so a copy cached for one seat is never current for another caller."""
    return f'"{version}-{"spectator" if seat is None else f"seat{seat}"}"'


def _stale(current: int, expected: int, seat: int) -> Problem:
    """The mover's read of the match carries the ETag it names (``getMatch``)."""
    return Problem(
        409,
        "stale-version",
        "Stale version",
        f"the match is at version {current}, not {expected}: reload and choose again",
        headers={"ETag": match_etag(current, seat)},
    )


def _info(
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


def _event_item(game: str, event: StoredEvent, data: msgspec.Raw) -> s.MatchEvent:
    return s.MatchEvent(
        game=game,
        version=event.version,
        type=event.type,
        data=data,
        seat=event.metadata.actor.seat,
        recorded_at=event.recorded_at.isoformat(),
    )
