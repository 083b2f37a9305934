"""The Dingo heuristic bot: always legal, sensible in set scenes, and clearly above random."""

from __future__ import annotations

import copy
import random

import msgspec
import pytest

from services.bots.arena import play_match
from services.bots.policies import load_policies, random_choice
from services.bots.policies.dingo import heuristic
from services.rules.games.dingo import GAME
from services.rules.games.dingo.cards import CARD_CODE, CARD_ID
from services.rules.games.dingo.scoring import ranch_value
from services.rules.games.dingo.state import DayEnded, DingoState

GAMES_PER_COUNT = 30
PURITY_EVERY = 10
"""One move in this many also checks that the bot left its inputs as they were."""


def checked(policy, seen: list[int]):
    """``policy``, asserting that it answers one of the legal actions, untouched inputs."""

    def play(view, actions, rng):
        before = copy.deepcopy((view, actions)) if len(seen) % PURITY_EVERY == 0 else None
        chosen = policy(view, actions, rng)
        assert before is None or (view, actions) == before, "the bot changed its inputs"
        assert chosen in actions
        seen.append(1)
        return chosen

    return play


@pytest.mark.parametrize("seats", range(GAME.min_players, GAME.max_players + 1))
def test_heuristic_always_answers_a_legal_action(seats: int) -> None:
    moves: list[int] = []
    bot = checked(heuristic, moves)
    for game in range(GAMES_PER_COUNT):
        # All heuristic, or one heuristic among random bots, seat rotating.
        if game % 2:
            policies = [bot] * seats
        else:
            policies = [random_choice] * seats
            policies[game % seats] = bot
        outcome = play_match(GAME, policies, seed=1000 * seats + game)
        assert outcome.winners
    assert len(moves) > GAMES_PER_COUNT * 10


def test_registered_under_its_name() -> None:
    assert load_policies()["dingo-heuristic"] is heuristic


def test_a_pure_function_of_view_actions_and_rng() -> None:
    state = GAME.fold(GAME.setup(GAME.resolve_options({}, 3), 3, random.Random(7)))
    seat = GAME.to_move(state)[0]
    view = msgspec.to_builtins(GAME.view(state, seat))
    actions = msgspec.to_builtins(GAME.legal_actions(state, seat))
    answers = {str(heuristic(view, actions, random.Random(3))) for _ in range(5)}
    assert len(answers) == 1


# --- Scenes ---------------------------------------------------------------------------------


def scene(
    ranches: list[list[str]],
    hands: list[list[str]],
    *,
    target: int = 15,
    totals: list[int] | None = None,
    discards: tuple[str, ...] = (),
) -> DingoState:
    """A day in progress, seat 0 to move (seat 0 red, 1 yellow, 2 green)."""
    seats = len(ranches)
    code = CARD_CODE
    used = {*sum(ranches, []), *sum(hands, []), *discards}
    pile = [code[card] for card in CARD_ID if card not in used]
    return DingoState(
        seats=seats,
        first_player=0,
        discard_limit=2 * seats,
        target_score=15,
        tiebreak="extra_day",
        chance_seed=1,
        given_decks=[],
        given_rolls=[],
        totals=list(totals or [0] * seats),
        day=1,
        roll=target - 10,
        target=target,
        start_player=0,
        seat_to_move=0,
        draw_pile=pile[:30],
        hands=[[code[card] for card in hand] for hand in hands],
        ranches=[[code[card] for card in ranch] for ranch in ranches],
        discards=[code[card] for card in discards],
    )


def choose(state: DingoState) -> tuple[dict, list]:
    """The bot's action for seat 0, and the events it causes."""
    view = msgspec.to_builtins(GAME.view(state, 0))
    actions = msgspec.to_builtins(GAME.legal_actions(state, 0))
    chosen = heuristic(view, actions, random.Random(0))
    assert chosen in actions
    action = msgspec.json.decode(msgspec.json.encode(chosen), type=GAME.action_type)
    events = GAME.decide(state, 0, action)
    assert isinstance(events, list)
    return chosen, events


def values_after(state: DingoState, events: list) -> list[int]:
    for event in events:
        if isinstance(event, DayEnded):
            return event.values
    after = GAME.fold(events, msgspec.structs.replace(state))
    return [ranch_value(ranch) for ranch in after.ranches]


OTHERS_HANDS = [["yellow-baby-2", "purple-moon-1"], ["green-dingo-3", "green-baby-2"]]


def test_fills_its_ranch_up_to_the_target_not_over() -> None:
    # Own ranch 11, target 15: the 4 lands exactly on 15, the 7 would go over.
    state = scene(
        [["red-lion-5", "red-elephant-6"], ["yellow-baby-1"], ["green-baby-1"]],
        [["blue-dingo-4", "blue-elephant-7"], *OTHERS_HANDS],
    )
    chosen, _ = choose(state)
    assert chosen == {
        "type": "PlayCard",
        "card": "blue-dingo-4",
        "ranch": 0,
        "target": None,
        "destroy_protected": False,
    }


def test_ends_the_day_while_it_wins_it() -> None:
    # One card short of the discard limit, own ranch 14 of 15 and the best: end the day now.
    state = scene(
        [
            ["red-lion-5", "red-elephant-7", "blue-baby-2"],
            ["yellow-lion-5", "yellow-lion-6"],
            ["green-lion-6", "green-elephant-6"],
        ],
        [["blue-baby-1", "purple-baby-2"], *OTHERS_HANDS],
        discards=("red-moon-1", "blue-moon-1", "green-moon-1", "yellow-moon-1", "purple-moon-1"),
    )
    _, events = choose(state)
    ended = [event for event in events if isinstance(event, DayEnded)]
    assert ended and ended[0].points[0] == 2


def test_pushes_the_leader_over_the_target() -> None:
    # Seat 1 leads the game and sits at 14 of 15; a yellow card may go onto its ranch.
    state = scene(
        [
            ["red-lion-5", "red-elephant-6", "blue-dingo-4"],
            ["purple-lion-5", "purple-lion-6", "blue-dingo-3"],
            ["green-baby-2", "green-elephant-6"],
        ],
        [["yellow-baby-2", "red-elephant-7"], *OTHERS_HANDS],
        totals=[3, 6, 2],
    )
    chosen, events = choose(state)
    assert chosen["ranch"] == 1
    values = values_after(state, events)
    assert values[1] > 15 and values[0] == 15


def test_gets_back_under_the_target() -> None:
    # Own ranch 17 of 15: an effect on an own card, or destroying the protected card, helps.
    state = scene(
        [
            ["red-lion-5", "red-elephant-6", "blue-dingo-4", "blue-baby-2"],
            ["purple-lion-5", "purple-lion-6"],
            ["green-baby-2", "green-elephant-6"],
        ],
        [["yellow-baby-2", "red-elephant-7"], *OTHERS_HANDS],
        totals=[3, 6, 2],
    )
    _, events = choose(state)
    assert values_after(state, events)[0] <= 15


def test_an_effect_eats_the_leaders_card() -> None:
    # The lion may eat seat 1's dingo: seat 1 leads the game and sits exactly on the target.
    state = scene(
        [["red-lion-5"], ["purple-lion-5", "purple-lion-6", "blue-dingo-4"], ["green-baby-2"]],
        [["yellow-lion-6", "red-baby-1"], *OTHERS_HANDS],
        totals=[3, 6, 2],
    )
    chosen, _ = choose(state)
    assert chosen["card"] == "yellow-lion-6" and chosen["target"] == "blue-dingo-4"


# --- Against random bots --------------------------------------------------------------------


def test_wins_clearly_more_than_its_share_against_random_bots() -> None:
    games, seats, wins = 50, 3, 0.0
    for game in range(games):
        policies = [random_choice] * seats
        policies[game % seats] = heuristic
        outcome = play_match(GAME, policies, seed=game)
        if game % seats in outcome.winners:
            wins += 1 / len(outcome.winners)
    assert wins / games > 0.6  # fair share: 1/3
