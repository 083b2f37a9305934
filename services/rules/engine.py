"""Answers rules requests with the game engines: decoding, calling the pure functions, encoding.

This is the only place that turns opaque bytes into game Structs and back, so the engines stay
pure and the other services stay free of game code.
"""

from __future__ import annotations

import random
import time
from functools import cached_property
from typing import Any

import msgspec

from services.rules.games.contract import Game, Outcome, Rejection
from shared import rules_api as api


class UnknownGame(LookupError):
    pass


class GameCodec:
    """Encoders and decoders of one game's actions, events and states, built once."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.action_decoder = msgspec.json.Decoder(game.action_type)
        self.event_decoder = msgspec.json.Decoder(game.event_type)
        self.state_decoder = msgspec.msgpack.Decoder(game.state_type)
        self.json = msgspec.json.Encoder()
        self.msgpack = msgspec.msgpack.Encoder()

    def state(self, data: bytes) -> Any:
        return self.state_decoder.decode(data)

    def events(self, raws: list[msgspec.Raw]) -> list[Any]:
        decode = self.event_decoder.decode
        return [decode(raw) for raw in raws]

    def encoded(self, events: list[Any]) -> list[api.EncodedEvent]:
        encode = self.json.encode
        return [
            api.EncodedEvent(type(event).__name__, msgspec.Raw(encode(event))) for event in events
        ]

    def redacted(self, events: list[Any], seat: int | None) -> list[msgspec.Raw]:
        redact, encode = self.game.redact, self.json.encode
        return [msgspec.Raw(encode(redact(event, seat))) for event in events]

    def progress(self, state: Any) -> api.Progress:
        outcome: Outcome | None = self.game.result(state)
        return api.Progress(
            state=self.msgpack.encode(state),
            to_move=self.game.to_move(state),
            result=None if outcome is None else msgspec.to_builtins(outcome),
        )

    def replayed(self, state: Any, seat: int | None, full: bool) -> api.Replayed:
        outcome: Outcome | None = self.game.result(state)
        encode = self.json.encode
        return api.Replayed(
            view=msgspec.Raw(encode(self.game.view(state, seat))),
            to_move=self.game.to_move(state),
            result=None if outcome is None else msgspec.to_builtins(outcome),
            state=msgspec.Raw(encode(msgspec.to_builtins(state) if full else None)),
        )


class RulesEngine:
    """Maps each rules request onto the pure functions of the game it names."""

    def __init__(self, games: dict[str, Game]) -> None:
        self.codecs = {name: GameCodec(game) for name, game in games.items()}

    def codec(self, name: str) -> GameCodec:
        try:
            return self.codecs[name]
        except KeyError:
            raise UnknownGame(name) from None

    @cached_property
    def catalogue(self) -> list[dict[str, Any]]:
        return [
            {
                "name": codec.game.name,
                "title": codec.game.title,
                "description": codec.game.description,
                "min_players": codec.game.min_players,
                "max_players": codec.game.max_players,
                "options": msgspec.to_builtins(list(codec.game.options)),
                "action_schema": msgspec.json.schema(codec.game.action_type),
            }
            for codec in self.codecs.values()
        ]

    def handle(self, request: api.RulesRequest) -> Any:
        """Answer one request: a reply Struct, a ``Rejected``, or plain builtins."""
        if isinstance(request, api.Catalogue):
            return self.catalogue
        codec = self.codec(request.game)
        game = codec.game
        match request:
            case api.Decide(state=state_bytes, seat=seat, action=raw_action):
                try:
                    action = codec.action_decoder.decode(raw_action)
                except msgspec.ValidationError as error:
                    return api.Rejected("invalid_action", str(error))
                action = _stamp_server_time(action)
                state = codec.state(state_bytes)
                decided = game.decide(state, seat, action)
                if isinstance(decided, Rejection):
                    return api.Rejected(decided.code, decided.detail)
                actor_events = codec.redacted(decided, seat)
                public_events = codec.redacted(decided, None)
                for event in decided:
                    state = game.evolve(state, event)
                return api.Decided(
                    events=codec.encoded(decided),
                    actor_events=actor_events,
                    public_events=public_events,
                    progress=codec.progress(state),
                )
            case api.ResolveOptions(options=options, seats=seats):
                resolved = game.resolve_options(options, seats)
                if isinstance(resolved, Rejection):
                    return api.Rejected(resolved.code, resolved.detail)
                return resolved
            case api.SetUp(options=options, seats=seats, seed=seed):
                resolved = game.resolve_options(options, seats)
                if isinstance(resolved, Rejection):
                    return api.Rejected(resolved.code, resolved.detail)
                events = game.setup(resolved, seats, random.Random(seed))
                return api.SetUpDone(
                    options=resolved,
                    events=codec.encoded(events),
                    public_events=codec.redacted(events, None),
                    progress=codec.progress(game.fold(events)),
                )
            case api.ShowView(state=state_bytes, seat=seat):
                return game.view(codec.state(state_bytes), seat)
            case api.ListLegalActions(state=state_bytes, seat=seat):
                return game.legal_actions(codec.state(state_bytes), seat)
            case api.RedactEvents(events=raws, seat=seat):
                return codec.redacted(codec.events(raws), seat)
            case api.Fold(events=raws):
                return codec.progress(game.fold(codec.events(raws)))
            case api.ReplayTo(state=state_bytes, events=raws, seat=seat, full=full):
                start = None if state_bytes is None else codec.state(state_bytes)
                return codec.replayed(game.fold(codec.events(raws), start), seat, full)
            case api.ExportMatch(events=raws, players=players):
                return self.export(game, codec.events(raws), players)
            case api.ImportMatch(document=document):
                return self.import_(codec, document)
        raise TypeError(f"unhandled request {type(request).__name__}")

    @staticmethod
    def export(game: Game, events: list[Any], players: list[str]) -> Any:
        exporter = _exchange_format(game.name)
        if exporter is None:
            return api.Rejected("export_unsupported", f"{game.title} has no export format yet")
        return exporter.export_events(events, players)

    @staticmethod
    def import_(codec: GameCodec, document: msgspec.Raw) -> Any:
        exchange = _exchange_format(codec.game.name)
        if exchange is None:
            return api.Rejected(
                "import_unsupported", f"{codec.game.title} has no import format yet"
            )
        try:
            imported = exchange.import_game(msgspec.json.decode(document))
        except (ValueError, KeyError, TypeError, msgspec.ValidationError) as error:
            return api.Rejected("invalid_document", f"not a valid game document: {error}")
        game = codec.game
        seats = len(imported.players)
        resolved = game.resolve_options(imported.options, seats)
        if isinstance(resolved, Rejection):
            return api.Rejected(resolved.code, resolved.detail)
        events = game.setup(resolved, seats, random.Random(0))
        state = game.fold(events)
        for number, action in enumerate(imported.actions, start=1):
            seat = game.to_move(state)[0] if game.to_move(state) else -1
            decided = game.decide(state, seat, action)
            if isinstance(decided, Rejection):
                return api.Rejected(
                    "invalid_document", f"action {number} cannot be replayed: {decided.detail}"
                )
            events.extend(decided)
            for event in decided:
                state = game.evolve(state, event)
        return api.Imported(
            options=resolved,
            seats=seats,
            players=imported.players,
            events=codec.encoded(events),
            progress=codec.progress(state),
        )


def _stamp_server_time(action: Any) -> Any:
    """Actions that time something (a story told against the stopwatch) carry the server's
    wall clock, whatever the client sent: the time then lives in the events, so replays need
    no clock. Wall time, not monotonic, because successive requests may reach other workers."""
    if hasattr(action, "server_time_ms"):
        return msgspec.structs.replace(action, server_time_ms=time.time_ns() // 1_000_000)
    return action


def _exchange_format(game_name: str) -> Any:
    """The module that moves a game in and out of its community's file format, if any.

    Such a module offers ``export_events(events, players) -> dict`` and
    ``import_game(document) -> (players, options, actions)`` raising ``ValueError`` when the
    document is not one it reads.
    """
    if game_name == "hanabi":
        from services.rules.games import hanabi_live

        return hanabi_live
    if game_name == "carcassonne":
        from services.rules.games import carcassonne

        return carcassonne
    return None
