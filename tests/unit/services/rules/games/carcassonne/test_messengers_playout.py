"""Random Carcassonne playouts with The Messengers: invariants after every move.

The checker keeps its own account of the track (figures, preferences, the figures moved in
the current scoring step) from the events and the rules, and asserts that a message is drawn
exactly when the rules say so.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import msgspec
import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne import turns as carcassonne_turns
from services.rules.games.carcassonne.messengers import (
    MESSAGES,
    CarryOutMessage,
    ChooseFigure,
    FigureAdvanced,
    FiguresSummed,
    MessageDrawn,
    MessageResolved,
    MessagesShuffled,
    PreferenceSet,
    SetScoringPreference,
    TakeMessagePoints,
)
from services.rules.games.carcassonne.rules import legal_actions
from services.rules.games.carcassonne.state import (
    FOLLOWERS_PER_PLAYER,
    CarcassonneState,
    FeatureScored,
    GameOver,
    TilePlaced,
)
from services.rules.games.playout import random_game, random_playout

OPTIONS = {"messengers": True}


class TrackInvariants:
    """Checks run after every move of a playout with The Messengers."""

    def __init__(self, seats: int):
        self.seats = seats
        self.figures = [0] * (2 * seats)
        self.preferences: list[int | None] = [None] * seats
        self.moved: set[int] = set()
        self.drawn: int | None = None
        self.summed = False
        self.seen: Counter = Counter()

    def preferred(self, seat: int) -> int:
        preference = self.preferences[seat]
        if preference is not None:
            return preference
        return 1 if self.figures[2 * seat + 1] < self.figures[2 * seat] else 0

    def __call__(self, state, seat, action, events) -> None:
        active = state.seat
        self.seen[type(action).__name__] += 1
        drawn = [event for event in events if isinstance(event, MessageDrawn)]
        assert len(drawn) <= 1, "one message per scoring step or message"
        if isinstance(action, SetScoringPreference):
            assert events == [PreferenceSet(seat, action.figure)]
            self.preferences[seat] = action.figure
        for event in events:
            self.check_event(event, seat, action)
        if isinstance(action, ChooseFigure) and not state.messengers.pending:
            expected = any(self.figures[2 * seat + f] % 5 == 0 for f in self.moved)
            assert bool(drawn) is expected, (self.figures, self.moved, events)
        if isinstance(action, CarryOutMessage | TakeMessagePoints):
            resolved = events[0]
            assert isinstance(resolved, MessageResolved) and resolved.message == self.drawn
            landed = resolved.points and self.figures[2 * seat + action.figure] % 5 == 0
            assert bool(drawn) is bool(landed), events
            self.seen[f"message {resolved.message}"] += 1
        if drawn:
            assert drawn[0].seat == seat == active, "only the active player draws"
            self.drawn = drawn[0].message
            self.seen["drawn"] += 1
        self.check_state(state)

    def check_event(self, event, seat: int, action) -> None:
        if isinstance(event, TilePlaced):
            self.moved = set()
        elif isinstance(event, FigureAdvanced):
            assert not self.summed and event.points > 0
            if event.seat == seat:
                assert isinstance(action, ChooseFigure | CarryOutMessage | TakeMessagePoints)
                assert event.figure == action.figure
                if isinstance(action, ChooseFigure):
                    self.moved.add(event.figure)
            else:
                assert event.figure == self.preferred(event.seat), "standing preference"
            self.figures[2 * event.seat + event.figure] += event.points
        elif isinstance(event, MessageResolved):
            assert event.seat == seat
            if event.took_points:
                assert event.points == MESSAGES[event.message].instead_points
        elif isinstance(event, FiguresSummed):
            assert not self.summed
            assert event.totals == [
                self.figures[2 * s] + self.figures[2 * s + 1] for s in range(self.seats)
            ]
            self.summed = True
        elif isinstance(event, MessageDrawn):
            assert not self.summed, "no message in the final scoring"
        elif isinstance(event, FeatureScored):
            assert event.final is self.summed, "the figures are summed before final scoring"

    def check_state(self, state) -> None:
        expansion = state.messengers
        figures = expansion.figures
        for seat in range(self.seats):
            assert state.scores[seat] == figures[2 * seat] + figures[2 * seat + 1]
        if not self.summed:
            assert figures == self.figures
        out = [message for message in (expansion.message, expansion.held) if message]
        assert sorted([*expansion.stack, *out]) == sorted(MESSAGES), (
            "every message is in the stack, drawn, or message 4 during its extra turn"
        )
        on_board = Counter(holder & 7 for held in state.holders if held for holder in held)
        for seat in range(self.seats):
            assert state.supply[seat] + on_board[seat] == FOLLOWERS_PER_PLAYER
        if state.finished:
            assert self.summed and figures[1::2] == [0] * self.seats
            assert not expansion.pending and not expansion.message
        else:
            assert legal_actions(state, state.seat), "the active player can always act"


def play_eagerly(seats: int, rng: random.Random, check: TrackInvariants):
    """A playout that seeks messages, so that every one comes up often: among a few sampled
    legal actions the active player takes one that draws a message, else one that scores for
    them, else a random one. Now and then a random seat changes its preference, in or out of
    its turn."""
    state = GAME.fold(GAME.setup(GAME.resolve_options(OPTIONS, seats), seats, rng))
    while GAME.result(state) is None:
        if rng.random() < 0.03:
            seat = rng.randrange(seats)
            action = rng.choice(GAME.legal_actions(state, seat))
            events = GAME.decide(state, seat, action)
        else:
            seat = GAME.to_move(state)[0]
            legal = GAME.legal_actions(state, seat)
            tried = [
                (a, GAME.decide(state, seat, a)) for a in rng.sample(legal, min(24, len(legal)))
            ]
            action, events = max(tried, key=lambda pair: eagerness(pair[1], seat))
        assert isinstance(events, list), (action, events)
        state = GAME.fold(events, state)
        check(state, seat, action, events)
    return state


def eagerness(events: list, seat: int) -> int:
    if any(isinstance(event, MessageDrawn) for event in events):
        return 3
    if any(isinstance(event, MessageResolved) and not event.took_points for event in events):
        return 2
    return any(isinstance(event, FeatureScored) and seat in event.seats for event in events)


def test_three_hundred_random_playouts_keep_the_track_invariants():
    rng = random.Random(2024)
    seen: Counter = Counter()
    for number in range(300):
        seats = 2 + number % 5
        check = TrackInvariants(seats)
        state, outcome, _ = random_playout(GAME, seats, rng, OPTIONS, check=check)
        assert check.summed and outcome.scores == state.scores
        assert outcome.winners == [s for s in range(seats) if state.scores[s] == max(state.scores)]
        seen += check.seen
    assert seen["drawn"] > 10 and seen["SetScoringPreference"] > 100
    assert seen["ChooseFigure"] > 100 and seen["CarryOutMessage"] > 5
    assert seen["TakeMessagePoints"] > 5


def test_playouts_seeking_scorings_draw_every_message_and_keep_the_invariants():
    rng = random.Random(7)
    seen: Counter = Counter()
    for number in range(60):
        check = TrackInvariants(2 + number % 5)
        play_eagerly(check.seats, rng, check)
        seen += check.seen
    assert all(seen[f"message {number}"] > 5 for number in MESSAGES), seen
    assert seen["SetScoringPreference"] > 100 and seen["CarryOutMessage"] > 50
    assert seen["TakeMessagePoints"] > 10


@pytest.mark.parametrize("seats", [2, 6])
def test_state_and_events_survive_encoding_and_redaction(seats):
    events, state = random_game(GAME, seats, random.Random(seats), OPTIONS)
    decoder = msgspec.json.Decoder(GAME.event_type)
    assert [decoder.decode(msgspec.json.encode(event)) for event in events] == events
    assert GAME.fold(events) == state
    for codec in (msgspec.msgpack, msgspec.json):
        assert codec.decode(codec.encode(state), type=CarcassonneState) == state
    shuffled = next(event for event in events if isinstance(event, MessagesShuffled))
    for seat in (None, *range(seats)):
        redacted = [GAME.redact(event, seat) for event in events]
        assert b'"order":null' in msgspec.json.encode(GAME.redact(shuffled, seat))
        assert sum(a != b for a, b in zip(redacted, events, strict=True)) == 2, "only setup"
    turns = carcassonne_turns.export_turns(events)
    totals = [0] * seats
    for turn in turns:
        for seat, points in enumerate(turn.get("points", ())):
            totals[seat] += points
    assert totals == turns[-1]["scores"] == GAME.result(state).scores
    assert isinstance(events[-1], GameOver)


@pytest.mark.speed  # a speed floor: left out of the default run
def test_random_two_player_games_per_second_with_and_without_messengers():
    rates = {}
    for label, options in (("base", {}), ("messengers", OPTIONS)):
        rng = random.Random(11)
        began = time.process_time()
        for _ in range(40):
            random_playout(GAME, 2, rng, options)
        rates[label] = 40 / (time.process_time() - began)
    print(f"\ncarcassonne random 2-player games/s: {rates}")
    assert rates["messengers"] > 30 and rates["base"] > 30
