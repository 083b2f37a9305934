"""The story every example is taken from: the catalogue, Alice and Bob's table, the match it
started, a re-import of that match, each as the services show them."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar.response.sse import ServerSentEventMessage

from services.lobby import schemas as lobby_api
from services.lobby.rows import public_event
from services.match import schemas as match_api
from services.rules.engine import RulesEngine
from services.rules.games.registry import GAMES
from shared.domain import messages, rules_api
from shared.domain.hosting import NO_HOSTING
from shared.edge.feed import RETRY_MS
from shared.infra.eventstore import NewEvent
from tools.contract.examples.match import play
from tools.contract.examples.values import (
    ENCODER,
    GAME,
    IMPORTED_MATCH_ID,
    MATCH_ID,
    PLAYERS,
    TABLE_EVENT_TIMES_S,
    TABLE_ID,
    TABLE_NAME,
    TABLE_OPTIONS,
    TAKEOVER_BOT,
    at,
    fake_token,
    metadata,
    status_of,
)


def _abridged(action_schema: dict[str, Any]) -> dict[str, Any]:
    """A game's ``action_schema`` as an example shows it: each action by name only. The real
    one refers to its own ``$defs``, and tools that resolve every ``$ref`` in a contract
    (examples included) would look for those in the contract."""

    def named(schema: Any) -> Any:
        if isinstance(schema, list):
            return [named(item) for item in schema]
        if not isinstance(schema, dict):
            return schema
        if "$ref" in schema:
            return {"title": schema["$ref"].rpartition("/")[2]}
        return {
            key: named(value)
            for key, value in schema.items()
            if key not in ("$defs", "discriminator")
        }

    return {
        **named(action_schema),
        "description": "Abridged in this example: the catalogue gives each action's schema",
    }


class Story:
    """Everything the examples show, made once: the catalogue, Alice and Bob's table, the
    match it started, a re-import of that match and a webhook subscription to the table."""

    def __init__(self) -> None:
        self.engine = RulesEngine(GAMES)
        self.catalogue = [
            msgspec.structs.replace(game, action_schema=_abridged(game.action_schema))
            for game in msgspec.convert(self.engine.catalogue, list[lobby_api.GameInfo])
        ]
        self.game = next(game for game in self.catalogue if game.name == GAME)
        options = self.engine.handle(
            rules_api.ResolveOptions(game=GAME, options=TABLE_OPTIONS, seats=len(PLAYERS))
        )
        self.created = messages.TableCreated(
            table_id=TABLE_ID,
            game=GAME,
            name=TABLE_NAME,
            seats=len(PLAYERS),
            options=options,
            seeded=True,
        )
        self.table_events: list[tuple[messages.TableEvent, int | None]] = [
            (self.created, None),
            (messages.SeatTaken(seat=0, player=PLAYERS[0]), 0),
            (messages.SeatTaken(seat=1, player=PLAYERS[1]), 1),
            (messages.TableStarted(match_id=MATCH_ID), 0),
        ]
        self.match, self.turn = play(self.engine, options)
        self.exported: dict[str, Any] = self.engine.handle(
            rules_api.ExportMatch(
                game=GAME, events=[event.data for event in self.match.events], players=PLAYERS
            )
        )

    def table(
        self, events: int, *, bob_left: bool = False, bot_seated: bool = False
    ) -> lobby_api.TableInfo:
        """The table after its first ``events`` events (and Bob's leaving, or a bot seated in
        his place), as the lobby's read model shows it: secret options as null."""
        history = [event for event, _ in self.table_events[:events]]
        if bob_left or bot_seated:
            history.append(messages.SeatLeft(seat=1, player=PLAYERS[1]))
        if bot_seated:
            history.append(messages.SeatTaken(seat=1, player=TAKEOVER_BOT, bot=TAKEOVER_BOT))
        players: dict[int, str] = {}
        bots: dict[int, str] = {}
        match_id = None
        for event in history:
            if isinstance(event, messages.SeatTaken):
                players[event.seat] = event.player
                if event.bot is not None:
                    bots[event.seat] = event.bot
            elif isinstance(event, messages.SeatLeft):
                del players[event.seat]
            elif isinstance(event, messages.TableStarted):
                match_id = event.match_id
        secret = {option.name for option in self.game.options if option.secret}
        created = self.created
        return lobby_api.TableInfo(
            table_id=created.table_id,
            game=created.game,
            name=created.name,
            options={name: None if name in secret else v for name, v in created.options.items()},
            seeded=created.seeded,
            status="open" if match_id is None else "started",
            match_id=match_id,
            seats=[
                lobby_api.SeatInfo(seat=n, player=players.get(n), bot=bots.get(n))
                for n in range(created.seats)
            ],
            version=len(history),
            visibility=created.visibility,
            secret_options_set=sorted(
                name for name in secret if created.options.get(name) is not None
            ),
            commitments=created.commitments,
            seats_per_invitation=None,
            hosting=created.hosting,
            rematch_of=None,
            rematch_table_id=None,
        )

    def table_feed(self) -> str:
        """The table's feed from its creation, as ``TableFeeds`` sends it (no secrets)."""
        messages = []
        for version, ((event, seat), seconds) in enumerate(
            zip(self.table_events, TABLE_EVENT_TIMES_S, strict=True), start=1
        ):
            name = type(event).__name__
            stored = NewEvent(name, ENCODER.encode(event), metadata(version))
            item = lobby_api.TableFeedEvent(
                version=version,
                type=name,
                data=msgspec.Raw(public_event(stored)),
                seat=seat,
                recorded_at=at(seconds),
            )
            messages.append(_sse(version, name, item))
        return _stream(messages)

    def match_info(self, version: int, seat: int | None) -> match_api.MatchInfo:
        progress = self.match.progress_at[version]
        return match_api.MatchInfo(
            match_id=MATCH_ID,
            table_id=TABLE_ID,
            game=GAME,
            players=PLAYERS,
            version=version,
            status=status_of(progress.result),
            to_move=progress.to_move,
            you=seat,
            view=self.match.view(version, seat),
            result=progress.result,
            bots={},
            hosting=NO_HOSTING,
            clock=None,
        )

    def replay(self, version: int) -> match_api.MatchReplay:
        """The finished match at ``version`` as a spectator asks for it with ``full=true``."""
        state = self.match.progress_at[version].state
        span = rules_api.ReplaySpan(game=GAME, state=state, events=[], seat=None, full=True)
        (replayed,) = self.engine.handle(span)
        return match_api.MatchReplay(
            match_id=MATCH_ID,
            game=GAME,
            players=PLAYERS,
            version=version,
            status=status_of(replayed.result),
            to_move=replayed.to_move,
            you=None,
            view=replayed.view,
            result=replayed.result,
            state=replayed.state,
        )

    def match_feed_end(self, after: int) -> str:
        """A spectator's feed of the finished match resumed after ``after``: the last events,
        then ``MatchFinished``, as ``MatchFeeds`` sends them."""
        last, result = self.match.version, self.match.progress.result
        if result is None:
            raise ValueError("the story's match never finished")
        items = self.match.event_items(None, after + 1, last)
        messages = [_sse(item.version, item.type, item) for item in items]
        finished = match_api.MatchFinished(match_id=MATCH_ID, version=last, result=result)
        messages.append(_sse(last, "MatchFinished", finished))
        return _stream(messages)

    def imported_match(self) -> match_api.ImportedMatch:
        """The exported match imported again, as ``importMatch`` answers (to a spectator)."""
        document = msgspec.Raw(ENCODER.encode(self.exported))
        imported = self.engine.handle(rules_api.ImportMatch(game=GAME, document=document))
        shown = self.engine.handle(
            rules_api.ShowView(game=GAME, state=imported.progress.state, seat=None)
        )
        return match_api.ImportedMatch(
            match_id=IMPORTED_MATCH_ID,
            tokens=[fake_token(f"imported-seat{seat}") for seat in range(imported.seats)],
            match=match_api.MatchInfo(
                match_id=IMPORTED_MATCH_ID,
                table_id=None,
                game=GAME,
                players=imported.players,
                version=len(imported.events),
                status=status_of(imported.progress.result),
                to_move=imported.progress.to_move,
                you=None,
                view=msgspec.Raw(ENCODER.encode(shown)),
                result=imported.progress.result,
                bots={},
                hosting=NO_HOSTING,
                clock=None,
            ),
        )


def _sse(version: int, event: str, item: msgspec.Struct) -> ServerSentEventMessage:
    return ServerSentEventMessage(id=version, event=event, data=ENCODER.encode(item).decode())


def _stream(messages: list[ServerSentEventMessage]) -> str:
    """A feed's bytes as ``FeedHub.follow`` sends them: the retry hint, then the messages."""
    opening = ServerSentEventMessage(data=None, retry=RETRY_MS)
    return b"".join(message.encode() for message in [opening, *messages]).decode()
