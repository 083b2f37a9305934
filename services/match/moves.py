"""Moves: a seat's action decided by the rules and committed with the moves ready at the same
time."""

from __future__ import annotations

from dataclasses import replace

import msgspec

from services.match import schemas as s
from services.match.answers import (
    Answer,
    Retry,
    match_finished,
    out_of_time_problem,
    stale_version,
    wrong_game,
)
from services.match.commit import PendingMove
from services.match.snapshot import match_stream
from services.match.store import MatchStore
from services.match.timing import clock_event, clocks_after, out_of_time
from shared.domain import hosting
from shared.domain import rules_api as api
from shared.domain.messages import Actor, metadata, now_ms
from shared.edge.idempotency import idempotent
from shared.infra.logs import correlation_id
from shared.infra.metrics import MOVES

_json = msgspec.json.Encoder()


class MatchMoves(MatchStore):
    """Records moves."""

    async def act(self, match_id: str, token: str, body: s.SubmitAction, key: str | None) -> Answer:
        """Decide, then commit events + snapshot + outbox + idempotency record at once.

        A retried request is recognised only when it cannot proceed (its version is stale, or
        the match ended): a fresh request, the common case, costs no idempotency look-up.
        """
        snapshot = await self.load(match_id)
        seat = snapshot.player_of(token)
        if body.game != snapshot.game:
            raise wrong_game(snapshot.game)
        action = _json.encode(body.action)
        retry = Retry(
            self,
            idempotent(f"match:{match_id}", key, token, str(body.expected_version), action),
        )
        if body.expected_version != snapshot.version:
            snapshot = await self.load(match_id, fresh=True)
            seat = snapshot.player_of(token)  # a seat may have changed hands since
            if body.expected_version != snapshot.version:
                return await retry.answer_or(
                    stale_version(snapshot.version, body.expected_version, seat)
                )
        if snapshot.status == "finished":
            return await retry.answer_or(match_finished())
        now = now_ms()
        if out_of_time(snapshot, seat, now):
            return await retry.answer_or(out_of_time_problem())
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
        clocks = clocks_after(snapshot, seat, progress.to_move, now)
        if clocks is not None:
            assert snapshot.hosting.clock is not None and snapshot.clocks is not None
            clocked = clock_event(snapshot.hosting.clock, clocks, seat, snapshot.clocks, now)
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
            return await retry.answer_or(
                stale_version(current.version, body.expected_version, seat)
            )
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
