"""Match reads: the match, its legal actions, its events and its export, as each caller may
see them."""

from __future__ import annotations

import msgspec

from services.match import schemas as s
from services.match.snapshot import MatchCreating, match_info, match_stream
from services.match.store import MatchStore
from shared.domain import commitments
from shared.domain import rules_api as api
from shared.domain.match_file import ExportFormat, match_file
from shared.edge.errors import Problem
from shared.edge.paging import next_cursor_after
from shared.edge.tokens import hash_token
from shared.infra.eventstore import StoredEvent

_json = msgspec.json.Encoder()


class MatchReads(MatchStore):
    """Serves matches as each seat (or spectator) may see them."""

    async def app_of(self, match_id: str) -> str | None:
        """The app whose match it is (it never changes, and a match being created already has
        it); a 404 for no match."""
        try:
            return (await self.load(match_id)).app_id
        except MatchCreating as creating:
            return creating.command.app_id

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
        return match_info(snapshot, seat, view)

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


def _event_item(game: str, event: StoredEvent, data: msgspec.Raw) -> s.MatchEvent:
    return s.MatchEvent(
        game=game,
        version=event.version,
        type=event.type,
        data=data,
        seat=event.metadata.actor.seat,
        recorded_at=event.recorded_at.isoformat(),
    )
