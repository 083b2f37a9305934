"""Random Hanabi games to the end for every player count and variant, checked at every move."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.hanabi import GAME
from services.rules.games.hanabi.cards import HAND_SIZES, MAX_CLUE_TOKENS, MAX_FUSES
from services.rules.games.hanabi.state import (
    CardDrawn,
    CardsDealt,
    DiscardCard,
    GiveColourClue,
    GiveRankClue,
    HanabiState,
    PlayCard,
)
from services.rules.games.playout import random_playout

GAMES_PER_CASE = 500
THOROUGH_EVERY = 10
"""One game in this many also checks spectator views and the views' JSON at every move."""
VARIANTS = {
    "default": {},
    "six_suits": {"suits": 6},
    "rainbow": {"rainbow": True},
    "rainbow_short": {"rainbow_short": True},
}
DECK_SIZES = {"default": 50, "six_suits": 60, "rainbow": 60, "rainbow_short": 55}
FIRST_EVENT = {
    PlayCard: ("CardPlayed", "CardMisplayed"),
    DiscardCard: ("CardDiscarded",),
    GiveColourClue: ("ClueGiven",),
    GiveRankClue: ("ClueGiven",),
}


class InvariantCheck:
    """The per-move checks of one game; remembers the fireworks to see that they only grow."""

    def __init__(self, seats: int, deck_size: int, thorough: bool):
        self.seats = seats
        self.thorough = thorough
        self.deck_size = deck_size
        self.fireworks: list[int] | None = None
        self.moves = 0

    def __call__(self, state: HanabiState, seat: int, action, events: list) -> None:
        self.moves += 1
        assert type(events[0]).__name__ in FIRST_EVENT[type(action)]
        assert 0 <= state.clue_tokens <= MAX_CLUE_TOKENS
        assert 0 <= state.fuses_burned <= MAX_FUSES
        assert (state.fuses_burned == MAX_FUSES) == (state.end_reason == "strike_out")
        assert len(state.deck) == self.deck_size
        undrawn = self.deck_size - state.drawn
        in_hands = sum(len(hand) for hand in state.hands)
        assert undrawn + in_hands + len(state.discards) + sum(state.fireworks) == self.deck_size
        hand_size = HAND_SIZES[self.seats]
        if undrawn:  # a game ending at once on a play skips that play's draw
            ended_at_once = state.end_reason is not None
            sizes = [hand_size - (ended_at_once and holder == seat) for holder in range(self.seats)]
            assert [len(hand) for hand in state.hands] == sizes
        else:
            assert all(hand_size - 1 <= len(hand) <= hand_size for hand in state.hands)
        previous = self.fireworks or [0] * len(state.fireworks)
        grown = [now - before for now, before in zip(state.fireworks, previous, strict=True)]
        assert all(step >= 0 for step in grown) and sum(grown) <= 1
        assert state.score == sum(state.fireworks) <= 5 * state.suits
        self.fireworks = list(state.fireworks)
        self.check_hidden(state, seat, events)

    def check_hidden(self, state: HanabiState, seat: int, events: list) -> None:
        """Neither the mover's nor a spectator's view or events show a card they may not see.

        The mover's view is checked at every move; thorough games also check the spectator's
        view and the views as the JSON that clients receive.
        """
        running = state.end_reason is None
        for viewer in (seat, None) if self.thorough else (seat,):
            view = GAME.view(state, viewer)
            if self.thorough:
                seen = msgspec.json.decode(msgspec.json.encode(view))
                assert "deck" not in seen and (seen["undrawn"] is None) == running
                hands = [[(c["order"], c["suit"], c["rank"]) for c in h] for h in seen["hands"]]
            else:
                assert (view.undrawn is None) == running
                hands = [[(c.order, c.suit, c.rank) for c in hand] for hand in view.hands]
            assert view.deck_size == self.deck_size - state.drawn
            for holder, hand in enumerate(hands):
                assert [order for order, _, _ in hand] == state.hands[holder]
                hidden = running and (viewer is None or holder == viewer)
                assert all((suit is None and rank is None) == hidden for _, suit, rank in hand)
            for event in events:
                redacted = GAME.redact(event, viewer)
                if isinstance(event, CardDrawn):
                    assert redacted.suit is None and redacted.rank is None
                    assert redacted.card == event.card
                else:
                    assert redacted == event
        others = [other for other in range(self.seats) if other != seat]
        for event in events:
            if isinstance(event, CardDrawn):
                assert all(GAME.redact(event, other) == event for other in others)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_random_games_keep_every_invariant(seats, variant):
    rng = random.Random(f"hanabi-{seats}-{variant}")
    options = VARIANTS[variant]
    reasons: dict[str, int] = {}
    for game in range(GAMES_PER_CASE):
        check = InvariantCheck(seats, DECK_SIZES[variant], game % THOROUGH_EVERY == 0)
        state, outcome, moves = random_playout(GAME, seats, rng, options, check=check)
        assert moves == check.moves == state.turns
        assert GAME.to_move(state) == [] and GAME.legal_actions(state, 0) == []
        expected = 0 if outcome.reason == "strike_out" else sum(state.fireworks)
        assert outcome.scores == [expected] * seats
        assert outcome.winners == ([] if outcome.reason == "strike_out" else list(range(seats)))
        reasons[outcome.reason] = reasons.get(outcome.reason, 0) + 1
    assert set(reasons) <= {"strike_out", "deck_out", "perfect"}
    assert reasons.get("strike_out", 0) > 0


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_same_seed_and_options_give_the_same_deal(variant):
    options = GAME.resolve_options(VARIANTS[variant], 4)
    deals = [GAME.setup(options, 4, random.Random(seed)) for seed in (11, 11, 12)]
    assert deals[0] == deals[1] and deals[0] != deals[2]
    assert sorted(deals[0][0].deck) == sorted(deals[2][0].deck)
    dealt = GAME.redact(deals[0][0], 2)
    assert isinstance(dealt, CardsDealt) and dealt.deck_size == DECK_SIZES[variant] - 16
