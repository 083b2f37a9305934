"""Random Dingo games to the end for every player count, checked at every move."""

from __future__ import annotations

import random
import re

import msgspec
import pytest

from services.rules.games.contract import Rejection
from services.rules.games.dingo import GAME
from services.rules.games.dingo.cards import CARD_CODE, CARD_ID, CARDS, DECK_SIZE
from services.rules.games.dingo.scoring import day_points, ranch_value
from services.rules.games.dingo.state import (
    CardDiscarded,
    CardPlayed,
    CardRemoved,
    DayDealt,
    DayEnded,
    DayStarted,
    DestroyProtected,
    DingoState,
    DiscardCard,
    GameEnded,
    PlayCard,
    ProtectedCardDestroyed,
    TurnEnded,
)
from services.rules.games.playout import random_playout

GAMES_PER_SEAT_COUNT = 500
THOROUGH_EVERY = 25
"""One game in this many also checks every seat's view and redacted events as JSON."""
TARGET_SCORES = (15, 6, 3)
"""Game ``g`` plays to ``TARGET_SCORES[g % 3]``: the default, and shorter games for speed."""
FIRST_EVENT = {
    PlayCard: CardPlayed,
    DestroyProtected: ProtectedCardDestroyed,
    DiscardCard: CardDiscarded,
}
TO_DISCARD_PILE = (CardRemoved, ProtectedCardDestroyed, CardDiscarded)


def options_for(game: int, seats: int) -> dict:
    return {
        "target_score": TARGET_SCORES[game % 3],
        "tiebreak": ("extra_day", "share")[game // 3 % 2],
        "two_player_six": seats != 2 or game % 4 != 0,
    }


class InvariantCheck:
    """The per-move checks of one game; keeps a copy of the table before each move."""

    def __init__(self, thorough: bool):
        self.thorough = thorough
        self.moves = 0
        self.days = 0
        self.tie_break_days = 0

    def remember(self, state: DingoState) -> None:
        self.ranches = [list(ranch) for ranch in state.ranches]
        self.discards = len(state.discards)
        self.totals = list(state.totals)
        self.pile = len(state.draw_pile) - state.drawn
        self.target = state.target

    def __call__(self, state: DingoState, seat: int, action, events: list) -> None:
        self.moves += 1
        assert type(events[0]) is FIRST_EVENT[type(action)]
        ranches = [list(ranch) for ranch in self.ranches]
        discards, played = self.discards, None
        ended = None
        for event in events:
            if isinstance(event, DayEnded):
                ended = event
                break
            if isinstance(event, TO_DISCARD_PILE):
                discards += 1
            if isinstance(event, CardPlayed):
                played = CARD_CODE[event.card]
                ranches[event.ranch].append(played)
            elif isinstance(event, CardRemoved):
                self.check_removal(ranches, event, played)
                ranches[event.ranch].remove(CARD_CODE[event.card])
            elif isinstance(event, ProtectedCardDestroyed):
                assert event.seat == seat and ranches[seat][0] == CARD_CODE[event.card]
                assert len(ranches[seat]) > 1
                ranches[seat].pop(0)
        if ended is None:
            assert discards < state.discard_limit and isinstance(events[-1], TurnEnded)
            assert discards == len(state.discards)
        else:
            self.check_day_end(state, events, ended, ranches, discards)
        self.check_table(state)
        if self.thorough:
            self.check_hidden(state, seat, events)
        self.remember(state)

    @staticmethod
    def check_removal(ranches: list[list[int]], event: CardRemoved, played: int | None) -> None:
        """Never a protected card, never the card left of a moon, only a kind the card names."""
        ranch = ranches[event.ranch]
        index = ranch.index(CARD_CODE[event.card])
        assert index > 0, "an effect removed a protected card"
        assert index + 1 == len(ranch) or not CARDS[ranch[index + 1]].guards_left
        assert played is not None and CARDS[played].keyword == event.keyword
        assert CARDS[CARD_CODE[event.card]].kind in CARDS[played].removes

    def check_day_end(self, state, events, ended: DayEnded, ranches, discards: int) -> None:
        """The day ends exactly at the limit (or on an empty pile) and is scored right."""
        self.days += 1
        if ended.reason == "discard_limit":
            assert discards == state.discard_limit
        else:
            assert ended.reason == "draw_pile_empty" and self.pile == 0
            assert discards < state.discard_limit
        assert ended.target == self.target
        assert ended.values == [ranch_value(ranch) for ranch in ranches]
        assert ended.points == day_points(ended.values, ended.target)
        assert ended.totals == [a + b for a, b in zip(self.totals, ended.points, strict=True)]
        assert state.totals == ended.totals
        last = events[-1]
        if isinstance(last, GameEnded):
            best = max(ended.totals)
            assert best > state.target_score
            assert last.winners == [s for s, total in enumerate(ended.totals) if total == best]
            assert (len(last.winners) == 1) == (last.reason == "finished")
        else:
            assert isinstance(last, DayStarted) and state.day == ended.day + 1
            assert state.discards == [] and state.start_player == state.seat_to_move
            self.tie_break_days += max(ended.totals) > state.target_score

    @staticmethod
    def check_table(state: DingoState) -> None:
        """Every card is in exactly one place; hands hold two and ranches one or more."""
        in_hands = sum(len(hand) for hand in state.hands)
        on_ranches = sum(len(ranch) for ranch in state.ranches)
        pile = len(state.draw_pile) - state.drawn
        assert pile + in_hands + on_ranches + len(state.discards) == DECK_SIZE
        assert all(state.ranches)
        if state.end_reason is None:
            assert all(len(hand) == 2 for hand in state.hands)
            assert 11 <= state.target <= 20 and len(state.discards) < state.discard_limit

    @staticmethod
    def check_hidden(state: DingoState, seat: int, events: list) -> None:
        """No view or redacted event shows a seat another hand or the undrawn pile."""
        every = sorted(
            state.draw_pile[state.drawn :]
            + [code for hand in state.hands for code in hand]
            + [code for ranch in state.ranches for code in ranch]
            + state.discards
        )
        assert every == list(range(DECK_SIZE))
        running = state.end_reason is None
        for viewer in [*range(state.seats), None]:
            hidden = {CARD_ID[code] for code in state.draw_pile[state.drawn :]}
            for holder, hand in enumerate(state.hands):
                if holder != viewer and running:
                    hidden.update(CARD_ID[code] for code in hand)
            seen = GAME.view(state, viewer)
            if viewer is not None:
                assert [card.id for card in seen.hand] == names(state.hands[viewer])
            assert not card_ids_in(seen) & hidden
            for event in events:
                redacted = GAME.redact(event, viewer)
                if isinstance(event, TurnEnded):
                    assert (redacted.cards is None) == (viewer != event.seat)
                    assert redacted.drawn == event.drawn
                elif isinstance(event, DayStarted):
                    assert isinstance(redacted, DayDealt)
                    assert not card_ids_in(redacted) & hidden
                else:
                    assert redacted == event


def names(codes: list[int]) -> list[str]:
    return [CARD_ID[code] for code in codes]


_QUOTED_CARD_ID = re.compile(r'"([a-z]+-[a-z]+-[0-9]+)"')


def card_ids_in(message: object) -> set[str]:
    """Every card id anywhere in the JSON a client would receive."""
    found = set(_QUOTED_CARD_ID.findall(msgspec.json.encode(message).decode()))
    assert found <= set(CARD_ID)
    return found


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_random_games_keep_every_invariant(seats):
    rng = random.Random(f"dingo-{seats}")
    reasons: dict[str, int] = {}
    day_ends: dict[str, int] = {}
    tie_break_days = 0
    for game in range(GAMES_PER_SEAT_COUNT):
        options = options_for(game, seats)
        check = InvariantCheck(game % THOROUGH_EVERY == 0)
        twin = random.Random()
        twin.setstate(rng.getstate())  # deals the same first table as the playout will
        check.remember(GAME.fold(GAME.setup(GAME.resolve_options(options, seats), seats, twin)))
        state, outcome, moves = random_playout(GAME, seats, rng, options, check=check)
        assert moves == check.moves and state.day == check.days
        assert GAME.to_move(state) == [] and GAME.legal_actions(state, 0) == []
        assert outcome.scores == state.totals and max(outcome.scores) > options["target_score"]
        reasons[outcome.reason] = reasons.get(outcome.reason, 0) + 1
        reason = state.last_day.reason
        day_ends[reason] = day_ends.get(reason, 0) + 1
        tie_break_days += check.tie_break_days
    assert reasons.get("finished", 0) > GAMES_PER_SEAT_COUNT / 2
    if seats > 2:  # two players never pass the target score together: one scores per day
        assert reasons.get("tie_shared", 0) > 0 and tie_break_days > 0
    assert set(day_ends) <= {"discard_limit", "draw_pile_empty"}


def test_legal_actions_are_exactly_what_decide_accepts():
    """In a few random 3-player games, every candidate play agrees with ``legal_actions``."""
    rng = random.Random("dingo-legal")
    for _ in range(8):
        state = GAME.fold(GAME.setup(GAME.resolve_options({}, 3), 3, rng))
        while GAME.result(state) is None:
            seat = state.seat_to_move
            legal = GAME.legal_actions(state, seat)
            assert len(set(legal)) == len(legal)
            for action in legal:
                assert not isinstance(GAME.decide(state, seat, action), Rejection)
            on_ranches = [CARD_ID[code] for ranch in state.ranches for code in ranch]
            strays = [CARD_ID[rng.randrange(DECK_SIZE)] for _ in range(2)]
            candidates: list = [DestroyProtected()]
            for card in [CARD_ID[code] for code in state.hands[seat]] + strays[:1]:
                candidates.append(DiscardCard(card))
                for ranch in range(3):
                    for target in [None, *on_ranches, *strays]:
                        for destroy in (False, True):
                            candidates.append(PlayCard(card, ranch, target, destroy))
            for action in candidates:
                accepted = not isinstance(GAME.decide(state, seat, action), Rejection)
                assert accepted == (action in legal), action
            other = (seat + 1) % 3
            assert GAME.legal_actions(state, other) == []
            assert GAME.decide(state, other, legal[0]).code == "not_your_turn"
            state = GAME.fold(GAME.decide(state, seat, rng.choice(legal)), state)
