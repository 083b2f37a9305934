"""The Hanabi heuristic bot: always legal, the conventions on built tables, and a strength
floor on a few seeded matches (the 200-match figures come from `playtable bench bots`)."""

from __future__ import annotations

import json
import random
import statistics

import msgspec
import pytest

from services.bots.arena import play_match
from services.bots.policies import load_policies
from services.bots.policies.hanabi import heuristic
from services.rules.games.hanabi import GAME
from services.rules.games.hanabi.cards import SUITS
from services.rules.games.hanabi.options import standard_deck
from services.rules.games.hanabi.state import HanabiState

VARIANTS = {
    "default": {},
    "six_suits": {"suits": 6},
    "rainbow": {"rainbow": True},
    "rainbow_short": {"rainbow_short": True},
    "empty_clues": {"empty_clues": True},
}

R, Y, G, B, W = 0, 10, 20, 30, 40


def _deck(*dealt: int) -> list[int]:
    """A whole five-suit deck whose first cards are ``dealt``, the rest in sorted order."""
    rest = standard_deck(5, False)
    for code in dealt:
        rest.remove(code)
    return [*dealt, *rest]


def _table(deck: list[int], moves: list[dict] = ()) -> HanabiState:
    """A two-player match on a known deck, after scripted moves."""
    options = GAME.resolve_options({"deck": deck}, 2)
    state = GAME.fold(GAME.setup(options, 2, random.Random(0)))
    decoder = msgspec.json.Decoder(GAME.action_type)
    for move in moves:
        events = GAME.decide(state, state.seat_to_move, decoder.decode(msgspec.json.encode(move)))
        state = GAME.fold(events, state)
    return state


def _seen(state: HanabiState) -> tuple[dict, list[dict]]:
    seat = state.seat_to_move
    view = msgspec.to_builtins(GAME.view(state, seat))
    return view, msgspec.to_builtins(GAME.legal_actions(state, seat))


def _touches(state: HanabiState, clue: dict, order: int) -> bool:
    code = state.deck[order]
    if clue["type"] == "GiveRankClue":
        return code % 10 == clue["rank"]
    return SUITS[code // 10] == clue["colour"]


def _checked(view: dict, actions: list[dict], rng: random.Random) -> dict:
    """The heuristic, shown the view as JSON (lists, not tuples), checked to answer legally."""
    view = json.loads(json.dumps(view))
    choice = heuristic(view, actions, rng)
    assert choice in actions
    return choice


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_it_always_answers_a_legal_action(players: int, variant: str) -> None:
    for seed in range(3):
        outcome = play_match(GAME, [_checked] * players, seed, VARIANTS[variant])
        assert outcome.reason in ("deck_out", "perfect", "strike_out")


def test_it_is_the_registered_heuristic() -> None:
    assert load_policies()["hanabi-heuristic"] is heuristic


# Seat 0 holds only 2s (nothing playable); seat 1 holds r5 (its chop), y3, g1, b3, w4.
NOTHING_PLAYABLE = _deck(R + 2, Y + 2, G + 2, B + 2, W + 2, R + 5, Y + 3, G + 1, B + 3, W + 4)
GREEN_ONE = 7


def test_it_plays_a_card_it_knows_is_playable() -> None:
    state = _table(NOTHING_PLAYABLE, [{"type": "GiveRankClue", "target": 1, "rank": 1}])
    view, actions = _seen(state)
    assert view["seat"] == 1 and list(view["hands"][1][2]["possible_ranks"]) == [1]
    assert heuristic(view, actions, random.Random(0)) == {"type": "PlayCard", "card": GREEN_ONE}


def test_it_clues_a_teammates_playable_card() -> None:
    state = _table(NOTHING_PLAYABLE)
    view, actions = _seen(state)
    choice = heuristic(view, actions, random.Random(0))
    assert choice["type"] in ("GiveColourClue", "GiveRankClue") and choice["target"] == 1
    assert _touches(state, choice, GREEN_ONE)


def test_it_does_not_discard_at_eight_tokens_when_a_clue_exists() -> None:
    """Even if offered discards, a full bank of tokens is spent on a clue."""
    state = _table(_deck(R + 2, Y + 2, G + 2, B + 2, W + 2, R + 4, Y + 3, G + 3, B + 3, W + 4))
    view, actions = _seen(state)
    assert view["clue_tokens"] == 8
    offered = actions + [{"type": "DiscardCard", "card": order} for order in range(5)]
    for seed in range(5):
        choice = heuristic(view, offered, random.Random(seed))
        assert choice["type"] in ("GiveColourClue", "GiveRankClue")


def test_it_saves_a_five_on_its_teammates_chop() -> None:
    moves = [
        {"type": "GiveRankClue", "target": 1, "rank": 3},
        {"type": "GiveRankClue", "target": 0, "rank": 2},
    ]
    deck = _deck(R + 2, Y + 2, G + 2, B + 2, W + 2, R + 5, Y + 3, G + 3, B + 3, W + 4)
    state = _table(deck, moves)
    view, actions = _seen(state)
    assert view["seat"] == 0 and view["clue_tokens"] == 6
    chop = view["hands"][1][0]
    assert (chop["suit"], chop["rank"], list(chop["clued_ranks"])) == ("red", 5, [])
    assert heuristic(view, actions, random.Random(0)) == {
        "type": "GiveRankClue",
        "target": 1,
        "rank": 5,
    }


def test_it_never_colour_clues_a_card_it_cannot_play() -> None:
    """A card touched only by colour is played at once, so no colour clue touches an unplayable
    one: here only rank clues (or the green 1) are safe."""
    deck = _deck(R + 2, Y + 2, G + 2, B + 2, W + 2, R + 3, R + 1, G + 4, G + 1, W + 4)
    view, actions = _seen(_table(deck))
    choice = heuristic(view, actions, random.Random(0))
    assert choice.get("colour") not in ("red", "green", "white")


def test_a_rank_clue_beside_an_older_untouched_card_is_played() -> None:
    """Seat 1's r2 has an untouched card older than it, so the 2 clue was no save: a play."""
    deck = _deck(R + 1, Y + 2, G + 2, B + 2, W + 2, Y + 3, R + 2, B + 4, G + 3, W + 4)
    state = _table(deck, [*RED_ONE_PLAYED, {"type": "GiveRankClue", "target": 1, "rank": 2}])
    view, actions = _seen(state)
    assert view["seat"] == 1 and view["fireworks"]["red"] == 1
    assert list(view["hands"][1][1]["possible_suits"]) == list(view["suits"])  # any 2 at all
    assert heuristic(view, actions, random.Random(0)) == {"type": "PlayCard", "card": 6}


def test_a_rank_clue_on_the_chop_is_a_save_not_a_play() -> None:
    """The same clue on the oldest untouched card may be a save: it is not played blind."""
    deck = _deck(R + 1, Y + 2, G + 2, B + 2, W + 2, R + 2, Y + 3, B + 4, G + 3, W + 4)
    state = _table(deck, [*RED_ONE_PLAYED, {"type": "GiveRankClue", "target": 1, "rank": 2}])
    view, actions = _seen(state)
    assert list(view["hands"][1][0]["clued_ranks"]) == [2]
    assert heuristic(view, actions, random.Random(0)) != {"type": "PlayCard", "card": 5}


def test_colour_clued_cards_of_one_suit_are_played_oldest_first() -> None:
    """Two red cards, clued red together: the older is read as the next red, the newer as the
    one after it, so the older is played (it is the r1) and the newer kept."""
    deck = _deck(Y + 2, Y + 2, G + 2, B + 2, W + 2, Y + 3, R + 1, B + 4, R + 2, W + 4)
    state = _table(deck, [{"type": "GiveColourClue", "target": 1, "colour": "red"}])
    view, actions = _seen(state)
    assert [card["order"] for card in view["hands"][1] if card["clued_colours"]] == [6, 8]
    assert heuristic(view, actions, random.Random(0)) == {"type": "PlayCard", "card": 6}


def test_it_never_rank_clues_an_unplayable_card_that_would_read_as_a_play() -> None:
    """Seat 1 holds r2 (playable) and g2 (not) beside older untouched cards: a 2 clue would
    make both read as plays, so seat 0 clues the r2 some other way."""
    deck = _deck(R + 1, Y + 2, G + 2, B + 2, W + 2, W + 4, R + 2, B + 3, G + 2, Y + 4)
    view, actions = _seen(_table(deck, [RED_ONE_PLAYED[0], CLUE_SEAT_ZERO]))
    assert view["seat"] == 0 and view["fireworks"] == {**dict.fromkeys(view["suits"], 0), "red": 1}
    choice = heuristic(view, actions, random.Random(0))
    assert choice != {"type": "GiveRankClue", "target": 1, "rank": 2}
    assert choice == {"type": "GiveColourClue", "target": 1, "colour": "red"}


def test_with_no_token_it_discards_its_chop_never_a_clued_card() -> None:
    """Seat 0 knows its oldest card is g2 (useful, not yet playable) and has nothing to play:
    it discards the oldest untouched card instead."""
    deck = _deck(G + 2, Y + 4, B + 4, W + 3, R + 4, Y + 3, R + 3, B + 3, G + 3, W + 3)
    by_zero = {"type": "GiveRankClue", "target": 1, "rank": 3}
    by_one = [
        {"type": "GiveColourClue", "target": 0, "colour": "green"},
        {"type": "GiveRankClue", "target": 0, "rank": 2},
    ]
    state = _table(deck, [move for _ in range(2) for clue in by_one for move in (by_zero, clue)])
    view, actions = _seen(state)
    assert view["seat"] == 0 and view["clue_tokens"] == 0
    known = view["hands"][0][0]
    assert (list(known["possible_suits"]), list(known["possible_ranks"])) == (["green"], [2])
    assert heuristic(view, actions, random.Random(0)) == {"type": "DiscardCard", "card": 1}


RED_ONE_PLAYED = [
    {"type": "PlayCard", "card": 0},
    {"type": "GiveRankClue", "target": 0, "rank": 2},
]
"""Seat 0 plays its r1 (order 0); seat 1 answers with a clue: seat 0 is to move."""
CLUE_SEAT_ZERO = {"type": "GiveRankClue", "target": 0, "rank": 2}

STRENGTH_FLOORS = {4: 20.0, 5: 19.0}
"""Means over seeds 0-39 (200-match figures in docs/hosting.md): this bot 21.73 and 20.70;
the bot before the rank play clues and the chains 18.62 and 15.85; HolmesBot's published
4- and 5-player means 20.46 and 18.40."""


@pytest.mark.parametrize("players", STRENGTH_FLOORS)
def test_self_play_scores_above_the_floor(players: int) -> None:
    scores = [play_match(GAME, [heuristic] * players, seed).scores[0] for seed in range(40)]
    assert 0 not in scores  # no match struck out
    assert statistics.mean(scores) >= STRENGTH_FLOORS[players]
