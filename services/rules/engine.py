"""Answers rules requests with the game engines: decoding, calling the pure functions, encoding.

This is the only place that turns opaque bytes into game Structs and back, so the engines stay
pure and the other services stay free of game code.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any, Union

import msgspec

from services.rules.games.contract import Game, Outcome, Rejection, struct_tags
from services.rules.games.playout import option_variants, played_events
from services.rules.games.registry import EXCHANGE_FORMATS
from shared.domain import rules_api as api
from shared.domain.hosting import (
    BOTS,
    HOSTING_EVENT_TYPES,
    HOSTING_EVENTS,
    HostingEvent,
    MatchForfeited,
    forfeit_result,
    leave_policies,
    timeout_policies,
)
from shared.domain.match_file import FORMAT, MatchFile, MatchFileResult, is_match_file
from shared.domain.messages import summary


def event_types(game: Game) -> list[str]:
    """The types of the events a game's matches record: what feeds and webhooks name them (the
    game's own, and what every match records about its seats)."""
    return sorted({*struct_tags(game.event_type), *HOSTING_EVENT_TYPES})


SAMPLE_SEEDS = 64
"""How many seeds the event samples try (each with every option variant and seat count)
before a type no match produced is an error: every game meets all of its types in a few."""


class UnknownGame(LookupError):
    pass


class GameCodec:
    """Encoders and decoders of one game's actions, events and states, built once."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.action_decoder = msgspec.json.Decoder(game.action_type)
        # A match's log holds its seats' events too (``shared.domain.hosting``): decoded beside the
        # game's, skipped by every fold, shown to everyone as they are.
        self.event_decoder = msgspec.json.Decoder(Union[game.event_type, HostingEvent])  # noqa: UP007
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
        return [
            msgspec.Raw(encode(event if isinstance(event, HOSTING_EVENTS) else redact(event, seat)))
            for event in events
        ]

    def evolve(self, state: Any, event: Any) -> Any:
        """The game's ``evolve``, which a seat's event leaves alone."""
        return state if isinstance(event, HOSTING_EVENTS) else self.game.evolve(state, event)

    def fold(self, events: list[Any], state: Any = None) -> Any:
        for event in events:
            state = self.evolve(state, event)
        return state

    def raw_actions(self, actions: list[Any]) -> list[msgspec.Raw]:
        """Actions as the JSON a ``ListLegalActions`` reply carries, one by one."""
        return [msgspec.Raw(self.json.encode(action)) for action in actions]

    def samples(self) -> api.GameSamples:
        """The spectator's redaction of the first event of each type in seeded random matches
        (varying options and seat counts until every type occurred), and the first match's end.
        Redacted as met: only what the published streams carry ever leaves."""
        game = self.game
        wanted = set(struct_tags(game.event_type))
        found: dict[str, api.EventSample] = {}
        ends: list[tuple[Any, int]] = []
        for seats, seed, options in _sample_tables(game):
            for version, played in enumerate(
                played_events(game, seats, random.Random(seed), options), 1
            ):
                event, state = played
                name = type(event).__name__
                if name not in found:
                    redacted = self.json.encode(game.redact(event, None))
                    found[name] = api.EventSample(
                        name, version, summary(type(event)), msgspec.Raw(redacted)
                    )
            ends.append((game.result(state), version))
            if wanted <= found.keys():
                outcome, last_version = ends[0]
                return api.GameSamples(
                    game=game.name,
                    events=[found[name] for name in sorted(wanted)],
                    result=msgspec.to_builtins(outcome),
                    last_version=last_version,
                )
        raise RuntimeError(f"{game.name}: no sample of {sorted(wanted - found.keys())}")

    def progress(self, state: Any, events: Sequence[Any] = ()) -> api.Progress:
        """The match at ``state``, reached by ``events`` (a forfeit among them ended it)."""
        to_move, result = self.ending(state, _forfeit(events))
        return api.Progress(state=self.msgpack.encode(state), to_move=to_move, result=result)

    def ending(
        self, state: Any, forfeit: dict[str, Any] | None
    ) -> tuple[list[int], dict[str, Any] | None]:
        """Who is to move at ``state`` and the result, if any: a forfeit's, once there is one
        (then no one moves), else the game's."""
        if forfeit is not None:
            return [], forfeit
        outcome: Outcome | None = self.game.result(state)
        return self.game.to_move(state), None if outcome is None else msgspec.to_builtins(outcome)

    def replayed_span(
        self, state: Any, events: list[Any], seat: int | None, full: bool
    ) -> list[api.Replayed]:
        """The match at ``state``, then after each event, each view encoded before the next
        event may change the state in place."""
        evolve = self.evolve
        shown = [self.replayed(state, seat, full)]
        forfeit = None
        for event in events:
            state = evolve(state, event)
            if isinstance(event, MatchForfeited):
                forfeit = event.result
            shown.append(self.replayed(state, seat, full, forfeit))
        return shown

    def replayed(
        self, state: Any, seat: int | None, full: bool, forfeit: dict[str, Any] | None = None
    ) -> api.Replayed:
        to_move, result = self.ending(state, forfeit)
        encode = self.json.encode
        return api.Replayed(
            view=msgspec.Raw(encode(self.game.view(state, seat))),
            to_move=to_move,
            result=result,
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
                "players_requirements": msgspec.to_builtins(list(codec.game.players_requirements)),
                "options": msgspec.to_builtins(list(codec.game.options)),
                "action_schema": msgspec.json.schema(codec.game.action_type),
                "event_types": event_types(codec.game),
                "bots": msgspec.to_builtins(BOTS.get(codec.game.name, ())),
                "timeout_policies": msgspec.to_builtins(
                    timeout_policies(codec.game.name, cooperative=codec.game.cooperative)
                ),
                "leave_policies": msgspec.to_builtins(
                    leave_policies(cooperative=codec.game.cooperative)
                ),
            }
            for codec in self.codecs.values()
        ]

    @cached_property
    def event_samples(self) -> list[api.GameSamples]:
        return [codec.samples() for codec in self.codecs.values()]

    def handle(self, request: api.RulesRequest) -> Any:
        """Answer one request: a reply Struct, a ``Rejected``, or plain builtins."""
        if isinstance(request, api.Ping):
            return True
        if isinstance(request, api.Catalogue):
            return self.catalogue
        if isinstance(request, api.EventSamples):
            return self.event_samples
        codec = self.codec(request.game)
        game = codec.game
        match request:
            case api.Decide(state=state_bytes, seat=seat, action=raw_action):
                try:
                    action = codec.action_decoder.decode(raw_action)
                except msgspec.ValidationError as error:  # the contract's schema says the same
                    return api.Rejected("invalid_request", str(error))
                action = _stamp_server_time(action)
                state = codec.state(state_bytes)
                decided = game.decide(state, seat, action)
                if isinstance(decided, Rejection):
                    return api.Rejected(decided.code, decided.detail)
                actor_events = codec.redacted(decided, seat)
                public_events = codec.redacted(decided, None)
                for event in decided:
                    state = game.evolve(state, event)
                progress = codec.progress(state)
                return api.Decided(
                    events=codec.encoded(decided),
                    actor_events=actor_events,
                    public_events=public_events,
                    progress=progress,
                    actor_view=msgspec.Raw(codec.json.encode(game.view(state, seat))),
                    legal_actions={
                        seat: codec.raw_actions(game.legal_actions(state, seat))
                        for seat in game.acting(state, progress.to_move)
                    },
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
                events = codec.events(raws)
                return codec.progress(codec.fold(game.as_folded(events)), events)
            case api.ReplaySpan(state=state_bytes, events=raws, seat=seat, full=full):
                return codec.replayed_span(codec.state(state_bytes), codec.events(raws), seat, full)
            case api.ExportMatch(events=raws, players=players, format=name):
                played = [e for e in codec.events(raws) if not isinstance(e, HOSTING_EVENTS)]
                return self.export(game, played, players, name)
            case api.ImportMatch(document=document, snapshot_every=every):
                return self.import_(codec, document, every)
            case api.EndEarly(seats=seats, forfeited=forfeited, reason=reason):
                return forfeit_result(seats, forfeited, reason, cooperative=game.cooperative)
        raise TypeError(f"unhandled request {type(request).__name__}")

    @staticmethod
    def export(game: Game, events: list[Any], players: list[str], name: str | None) -> Any:
        """The match in the game's community format; ``None`` when asked for the game's own
        format and it has none (the caller then writes a playtable match file)."""
        exchange = EXCHANGE_FORMATS.get(game.name)
        if exchange is None and name is None:
            return None
        if exchange is None or name not in {None, exchange.name}:
            known = "playtable" if exchange is None else f"playtable or {exchange.name}"
            return api.Rejected(
                "export_unsupported", f"{game.title} exports as {known}, not {name}"
            )
        return exchange.module.export_events(events, players)

    @staticmethod
    def import_(codec: GameCodec, document: msgspec.Raw, snapshot_every: int) -> Any:
        try:
            decoded = msgspec.json.decode(document)
        except msgspec.DecodeError as error:
            return api.Rejected("invalid_document", f"not JSON: {error}")
        if is_match_file(decoded):
            read = _read_match_file(codec, document)
        else:
            read = _replay_exchange_document(codec, decoded)
        if isinstance(read, api.Rejected):
            return read
        return _imported(codec, read, snapshot_every)


def _sample_tables(game: Game) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """The seat count, seed and options of each sample match, until ``SAMPLE_SEEDS`` run out:
    every option variant and seat count the game takes, then the game's own sample tables,
    seed after seed."""
    for seed in range(SAMPLE_SEEDS):
        for options in option_variants(game):
            for seats in range(game.min_players, game.max_players + 1):
                if not isinstance(game.resolve_options(options, seats), Rejection):
                    yield seats, seed, options
        for seats, options in game.sample_tables:
            yield seats, seed, dict(options)


class _ReadMatch(msgspec.Struct, frozen=True):
    """A match read from a file: its events (game Structs), who caused each, where set-up ends."""

    options: dict[str, Any]
    players: list[str]
    events: list[Any]
    actors: list[int | None]
    set_up: int
    declared: MatchFileResult | None = None
    declared_status: str | None = None


def _invalid(detail: str) -> api.Rejected:
    return api.Rejected("invalid_document", detail)


def _replay_exchange_document(codec: GameCodec, document: Any) -> _ReadMatch | api.Rejected:
    """A community-format game (hanab.live, Carcassonne turns): its actions decided again."""
    game = codec.game
    exchange = EXCHANGE_FORMATS.get(game.name)
    if exchange is None:
        return api.Rejected(
            "import_unsupported",
            f'{game.title} imports playtable match files only ("format": "{FORMAT}")',
        )
    try:
        imported = exchange.module.import_game(document)
    except (ValueError, KeyError, TypeError, msgspec.ValidationError) as error:
        return _invalid(f"not a valid game document: {error}")
    seats = len(imported.players)
    resolved = game.resolve_options(imported.options, seats)
    if isinstance(resolved, Rejection):
        return api.Rejected(resolved.code, resolved.detail)
    events = game.setup(resolved, seats, random.Random(0))
    actors: list[int | None] = [None] * len(events)
    set_up = len(events)
    state = game.fold(events)
    acting = getattr(imported, "actors", None) or [None] * len(imported.actions)
    for number, (action, actor) in enumerate(zip(imported.actions, acting, strict=True), 1):
        to_move = game.to_move(state)
        seat = actor if actor is not None else to_move[0] if to_move else -1
        decided = game.decide(state, seat, action)
        if isinstance(decided, Rejection):
            return _invalid(f"action {number} cannot be replayed: {decided.detail}")
        events.extend(decided)
        actors.extend([seat] * len(decided))
        state = game.fold(decided, state)
    check = getattr(exchange.module, "disagreement", None)
    if check is not None and (found := check(document, events)):
        return _invalid(f"the document does not agree with its replay: {found}")
    return _ReadMatch(resolved, imported.players, events, actors, set_up)


def _read_match_file(codec: GameCodec, document: msgspec.Raw) -> _ReadMatch | api.Rejected:
    """A playtable match file: its events decoded as the game's own (folded later)."""
    try:
        match = msgspec.json.decode(document, type=MatchFile)
    except msgspec.ValidationError as error:
        return _invalid(f"not a valid playtable match file: {error}")
    game = codec.game
    if match.game != game.name:
        return _invalid(f"the file holds a {match.game!r} match, not {game.name!r}")
    resolved = game.resolve_options(match.options, len(match.players))
    if isinstance(resolved, Rejection):
        return api.Rejected(resolved.code, resolved.detail)
    events = []
    for number, entry in enumerate(match.events, start=1):
        if entry.version != number:
            return _invalid(f"event {number} has version {entry.version}: versions run 1..n")
        try:
            event = codec.event_decoder.decode(entry.data)
        except (msgspec.ValidationError, msgspec.DecodeError) as error:
            return _invalid(f"event {number} is not a {game.title} event: {error}")
        if type(event).__name__ != entry.type:
            return _invalid(f"event {number} is a {type(event).__name__}, not {entry.type}")
        events.append(event)
    actors = [entry.seat for entry in match.events]
    set_up = next((n for n, seat in enumerate(actors) if seat is not None), len(actors))
    dealt = getattr(events[0], "seats", None) if events else None  # every game's first event
    if isinstance(dealt, int) and dealt != len(match.players):
        return _invalid(f"{match.events[0].type} deals {dealt} seats, not {len(match.players)}")
    if game.deal_problem is not None:
        problem = game.deal_problem(events[:set_up], resolved, len(match.players))
        if problem:
            return _invalid(f"the set-up is not a deal of the file's options: {problem}")
    return _ReadMatch(
        resolved, match.players, events, actors, max(set_up, 1), match.result, match.status
    )


def _imported(codec: GameCodec, read: _ReadMatch, snapshot_every: int) -> Any:
    """Fold the events (any failure refuses the file), snapshotting the state on the way."""
    if not read.events:
        return _invalid("the match has no events")
    snapshots: list[api.StateSnapshot] = []
    state = None
    viewers = [None, *range(len(read.players))]
    try:
        read_as = codec.game.as_folded(read.events)  # a log recorded before rules versions
        for version, (event, folded) in enumerate(zip(read.events, read_as, strict=True), 1):
            state = codec.evolve(state, folded)
            if version == read.set_up or (snapshot_every and version % snapshot_every == 0):
                snapshots.append(api.StateSnapshot(version, codec.msgpack.encode(state)))
            for viewer in viewers:
                codec.redacted([event], viewer)
            if version >= read.set_up:  # every version a replay may show, to every viewer
                _shown(codec, state, viewers)
        progress = codec.progress(state, read.events)
        for seat in progress.to_move:
            codec.raw_actions(codec.game.legal_actions(state, seat))
        played = [event for event in read.events if not isinstance(event, HOSTING_EVENTS)]
        RulesEngine.export(codec.game, played, read.players, None)
    except Exception as error:  # a forged log may break any engine invariant
        return _invalid(f"the events do not replay: {type(error).__name__}: {error}")
    problem = _disagreement(read, progress, len(read.players))
    if problem:
        return _invalid(problem)
    if not snapshots or snapshots[-1].version != len(read.events):
        snapshots.append(api.StateSnapshot(len(read.events), progress.state))
    return api.Imported(
        options=read.options,
        seats=len(read.players),
        players=read.players,
        events=codec.encoded(read.events),
        progress=progress,
        actors=read.actors,
        snapshots=snapshots,
    )


def _shown(codec: GameCodec, state: Any, viewers: list[int | None]) -> None:
    """Show ``state`` to every viewer, as the match service will once the file is imported:
    a forged log whose states the game cannot show (a deal short of cards, a seat that is not
    in it) raises here, and is refused, rather than failing every read of the match later."""
    for viewer in viewers:
        codec.json.encode(codec.game.view(state, viewer))


def _disagreement(read: _ReadMatch, progress: api.Progress, seats: int) -> str | None:
    """How the folded match contradicts what the file declares, if it does."""
    if any(not 0 <= seat < seats for seat in progress.to_move):
        return f"seat(s) {progress.to_move} to move, but the file has {seats} players"
    if progress.result is not None and len(progress.result["scores"]) != seats:
        return f"the events score {len(progress.result['scores'])} seats, not {seats}"
    if read.declared_status is None:
        return None
    folded_status = "running" if progress.result is None else "finished"
    if read.declared_status != folded_status:
        return f"status {read.declared_status!r}, but the events leave the match {folded_status}"
    declared = None if read.declared is None else msgspec.to_builtins(read.declared)
    if declared != progress.result:
        return f"result {declared}, but the events give {progress.result}"
    return None


def _forfeit(events: Sequence[Any]) -> dict[str, Any] | None:
    """The result of the match's forfeit, if ``events`` end with one (nothing follows it)."""
    for event in reversed(events):
        if isinstance(event, MatchForfeited):
            return event.result
    return None


def _stamp_server_time(action: Any) -> Any:
    """Actions that time something (a story told against the stopwatch) carry the server's
    wall clock, whatever the client sent: the time then lives in the events, so replays need
    no clock. Wall time, not monotonic, because successive requests may reach other workers."""
    if hasattr(action, "server_time_ms"):
        return msgspec.structs.replace(action, server_time_ms=time.time_ns() // 1_000_000)
    return action
