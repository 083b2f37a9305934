"""Hanabi rules, scenario by scenario, on explicit decks (cards coded suit_index*10 + rank)."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.rules.games.contract import Rejection
from services.rules.games.hanabi import GAME
from services.rules.games.hanabi.cards import SUITS
from services.rules.games.hanabi.options import standard_deck
from services.rules.games.hanabi.state import (
    CardDrawn,
    CardsDealt,
    ClueGiven,
    DiscardCard,
    GameEnded,
    GameStarted,
    GiveColourClue,
    GiveRankClue,
    HanabiState,
    PlayCard,
)

R, Y, G, B, W, M = 0, 10, 20, 30, 40, 50  # suit offsets: R + 3 is the red 3


def deck_starting_with(front: list[int], suits: int = 5, rainbow_short: bool = False) -> list[int]:
    """``front`` in draw order, then the rest of the variant's deck."""
    rest = standard_deck(suits, rainbow_short)
    for code in front:
        rest.remove(code)
    return front + rest


def start(seats: int, front: list[int], **options) -> HanabiState:
    suits = 6 if options.get("suits") == 6 or options.get("rainbow") else 5
    deck = deck_starting_with(front, suits, options.get("rainbow_short", False))
    resolved = GAME.resolve_options({**options, "deck": deck}, seats)
    assert not isinstance(resolved, Rejection), resolved
    return GAME.fold(GAME.setup(resolved, seats, random.Random(0)))


def act(state: HanabiState, seat: int, action) -> list:
    events = GAME.decide(state, seat, action)
    assert not isinstance(events, Rejection), events
    for event in events:
        state = GAME.evolve(state, event)
    return events


def refused(state: HanabiState, seat: int, action) -> Rejection:
    rejection = GAME.decide(state, seat, action)
    assert isinstance(rejection, Rejection), rejection
    return rejection


# Two-player deals: seat 0 holds orders 0-4, seat 1 orders 5-9, the draw pile starts at 10.
RED_RUN = [R + 1, R + 2, R + 3, R + 4, R + 5]
YELLOW_RUN = [Y + 1, Y + 2, Y + 3, Y + 4, Y + 5]


def test_hand_sizes_and_deck_sizes_per_player_count():
    for seats, hand_size in ((2, 5), (3, 5), (4, 4), (5, 4)):
        state = GAME.fold(GAME.setup({}, seats, random.Random(seats)))
        assert [len(hand) for hand in state.hands] == [hand_size] * seats
        assert state.hands[1][0] == hand_size  # dealt whole hands, seat by seat
        assert GAME.view(state, 0).deck_size == 50 - seats * hand_size
    assert GAME.resolve_options({}, 6) == Rejection(
        "bad_seat_count", "Hanabi takes 2-5 players, not 6"
    )


def test_variant_deck_sizes_and_option_implications():
    for options, size, suits in (
        ({}, 50, 5),
        ({"suits": 6}, 60, 6),
        ({"rainbow": True}, 60, 6),
        ({"rainbow_short": True}, 55, 6),
    ):
        resolved = GAME.resolve_options(options, 2)
        assert resolved["suits"] == suits
        assert len(GAME.setup(resolved, 2, random.Random(1))[0].deck) == size
    short = GAME.resolve_options({"rainbow_short": True}, 3)
    assert short["rainbow"] is True and short["suits"] == 6
    deck = GAME.setup(short, 3, random.Random(2))[0].deck
    assert sorted(code for code in deck if code >= M) == [M + 1, M + 2, M + 3, M + 4, M + 5]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"deck": standard_deck(5, False)[:-1]}, "must hold 50 cards"),
        ({"deck": standard_deck(5, False)[:-1] + [R + 6]}, "card 6 is not a card"),
        ({"deck": standard_deck(5, False)[:-1] + [M + 5]}, "card 55 is not a card"),
        ({"deck": [R + 1] * 4 + standard_deck(5, False)[4:]}, "too many copies of card 1"),
        ({"rainbow_short": True, "deck": standard_deck(6, False)}, "must hold 55 cards"),
    ],
)
def test_explicit_deck_must_be_the_variants_deck(options, fragment):
    rejection = GAME.resolve_options(options, 2)
    assert isinstance(rejection, Rejection) and rejection.code == "bad_option"
    assert fragment in rejection.detail


def test_explicit_deck_is_dealt_in_order():
    state = start(2, RED_RUN + YELLOW_RUN + [G + 1])
    assert state.hands == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    events = act(state, 0, PlayCard(0))
    assert events[-1] == CardDrawn(0, 10, "green", 1)
    assert state.hands[0] == [1, 2, 3, 4, 10]


def test_same_seed_and_options_give_the_same_deal():
    first = GAME.setup({"rainbow": True}, 3, random.Random(42))
    again = GAME.setup({"rainbow": True}, 3, random.Random(42))
    other = GAME.setup({"rainbow": True}, 3, random.Random(43))
    assert first == again and first != other


def test_a_clue_must_touch_a_card_unless_empty_clues():
    state = start(2, RED_RUN + [Y + 1, Y + 2, G + 1, G + 2, B + 1])
    assert refused(state, 0, GiveColourClue(1, "red")).code == "empty_clue"
    assert refused(state, 0, GiveRankClue(1, 5)).code == "empty_clue"
    offered = GAME.legal_actions(state, 0)
    assert GiveColourClue(1, "yellow") in offered and GiveColourClue(1, "red") not in offered
    assert GiveRankClue(1, 2) in offered and GiveRankClue(1, 5) not in offered

    state = start(2, RED_RUN + [Y + 1, Y + 2, G + 1, G + 2, B + 1], empty_clues=True)
    offered = GAME.legal_actions(state, 0)
    assert all(GiveColourClue(1, colour) in offered for colour in ("red", "white"))
    assert all(GiveRankClue(1, rank) in offered for rank in range(1, 6))
    events = act(state, 0, GiveColourClue(1, "red"))
    assert events == [ClueGiven(0, 1, [], colour="red")]
    assert state.clue_tokens == 7
    own = GAME.view(state, 1).hands[1]
    assert all(
        card.excluded_colours == ("red",) and "red" not in card.possible_suits for card in own
    )


def test_a_clue_touches_every_matching_card_and_records_knowledge():
    state = start(2, RED_RUN + [Y + 3, R + 3, G + 1, B + 3, W + 1])
    events = act(state, 0, GiveRankClue(1, 3))
    assert events == [ClueGiven(0, 1, [5, 6, 8], rank=3)]
    act(state, 1, GiveColourClue(0, "red"))
    own = {card.order: card for card in GAME.view(state, 1).hands[1]}
    assert own[5].clued_ranks == (3,) and own[5].possible_ranks == (3,)
    assert own[7].excluded_ranks == (3,) and own[7].possible_ranks == (1, 2, 4, 5)
    assert own[7].clued_ranks == () and own[7].suit is None
    seat0 = GAME.view(state, 0).hands[0]
    assert all(card.clued_colours == ("red",) and card.possible_suits == ("red",) for card in seat0)


def test_discard_is_refused_at_eight_clue_tokens():
    state = start(2, RED_RUN + YELLOW_RUN)
    assert refused(state, 0, DiscardCard(0)).code == "clue_tokens_full"
    assert not any(isinstance(action, DiscardCard) for action in GAME.legal_actions(state, 0))
    act(state, 0, GiveColourClue(1, "yellow"))
    assert state.clue_tokens == 7
    act(state, 1, DiscardCard(9))
    assert state.clue_tokens == 8 and state.discards == [9]


def test_successful_and_failed_plays():
    state = start(2, RED_RUN + YELLOW_RUN)
    act(state, 0, PlayCard(0))
    assert state.fireworks[0] == 1 and state.score == 1
    events = act(state, 1, PlayCard(6))  # yellow 2 on an empty yellow firework
    assert [type(event).__name__ for event in events] == [
        "CardMisplayed",
        "FuseBurned",
        "CardDrawn",
    ]
    assert state.fuses_burned == 1 and state.discards == [6] and state.fireworks[1] == 0
    assert GAME.result(state) is None


def test_third_fuse_strikes_out_with_score_zero():
    state = start(2, RED_RUN + YELLOW_RUN)
    act(state, 0, PlayCard(0))  # red 1: score 1
    act(state, 1, PlayCard(9))  # yellow 5
    act(state, 0, PlayCard(4))  # red 5
    events = act(state, 1, PlayCard(8))  # yellow 4
    assert events[-1] == GameEnded("strike_out", 0)
    assert not any(isinstance(event, CardDrawn) for event in events)
    outcome = GAME.result(state)
    assert outcome.scores == [0, 0] and outcome.winners == [] and outcome.reason == "strike_out"
    assert GAME.to_move(state) == [] and GAME.legal_actions(state, 0) == []
    assert refused(state, 0, PlayCard(1)).code == "game_over"


def test_a_five_regains_a_clue_token():
    state = start(2, RED_RUN + YELLOW_RUN)
    for seat, card in ((0, 0), (1, 5), (0, 1), (1, 6), (0, 2), (1, 7), (0, 3)):
        act(state, seat, PlayCard(card))
    act(state, 1, GiveRankClue(0, 5))
    assert state.clue_tokens == 7
    act(state, 0, PlayCard(4))
    assert state.fireworks[0] == 5 and state.clue_tokens == 8


def test_a_five_never_raises_clue_tokens_above_eight():
    state = start(2, RED_RUN + YELLOW_RUN)
    for seat, card in ((0, 0), (1, 5), (0, 1), (1, 6), (0, 2), (1, 7), (0, 3), (1, 8)):
        act(state, seat, PlayCard(card))
    act(state, 0, PlayCard(4))
    assert state.fireworks[0] == 5 and state.clue_tokens == 8


def playable(state: HanabiState, seat: int) -> int | None:
    for order in state.hands[seat]:
        code = state.deck[order]
        if state.fireworks[code // 10] + 1 == code % 10:
            return order
    return None


@pytest.mark.parametrize(("options", "suits"), [({}, 5), ({"suits": 6}, 6), ({"rainbow": True}, 6)])
def test_perfect_score_ends_the_game_at_once(options, suits):
    useful = [suit * 10 + rank for rank in range(1, 6) for suit in range(suits)]
    state = start(2, useful, **options)
    seat = 0
    while GAME.result(state) is None:
        order = playable(state, seat)
        events = act(state, seat, PlayCard(order))
        seat = 1 - seat
    assert events[-1] == GameEnded("perfect", 5 * suits)
    assert GAME.view(state, 0).deck_size > 0
    outcome = GAME.result(state)
    assert outcome.scores == [5 * suits] * 2 and outcome.winners == [0, 1]


@pytest.mark.parametrize("seats", [2, 3, 5])
def test_after_the_last_draw_every_seat_plays_exactly_once_more(seats):
    state = GAME.fold(GAME.setup({}, seats, random.Random(7)))
    last_drawer = None
    while last_drawer is None:
        seat = GAME.to_move(state)[0]
        if state.clue_tokens < 8:
            events = act(state, seat, DiscardCard(state.hands[seat][0]))
        else:
            events = act(state, seat, GAME.legal_actions(state, seat)[-1])  # a rank clue
        if state.drawn == len(state.deck):
            last_drawer = seat
            assert isinstance(events[-1], CardDrawn)
    assert GAME.view(state, 0).turns_left == seats
    final_movers = []
    while GAME.result(state) is None:
        seat = GAME.to_move(state)[0]
        final_movers.append(seat)
        if state.clue_tokens < 8:
            events = act(state, seat, DiscardCard(state.hands[seat][0]))
        else:
            events = act(state, seat, GAME.legal_actions(state, seat)[-1])
        assert not any(isinstance(event, CardDrawn) for event in events)
    assert final_movers == [(last_drawer + 1 + i) % seats for i in range(seats)]
    assert final_movers[-1] == last_drawer
    assert events[-1] == GameEnded("deck_out", 0)
    assert GAME.result(state).reason == "deck_out" and GAME.result(state).winners == list(
        range(seats)
    )


def test_rainbow_is_touched_by_every_colour_and_cannot_be_named():
    hand = [R + 1, M + 1, Y + 2, M + 2, B + 3]
    state = start(2, RED_RUN + hand, rainbow=True)
    assert act(state, 0, GiveColourClue(1, "red"))[0].touched == [5, 6, 8]
    assert act(state, 1, GiveRankClue(0, 1))[0].touched == [0]
    assert act(state, 0, GiveColourClue(1, "blue"))[0].touched == [6, 8, 9]
    for colour in ("red", "yellow", "green", "blue", "white"):
        fresh = start(2, RED_RUN + hand, rainbow=True)
        assert {6, 8} <= set(act(fresh, 0, GiveColourClue(1, colour))[0].touched)
    rejection = refused(state, 1, GiveColourClue(0, "multicolour"))
    assert rejection.code == "unnamable_colour"
    assert GiveColourClue(0, "multicolour") not in GAME.legal_actions(state, 1)
    own = {card.order: card for card in GAME.view(state, 1).hands[1]}
    assert own[6].clued_colours == ("red", "blue") and own[6].possible_suits == ("multicolour",)
    assert own[5].possible_suits == ("red",)
    assert own[7].possible_suits == ("yellow", "green", "white")


def test_sixth_suit_without_rainbow_is_an_ordinary_colour():
    state = start(2, RED_RUN + [R + 1, M + 1, Y + 2, M + 2, B + 3], suits=6)
    assert act(state, 0, GiveColourClue(1, "red"))[0].touched == [5]
    assert act(state, 1, GiveRankClue(0, 2))[0].touched == [1]
    assert act(state, 0, GiveColourClue(1, "multicolour"))[0].touched == [6, 8]
    plain = start(2, RED_RUN + YELLOW_RUN)
    assert refused(plain, 0, GiveColourClue(1, "multicolour")).code == "unknown_colour"
    assert refused(plain, 0, GiveColourClue(1, "purple")).code == "unknown_colour"


def test_refusals_name_the_rule_and_never_a_card_of_the_actor():
    state = start(2, RED_RUN + YELLOW_RUN)
    refusals = [
        (refused(state, 1, PlayCard(5)), "not_your_turn"),
        (refused(state, 0, PlayCard(5)), "not_in_hand"),
        (refused(state, 0, DiscardCard(77)), "not_in_hand"),
        (refused(state, 0, GiveColourClue(0, "red")), "clue_to_self"),
        (refused(state, 0, GiveColourClue(2, "red")), "unknown_seat"),
        (refused(state, 0, GiveRankClue(1, 6)), "unknown_rank"),
        (refused(state, 0, GameEnded("perfect", 25)), "unknown_action"),
    ]
    for rejection, code in refusals:
        assert rejection.code == code
        assert not any(suit in rejection.detail for suit in SUITS)
    for clue in range(8):
        act(state, clue % 2, GiveRankClue(1 - clue % 2, 5))
    assert refused(state, 0, GiveRankClue(1, 5)).code == "no_clue_tokens"
    assert all(isinstance(a, PlayCard | DiscardCard) for a in GAME.legal_actions(state, 0))


def test_legal_actions_are_exactly_what_decide_accepts():
    rng = random.Random(5)
    for options in ({}, {"rainbow": True}, {"suits": 6, "empty_clues": True}):
        resolved = GAME.resolve_options(options, 3)
        state = GAME.fold(GAME.setup(resolved, 3, rng))
        candidates = [PlayCard(o) for o in range(60)] + [DiscardCard(o) for o in range(60)]
        colours = ("red", "yellow", "green", "blue", "white", "multicolour", "pink")
        for target in range(4):
            candidates += [GiveColourClue(target, colour) for colour in colours]
            candidates += [GiveRankClue(target, rank) for rank in range(7)]
        while GAME.result(state) is None:
            seat = GAME.to_move(state)[0]
            accepted = {
                a for a in candidates if not isinstance(GAME.decide(state, seat, a), Rejection)
            }
            legal = GAME.legal_actions(state, seat)
            assert len(legal) == len(set(legal)) and set(legal) == accepted
            other = (seat + 1) % 3
            assert GAME.legal_actions(state, other) == []
            act(state, seat, rng.choice(legal))


def test_views_hide_own_cards_and_the_deck():
    state = start(2, RED_RUN + YELLOW_RUN + [G + 1])
    act(state, 0, PlayCard(0))
    mine = GAME.view(state, 0)
    assert all(card.suit is None and card.rank is None for card in mine.hands[0])
    assert [(card.suit, card.rank) for card in mine.hands[1]][0] == ("yellow", 1)
    spectator = GAME.view(state, None)
    assert all(card.suit is None for hand in spectator.hands for card in hand)
    assert [card.order for card in spectator.hands[0]] == [1, 2, 3, 4, 10]
    for seen in (mine, spectator):
        encoded = msgspec.json.decode(msgspec.json.encode(seen))
        assert "deck" not in encoded and encoded["undrawn"] is None
        assert encoded["deck_size"] == 39
    assert spectator.fireworks["red"] == 1 and spectator.seat_to_move == 1


def test_views_reveal_everything_once_the_game_is_over():
    state = start(2, RED_RUN + YELLOW_RUN)
    for seat, card in ((0, 4), (1, 9), (0, 3)):
        act(state, seat, PlayCard(card))
    final = GAME.view(state, 0)
    assert final.end_reason == "strike_out" and final.score == 0
    assert (final.hands[0][0].suit, final.hands[0][0].rank) == ("red", 1)
    assert len(final.undrawn) == 38 and final.seat_to_move is None


def test_redacted_events_hide_the_deck_and_the_drawers_card():
    setup = GAME.setup({"deck": deck_starting_with(RED_RUN + YELLOW_RUN + [G + 1])}, 2, None)
    assert isinstance(setup[0], GameStarted)
    for seat in (0, 1, None):
        dealt = GAME.redact(setup[0], seat)
        assert isinstance(dealt, CardsDealt) and dealt.deck_size == 40
        assert not hasattr(dealt, "deck")
        for holder, hand in enumerate(dealt.hands):
            visible = seat is not None and holder != seat
            assert all((card.suit is not None) == visible for card in hand)
            assert [card.order for card in hand] == list(range(5 * holder, 5 * holder + 5))
    assert GAME.redact(setup[0], 0).hands[1][0].suit == "yellow"
    drawn = CardDrawn(0, 10, "green", 1)
    assert GAME.redact(drawn, 0) == CardDrawn(0, 10)
    assert GAME.redact(drawn, None) == CardDrawn(0, 10)
    assert GAME.redact(drawn, 1) == drawn


def test_events_and_state_survive_encoding():
    state = start(3, RED_RUN + YELLOW_RUN)
    log = GAME.setup(GAME.resolve_options({"deck": state.deck}, 3), 3, None)
    rng = random.Random(3)
    state = GAME.fold(log)
    while GAME.result(state) is None:
        seat = GAME.to_move(state)[0]
        events = act(state, seat, rng.choice(GAME.legal_actions(state, seat)))
        log += events
    decoded = msgspec.json.decode(msgspec.json.encode(log), type=list[GAME.event_type])
    assert decoded == log
    assert GAME.fold(decoded) == state
    snapshot = msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=GAME.state_type)
    assert snapshot == state
    action = msgspec.json.decode(
        b'{"type":"GiveRankClue","target":1,"rank":4}', type=GAME.action_type
    )
    assert action == GiveRankClue(1, 4)
