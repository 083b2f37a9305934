"""The Carcassonne heuristic bot (``services/bots/policies/carcassonne.py``): always a legal
action, the obvious choices on hand-built boards, The Messengers' choices, and a quick check of
its strength against the random bot."""

from __future__ import annotations

import random
from collections.abc import Iterator

import msgspec
import pytest

from services.bots.arena import play_match
from services.bots.policies import load_policies, random_choice
from services.bots.policies.carcassonne import heuristic
from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.state import PlaceTile, TilePlaced

DECODER = msgspec.json.Decoder(GAME.action_type)


def start(order: list[str], seats: int = 2, **options):
    resolved = GAME.resolve_options({"tile_order": order, **options}, seats)
    return GAME.fold(GAME.setup(resolved, seats, random.Random(0)))


def play(state, *moves: PlaceTile):
    for move in moves:
        seat = GAME.to_move(state)[0]
        assert move in GAME.legal_actions(state, seat), move
        state = GAME.fold(GAME.decide(state, seat, move), state)
    return state


def seen(state, seat: int | None = None) -> tuple[dict, list[dict]]:
    """What a client of the seat to move is shown: its view and legal actions, as JSON."""
    if seat is None:
        seat = GAME.to_move(state)[0]
    view = msgspec.to_builtins(GAME.view(state, seat))
    return view, msgspec.to_builtins(GAME.legal_actions(state, seat))


def choose(state, seed: int = 0) -> dict:
    view, actions = seen(state)
    chosen = heuristic(view, actions, random.Random(seed))
    assert chosen in actions
    return chosen


def placed_at(chosen: dict) -> tuple[int, int, int]:
    return chosen["x"], chosen["y"], chosen["rotation"]


def against_random(options: dict, seed: int) -> Iterator[tuple[object, int, list]]:
    """A 2-player match of the bot (seat 0) against the random bot: after every move, the
    state, the seat that moved and the events of its move."""
    state = GAME.fold(GAME.setup(GAME.resolve_options(options, 2), 2, random.Random(seed)))
    rng = random.Random(seed)
    while GAME.result(state) is None:
        seat = GAME.to_move(state)[0]
        view, actions = seen(state, seat)
        chosen = heuristic(view, actions, rng) if seat == 0 else rng.choice(actions)
        events = GAME.decide(state, seat, DECODER.decode(msgspec.json.encode(chosen)))
        state = GAME.fold(events, state)
        yield state, seat, events


# Tiles (seeds/carcassonne/tiles.json): D = city N (spot 0), road W-E (spot 1), the start tile
# at (0, 0); E = city N (spot 0); G = city W-E (spot 0), turned 1: N-S; U = road N-S, turned 1:
# W-E; V = road S-W.
OWN_CITY_ON_TOP = PlaceTile(0, 1, 1, 0)
"""G above the start tile, its city joined to the start tile's, with a follower: one open end
left, at (0, 2)."""
ROAD_WEST = PlaceTile(-1, 0, 1, None)
"""U west of the start tile, continuing its road; no follower."""


# ---------------------------------------------------------------------------- legality


class Checked:
    """The heuristic, asserting it answers one of the listed actions."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, view: dict, actions: list[dict], rng: random.Random) -> dict:
        chosen = heuristic(view, actions, rng)
        assert chosen in actions, chosen
        self.calls += 1
        return chosen


@pytest.mark.parametrize("messengers", [False, True])
@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_heuristic_always_answers_a_legal_action(seats, messengers):
    for seed, mix in ((seats, True), (100 + seats, False)):
        checked = Checked()
        policies = [random_choice if mix and seat % 2 else checked for seat in range(seats)]
        outcome = play_match(GAME, policies, seed, {"messengers": messengers})
        assert outcome.scores and checked.calls > 10


def test_followers_go_only_on_free_features():
    """Replaying a bot's own moves: every follower it lays is alone on its feature."""
    for seed in range(3):
        for state, seat, events in against_random({}, seed):
            placed = events[0]
            if seat == 0 and isinstance(placed, TilePlaced) and placed.follower is not None:
                scored = any(type(event).__name__ == "FeatureScored" for event in events)
                if not scored:
                    node = ((len(state.codes) - 1) << 3) + placed.follower
                    assert len(state.holders[state.parent[node]]) == 1


def test_heuristic_is_registered():
    assert load_policies()["carcassonne-heuristic"] is heuristic


# ---------------------------------------------------------------------------- scenarios


def test_completes_its_own_city():
    state = play(start(["D", "G", "U", "E", "V", "V"]), OWN_CITY_ON_TOP, ROAD_WEST)
    chosen = choose(state)
    assert placed_at(chosen) == (0, 2, 2)  # E's city faces south onto G's: 3 tiles, 6 points


def test_does_not_complete_an_opponents_city():
    state = play(start(["D", "U", "G", "E", "V", "V"]), ROAD_WEST, OWN_CITY_ON_TOP)
    for seed in range(5):
        chosen = choose(state, seed)
        assert placed_at(chosen) != (0, 2, 2)


def test_no_follower_on_its_own_occupied_city_when_growing_it():
    """F (a city W-E like G) above its own city: the city spot is taken, so the bot's
    follower (if any) goes elsewhere, and it is a legal action."""
    state = play(start(["D", "G", "U", "F", "V", "V", "V"]), OWN_CITY_ON_TOP, ROAD_WEST)
    view, actions = seen(state)
    taken = {"type": "PlaceTile", "x": 0, "y": 2, "rotation": 1, "follower": 0}
    assert {**taken, "piece": "follower"} not in actions
    chosen = choose(state)
    if placed_at(chosen)[:2] == (0, 2):
        assert chosen["follower"] != 0


def test_puts_a_follower_on_a_city_it_completes_at_once():
    chosen = choose(start(["D", "E", "V", "V", "V"]))
    assert chosen == {
        "type": "PlaceTile",
        "x": 0,
        "y": 1,
        "rotation": 2,
        "follower": 0,
        "piece": "follower",
    }


def test_prefers_a_city_likely_to_complete_to_an_empty_move():
    """With several tiles to come, a new one-tile city with one open end is worth a knight."""
    state = play(start(["D", "U", "E", "V", "V", "V", "E", "E"]), ROAD_WEST)
    chosen = choose(state)
    assert chosen["follower"] == 0  # E's city, completing the start tile's or a new one


# ---------------------------------------------------------------------------- The Messengers


def messengers_view(**messengers) -> tuple[dict, object]:
    state = start(["D", "E", "V", "V"], messengers=True)
    view, _actions = seen(state)
    view["messengers"].update(messengers)
    return view, state


def test_choose_figure_stops_on_a_dark_space_else_behind():
    choices = [{"type": "ChooseFigure", "figure": 0}, {"type": "ChooseFigure", "figure": 1}]
    pending = [{"feature": "city", "points": 2}]
    view, _ = messengers_view(phase="choose_figure", figures=[[3, 1], [0, 0]], pending=pending)
    assert heuristic(view, choices, random.Random(0))["figure"] == 0  # 3 + 2 = 5
    pending = [{"feature": "city", "points": 4}]
    view, _ = messengers_view(phase="choose_figure", figures=[[3, 1], [0, 0]], pending=pending)
    assert heuristic(view, choices, random.Random(0))["figure"] == 1  # 1 + 4 = 5
    pending = [{"feature": "road", "points": 3}]
    view, _ = messengers_view(phase="choose_figure", figures=[[3, 1], [0, 0]], pending=pending)
    assert heuristic(view, choices, random.Random(0))["figure"] == 1  # none dark: behind


def test_messages_carried_out_only_when_worth_it():
    take = [{"type": "TakeMessagePoints", "figure": 0}, {"type": "TakeMessagePoints", "figure": 1}]
    carry = [
        {"type": "CarryOutMessage", "figure": 0, "follower": None},
        {"type": "CarryOutMessage", "figure": 1, "follower": None},
    ]
    view, _ = messengers_view(phase="resolve_message", message=4, figures=[[1, 1], [0, 0]])
    extra = {"type": "CarryOutMessage", "figure": None, "follower": None}
    assert heuristic(view, [*take, extra], random.Random(0)) == extra
    # message 6 with no knight on the board: 0 points, the 2 points instead
    view, _ = messengers_view(phase="resolve_message", message=6, figures=[[1, 1], [0, 0]])
    assert heuristic(view, take + carry, random.Random(0))["type"] == "TakeMessagePoints"
    # message 6 with two knights: 4 points, on the figure that stops on a dark space (1 + 4)
    view, _ = messengers_view(phase="resolve_message", message=6, figures=[[2, 1], [0, 0]])
    view["followers"] = [
        {"seat": 0, "x": 0, "y": 0, "spot": 0, "feature": "city"},
        {"seat": 0, "x": 0, "y": 0, "spot": 0, "feature": "city"},
    ]
    assert heuristic(view, take + carry, random.Random(0)) == carry[1]


def test_never_sends_a_scoring_preference_when_it_can_play():
    state = start(["D", "E", "V", "V"], messengers=True)
    view, actions = seen(state)
    assert any(action["type"] == "SetScoringPreference" for action in actions)
    assert heuristic(view, actions, random.Random(0))["type"] == "PlaceTile"


# ---------------------------------------------------------------------------- strength


def test_greedy_beats_random_in_most_of_40_games():
    wins = 0
    for seed in range(40):
        seat = seed % 2
        policies = [heuristic, random_choice] if seat == 0 else [random_choice, heuristic]
        outcome = play_match(GAME, policies, seed)
        wins += outcome.winners == [seat]
    assert wins >= 34
