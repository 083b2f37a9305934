"""The Hanabi match the examples follow, played in-process by the rules engine from a fixed
seed and kept as the match service keeps one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from services.match import schemas as match_api
from services.rules.engine import RulesEngine
from services.rules.games.hanabi.state import DiscardCard, GiveRankClue, PlayCard
from shared.domain import rules_api
from tools.contract.examples.values import (
    ENCODER,
    GAME,
    MATCH_CREATED_S,
    PLAYERS,
    SECONDS_PER_MOVE,
    SEED,
    at,
)


class HanabiMatch:
    """A match played in-process by the rules engine, kept as the match service keeps one: its
    stored events, the seat behind each (None: the set-up), when each was recorded, and its
    progress after every move."""

    def __init__(self, engine: RulesEngine, options: dict[str, Any]) -> None:
        done = engine.handle(
            rules_api.SetUp(game=GAME, options=options, seats=len(PLAYERS), seed=SEED)
        )
        self.engine = engine
        self.events: list[rules_api.EncodedEvent] = list(done.events)
        self.actors: list[int | None] = [None] * len(done.events)
        self.moves = [0] * len(done.events)
        self.progress_at = {self.version: done.progress}

    @property
    def version(self) -> int:
        return len(self.events)

    @property
    def progress(self) -> rules_api.Progress:
        return self.progress_at[self.version]

    def legal_actions(self, seat: int) -> list[Any]:
        state = self.progress.state
        return self.engine.handle(rules_api.ListLegalActions(game=GAME, state=state, seat=seat))

    def act(self, seat: int, action: Any) -> rules_api.Decided:
        """Play ``action``, which must be one the engine lists as legal (else the story broke)."""
        if action not in self.legal_actions(seat):
            raise ValueError(f"{action} is not legal for seat {seat} at version {self.version}")
        decided = self.engine.handle(
            rules_api.Decide(
                game=GAME,
                state=self.progress.state,
                seat=seat,
                action=msgspec.Raw(ENCODER.encode(action)),
            )
        )
        move = self.moves[-1] + 1
        self.events += decided.events
        self.actors += [seat] * len(decided.events)
        self.moves += [move] * len(decided.events)
        self.progress_at[self.version] = decided.progress
        return decided

    def recorded_at(self, version: int) -> str:
        """The events of one move commit together, so they share its time."""
        return at(MATCH_CREATED_S + SECONDS_PER_MOVE * self.moves[version - 1])

    def redacted(self, seat: int | None) -> list[msgspec.Raw]:
        """Every event as ``seat`` may see it (None: a spectator)."""
        data = [event.data for event in self.events]
        return self.engine.handle(rules_api.RedactEvents(game=GAME, events=data, seat=seat))

    def view(self, version: int, seat: int | None) -> msgspec.Raw:
        state = self.progress_at[version].state
        shown = self.engine.handle(rules_api.ShowView(game=GAME, state=state, seat=seat))
        return msgspec.Raw(ENCODER.encode(shown))

    def event_items(self, seat: int | None, first: int, last: int) -> list[match_api.MatchEvent]:
        """Events ``first`` to ``last`` as ``listMatchEvents`` gives them to ``seat``."""
        redacted = self.redacted(seat)
        return [
            match_api.MatchEvent(
                game=GAME,
                version=version,
                type=self.events[version - 1].type,
                data=redacted[version - 1],
                seat=self.actors[version - 1],
                recorded_at=self.recorded_at(version),
            )
            for version in range(first, last + 1)
        ]


@dataclass(frozen=True)
class Turn:
    """A move as its seat submitted it: the version it was chosen at, what the seat could do
    then, what it did, and the rules' answer."""

    seat: int
    version: int
    legal: list[Any]
    action: Any
    decided: rules_api.Decided

    @classmethod
    def take(cls, match: HanabiMatch, seat: int, action: Any) -> Turn:
        version, legal = match.version, match.legal_actions(seat)
        return cls(seat, version, legal, action, match.act(seat, action))

    @property
    def version_after(self) -> int:
        return self.version + len(self.decided.events)


def play(engine: RulesEngine, options: dict[str, Any]) -> tuple[HanabiMatch, Turn]:
    """Alice clues Bob's 1s, Bob plays one (the move the match examples follow), Alice
    discards, then both play blind, oldest card first, until the third fuse burns."""
    match = HanabiMatch(engine, options)
    clue = match.act(0, GiveRankClue(target=1, rank=1))
    touched = msgspec.json.decode(clue.events[0].data)["touched"]
    bobs_play = Turn.take(match, 1, PlayCard(card=touched[0]))
    match.act(0, _first(DiscardCard, match.legal_actions(0)))
    while match.progress.to_move:
        seat = match.progress.to_move[0]
        match.act(seat, _first(PlayCard, match.legal_actions(seat)))
    return match, bobs_play


def _first(kind: type, actions: list[Any]) -> Any:
    return next(action for action in actions if isinstance(action, kind))
