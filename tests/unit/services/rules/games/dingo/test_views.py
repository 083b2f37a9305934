"""Hidden information in Dingo: redacted events and views show a seat its own hand only, and a
match runs through the rules engine's codec."""

from __future__ import annotations

import random

import msgspec

from services.rules.engine import RulesEngine
from services.rules.games.dingo import GAME
from services.rules.games.dingo.cards import CARD_CODE, CARD_ID, CARDS
from services.rules.games.dingo.state import DayDealt, DingoState, DiscardCard, PlayCard, TurnEnded
from shared.domain import rules_api as api
from tests.unit.services.rules.games.dingo.scenarios import (
    TWO,
    act,
    deck_order,
    discard_until_day_ends,
    refused,
    start,
)


def hidden_from(state: DingoState, seat: int | None) -> set[str]:
    """Card ids ``seat`` may not see: other hands and the undrawn pile."""
    hidden = {CARD_ID[code] for code in state.draw_pile[state.drawn :]}
    for holder, hand in enumerate(state.hands):
        if holder != seat:
            hidden.update(CARD_ID[code] for code in hand)
    return hidden


def shown(data: object) -> set[str]:
    text = msgspec.json.encode(data).decode()
    return {card for card in CARD_ID if f'"{card}"' in text}


def test_redacted_events_hide_the_seed_the_deck_and_other_hands():
    options = GAME.resolve_options({"deck_order": deck_order(**TWO), "die_rolls": [4]}, 2)
    events = GAME.setup(options, 2, random.Random(8))
    state = GAME.fold(events)
    assert events[0].chance_seed is not None and events[0].deck_order is not None
    for seat in (0, 1, None):
        started = GAME.redact(events[0], seat)
        assert (started.chance_seed, started.deck_order, started.die_rolls) == (None, None, None)
        dealt = GAME.redact(events[1], seat)
        assert isinstance(dealt, DayDealt) and dealt.ranches == TWO["ranches"]
        assert dealt.hand == (None if seat is None else TWO["hands"][seat])
        assert dealt.draw_pile == 54 and (dealt.roll, dealt.target) == (4, 14)
        assert not shown(dealt) & hidden_from(state, seat)
    drawn = act(state, state.seat_to_move, DiscardCard("blue-dingo-3"))[-1]
    assert GAME.redact(drawn, 0) == drawn == TurnEnded(0, 1, ["purple-monkey-3"])
    assert GAME.redact(drawn, 1) == GAME.redact(drawn, None) == TurnEnded(0, 1, None)


def test_views_show_the_own_hand_only_until_the_game_is_over():
    state = start(**TWO, target_score=1)
    for seat in (0, 1, None):
        seen = GAME.view(state, seat)
        assert seen.hand == (
            None if seat is None else [CARDS[CARD_CODE[card]] for card in TWO["hands"][seat]]
        )
        assert seen.hands is None and seen.hand_sizes == [2, 2] and seen.draw_pile == 54
        assert not shown(seen) & hidden_from(state, seat)
        assert [ranch.protected for ranch in seen.ranches] == TWO["ranches"]
    # Neither a rejection tells where a card it does not show is: hand or pile read the same.
    in_hand = refused(state, 0, PlayCard("red-baby-1", 0, "green-lion-6")).detail
    in_pile = refused(state, 0, PlayCard("red-baby-1", 0, "purple-moon-1")).detail
    assert in_hand.replace("green-lion-6", "X") == in_pile.replace("purple-moon-1", "X")
    assert (
        refused(state, 0, DiscardCard("green-lion-6")).detail
        == "'green-lion-6' is not in your hand"
    )
    while GAME.result(state) is None:
        discard_until_day_ends(state)
    final = GAME.view(state, None)
    assert final.hands == [[CARDS[code] for code in hand] for hand in state.hands]
    assert final.seat_to_move is None and final.winners == GAME.result(state).winners


def test_a_match_runs_through_the_rules_engine_codec():
    engine = RulesEngine({"dingo": GAME})
    (entry,) = engine.handle(api.Catalogue())
    options = {option["name"]: option for option in entry["options"]}
    assert options["deck_order"]["secret"] and options["die_rolls"]["secret"]
    assert options["tiebreak"]["default"] == "extra_day"
    assert options["target_score"]["default"] == 15
    done = engine.handle(api.SetUp(game="dingo", options={}, seats=3, seed=4))
    assert isinstance(done, api.SetUpDone)
    assert b'"chance_seed":null' in bytes(done.public_events[0])
    assert b'"draw_pile":51' in bytes(done.public_events[1])
    stored = [event.data for event in done.events]
    progress = done.progress
    for _ in range(40):
        seat = progress.to_move[0]
        legal = engine.handle(api.ListLegalActions(game="dingo", state=progress.state, seat=seat))
        action = msgspec.Raw(msgspec.json.encode(legal[-1]))
        decided = engine.handle(
            api.Decide(game="dingo", state=progress.state, seat=seat, action=action)
        )
        assert isinstance(decided, api.Decided), decided
        stored += [event.data for event in decided.events]
        progress = decided.progress
    folded = engine.handle(api.Fold(game="dingo", events=stored))
    assert folded.state == progress.state and folded.to_move == progress.to_move
