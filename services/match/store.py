"""The base of ``Matches``: its cache of snapshots, how they are loaded, and what each change
publishes."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from dataclasses import replace
from itertools import groupby

import msgspec
from psycopg import AsyncConnection

from services.match.commit import Committer
from services.match.snapshot import MatchCreating, Snapshot, match_stream
from shared.domain import hosting
from shared.domain import rules_api as api
from shared.domain.hosting import NO_HOSTING, Clocks, Hosting
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
    decode_command,
    metadata,
)
from shared.edge.errors import Problem, not_found
from shared.edge.runtime import Runtime
from shared.edge.tokens import hash_token
from shared.infra import commands
from shared.infra.streams import BOT_TURNS_STREAM, CLOCKS_STREAM, MATCH_EVENTS_STREAM

_json = msgspec.json.Encoder()
_bots_decoder = msgspec.json.Decoder(dict[int, str])
_clocks_decoder = msgspec.json.Decoder(Clocks)
_hosting_decoder = msgspec.json.Decoder(Hosting)
CACHE_SIZE = 20_000


_SELECT_MATCH = (
    "select table_id, game, players, version, state, to_move, status, result,"
    " private, invitation_token_hash, app_id, hosting, bots, clocks, seating"
    " from matches where match_id = %s"
)


class MatchStore:
    """What every part of ``Matches`` works on: the cached snapshots read from the ``matches``
    rows, the group committer of moves, the bots' token key, and the publications (public
    events, bot turns, clocks) committed with each change."""

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
        ``BotTurnDue`` when a bot's seat is among those that may move, a ``ClockSet`` when a
        clock runs. Matches without bot seats or clocks publish neither, so those services read
        nothing of them."""
        woken: list[tuple[str, bytes]] = []
        if progress.result is None and any(seat in bots for seat in progress.to_move):
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


def move_metadata(
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
