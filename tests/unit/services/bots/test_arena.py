"""The bots' arena: each seat's policy sees only that seat's view and legal actions, and its
answer goes through the rules like a submitted move."""

from __future__ import annotations

import random

import pytest

from services.bots.arena import IllegalChoice, play_match, seat_rotation, self_play
from services.bots.policies import load_policies, random_choice
from services.bots.policies.registry import HEURISTICS
from services.rules.games import load_games

GAME_MODULES = load_games()


@pytest.mark.parametrize("name", list(HEURISTICS))
def test_random_bots_play_every_game_to_its_end(name: str) -> None:
    game = GAME_MODULES[name]
    outcome = play_match(game, [random_choice] * game.min_players, seed=3)
    assert len(outcome.scores) == game.min_players
    assert load_policies()[f"{name}-random"] is random_choice


def test_a_seat_is_shown_only_its_own_view() -> None:
    """A Hanabi seat's view never holds its own cards: what the policy is given is what the
    API gives that seat."""
    seen: list[dict] = []

    def watching(view: dict, actions: list[dict], rng: random.Random) -> dict:
        seen.append(view)
        return random_choice(view, actions, rng)

    play_match(GAME_MODULES["hanabi"], [watching, random_choice], seed=5)
    assert seen and all(view["seat"] == 0 for view in seen)
    own = [card for view in seen for card in view["hands"][0]]
    assert own and all(card["suit"] is None and card["rank"] is None for card in own)
    others = [card for view in seen for card in view["hands"][1]]
    assert others and all(card["suit"] is not None for card in others)


def test_an_action_the_rules_refuse_stops_the_match() -> None:
    def cheating(view: dict, actions: list[dict], rng: random.Random) -> dict:
        return {"type": "PlayCard", "card": 99}

    with pytest.raises(IllegalChoice, match="refused"):
        play_match(GAME_MODULES["hanabi"], [cheating, cheating], seed=1)

    def malformed(view: dict, actions: list[dict], rng: random.Random) -> dict:
        return {"type": "PlayCard", "index": 0}

    with pytest.raises(IllegalChoice, match="is no action"):
        play_match(GAME_MODULES["hanabi"], [malformed, malformed], seed=1)


def test_standings_and_self_play_add_up() -> None:
    standing = seat_rotation(("dingo", "dingo-random", "dingo-random", 3, range(6), {}))
    assert standing.matches == 6 and 0 <= standing.wins <= 1 and standing.decisions > 6
    scores = self_play(("hanabi", "hanabi-random", 2, range(4)))
    assert len(scores) == 4 and all(0 <= score <= 25 for score in scores)
