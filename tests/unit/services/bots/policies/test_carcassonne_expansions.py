"""The Carcassonne heuristic bot with Inns & Cathedrals and Traders & Builders: always a legal
action, its use of inns, cathedrals, goods, the large follower, the builder and the pig on
hand-built boards, where it puts its pigs and builders in whole matches, and a quick check of
its strength against the random bot."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.bots.arena import play_match
from services.bots.policies import random_choice
from services.bots.policies.carcassonne import heuristic
from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.expansions import BuilderTurn
from services.rules.games.carcassonne.state import PlaceTile, TilePlaced
from tests.unit.services.bots.policies.test_carcassonne import (
    DECODER,
    Checked,
    against_random,
    messengers_view,
    placed_at,
    play,
    seen,
)

BOTH = {"inns_cathedrals": True, "traders_builders": True}
MORE = ["V", "U", "K", "J", "B", "W", "L", "H", "I", "N", "P"] * 2
"""Tiles left after a scenario's, so that the game goes on (none of them is drawn)."""


def start(order: list[str], seats: int = 2):
    resolved = GAME.resolve_options({"tile_order": order, **BOTH}, seats)
    assert isinstance(resolved, dict), resolved
    return GAME.fold(GAME.setup(resolved, seats, random.Random(0)))


def choose(state, only=None) -> dict:
    """The bot's choice, among the legal actions or those of them ``only`` keeps."""
    view, actions = seen(state)
    if only is not None:
        actions = [action for action in actions if only(action)]
    chosen = heuristic(view, actions, random.Random(0))
    assert chosen in actions
    return chosen


# ---------------------------------------------------------------------------- legality


@pytest.mark.parametrize(
    ("seats", "messengers"), [(2, False), (3, False), (4, True), (5, False), (6, False)]
)
def test_heuristic_always_answers_a_legal_action(seats, messengers):
    checked = Checked()
    policies = [random_choice if seat % 2 else checked for seat in range(seats)]
    outcome = play_match(GAME, policies, seats, {**BOTH, "messengers": messengers})
    assert outcome.scores and checked.calls > 10


def test_beats_random_with_both_expansions():
    wins = 0
    for seed in range(16):
        seat = seed % 2
        policies = [heuristic, random_choice] if seat == 0 else [random_choice, heuristic]
        wins += play_match(GAME, policies, seed, BOTH).winners == [seat]
    assert wins >= 14


# ---------------------------------------------------------------------------- Inns & Cathedrals
# D, the start tile: city N, road W-E. IO: a straight road W-E with an inn. IK: a city N and W,
# a road with an inn from the south ending at it. IB: a city on all sides with a cathedral.


def test_no_inn_on_its_own_road_that_cannot_be_finished():
    """The last tile: its road (V, D, U) scores 3 unfinished, and nothing with an inn."""
    state = play(start(["D", "V", "U", "IO"]), PlaceTile(1, 0, 0, 0), PlaceTile(-1, 0, 1, None))
    assert placed_at(choose(state))[:2] not in ((-2, 0), (1, -1))


def test_an_inn_on_the_opponents_road_that_cannot_be_finished():
    state = play(start(["D", "U", "V", "IO"]), PlaceTile(-1, 0, 1, None), PlaceTile(1, 0, 0, 0))
    assert placed_at(choose(state))[:2] in ((-2, 0), (1, -1))


def test_finishes_its_road_through_an_inn():
    """A's cloister ends its road west of D; IK turned once ends it east: 3 tiles, 6 points."""
    state = play(start(["D", "A", "E", "IK", *MORE]), PlaceTile(-1, 0, 3, 1), PlaceTile(0, 1, 2))
    assert placed_at(choose(state)) == (1, 0, 1)


def test_a_cathedral_goes_to_the_city_it_cannot_finish_of_the_opponent():
    """Its city (D, G) and the opponent's (E) are open, with two tiles left: the cathedral in
    either makes it worth nothing unfinished."""
    opponents = PlaceTile(0, -1, 2, 0)
    for order in (["D", "G", "E", "IB"], ["D", "G", "E", "IB", "U", "V"]):
        state = play(start(order), PlaceTile(0, 1, 1, 0), opponents)
        assert placed_at(choose(state))[:2] == (0, -2)


def test_the_large_follower_on_a_big_city_a_follower_on_a_small_one():
    """R, F and F around D's city make an open city of 4 tiles and 2 pennants; E ends it."""
    big = [PlaceTile(0, 1, 2), PlaceTile(1, 1, 0), PlaceTile(-1, 1, 0), PlaceTile(-1, 0, 1)]
    state = play(start(["D", "R", "F", "F", "U", "E", *MORE]), *big)
    chosen = choose(state)
    assert chosen["piece"] == "large_follower" and placed_at(chosen)[:2] in ((-2, 1), (2, 1))
    chosen = choose(play(start(["D", "U", "E", *MORE]), PlaceTile(-1, 0, 1)))
    assert chosen["piece"] == "follower" and chosen["follower"] == 0


# ---------------------------------------------------------------------------- Traders & Builders


def test_completes_the_opponents_city_for_its_wine():
    """TO (a city W-E with wine) turned N-S above D with the opponent's knight: E closes it,
    4 points to the opponent and the wine to the bot."""
    state = play(start(["D", "U", "TO", "E", *MORE]), PlaceTile(-1, 0, 1), PlaceTile(0, 1, 1, 0))
    assert placed_at(choose(state)) == (0, 2, 2)


def test_the_builder_on_its_own_road():
    """Its road (D, V) is open at both ends; U extends it west: the builder goes there."""
    state = play(start(["D", "V", "E", "U", *MORE]), PlaceTile(1, 0, 0, 0), PlaceTile(0, 1, 2))
    chosen = choose(state)
    assert chosen["piece"] == "builder" and chosen["follower"] == 0


PIG_FARM = [
    PlaceTile(0, 1, 2, 1),  # E closes D's city, a farmer in its field
    PlaceTile(-1, 0, 1, 0),
    PlaceTile(1, 1, 1),  # E, its city east, in the farmer's field
    PlaceTile(-2, 0, 1),
    PlaceTile(2, 1, 3),  # E closes that city
    PlaceTile(-3, 0, 1),
]
"""The bot's farmer in a field with two completed cities; V next to draw."""


def on_the_farm(action: dict) -> bool:
    """V at (-1, 1) turned once joins the farmer's field (its feature 1): the placements
    there."""
    return placed_at(action) == (-1, 1, 1)


def test_the_pig_where_it_holds_the_farm():
    state = play(start(["D", "E", "U", "E", "U", "E", "U", "V", *MORE]), *PIG_FARM)
    chosen = choose(state, on_the_farm)
    assert chosen["piece"] == "pig" and chosen["follower"] == 1


def test_no_pig_where_the_opponent_holds_the_farm():
    state = play(start(["D", "E", "U", "E", "U", "E", "U", "V", *MORE]), *PIG_FARM)
    view, actions = seen(state)
    farmer = {"seat": 1, "x": 0, "y": 1, "spot": 1, "feature": "field"}
    view["followers"] += [farmer, farmer]
    chosen = heuristic(view, [a for a in actions if on_the_farm(a)], random.Random(0))
    assert chosen["piece"] != "pig"


def test_pigs_where_it_holds_the_farm_and_builders_that_earn_tiles():
    """In whole matches against random players: every pig the bot places stands in a field
    where it has the most farmers, every builder on a road or city left open, and its
    builders earn second tiles."""
    pigs = builders = builder_turns = 0
    for seed in range(4):
        for state, seat, events in against_random(BOTH, seed):
            builder_turns += sum(type(e) is BuilderTurn and e.seat == 0 for e in events)
            placed = events[0]
            if seat or type(placed) is not TilePlaced or placed.piece not in ("pig", "builder"):
                continue
            extras = state.extras
            if placed.piece == "pig":
                pigs += 1
                farmers = _farmers(state, state.parent[extras.pigs[0]])
                assert farmers[0] == max(farmers) > 0
            else:
                builders += 1
                assert extras.builders[0] >= 0, "the builder came straight home"
    assert pigs and builders and builder_turns


def _farmers(state, root: int) -> list[int]:
    """Followers per seat on the feature ``root``, a large follower counting two."""
    counts = [0, 0]
    for holder in state.holders[root] or ():
        counts[holder & 7] += 2 if holder >> 3 in state.extras.large else 1
    return counts


# ---------------------------------------------------------------------------- with The Messengers

FARMER = {"x": 0, "y": 1, "spot": 1}
"""The bot's farmer of ``PIG_FARM``, in a field with two completed cities."""


def message_8_view(pig: bool) -> tuple[dict, list[dict]]:
    """The bot (figures on 2 and 1) drew message 8 with ``PIG_FARM``'s farmer its only follower
    (``pig``: its pig in that field, placed with V), and the actions it may answer."""
    state = play(start(["D", "E", "U", "E", "U", "E", "U", "V", *MORE]), *PIG_FARM)
    state = play(state, PlaceTile(-1, 1, 1, 1, "pig") if pig else PlaceTile(-1, 1, 1))
    _view, actions = seen(state)
    state = play(state, DECODER.decode(msgspec.json.encode(actions[0])))  # no follower
    view, _actions = seen(state)
    drawn = {"phase": "resolve_message", "message": 8, "figures": [[2, 1], [0, 0]]}
    view["messengers"] = messengers_view(**drawn)[0]["messengers"]
    carry = [{"type": "CarryOutMessage", "figure": f, "follower": FARMER} for f in (0, 1)]
    take = [{"type": "TakeMessagePoints", "figure": f} for f in (0, 1)]
    return view, carry + take


def test_message_8_scores_the_farm_with_its_pig_at_4_a_city():
    """The engine gives 8 for the farm with the pig (3 + 1 per city): figure 2 stops on 10, a
    dark space, so the bot carries the message out there; without the pig 6 points stop
    nowhere dark."""
    view, actions = message_8_view(pig=True)
    assert heuristic(view, actions, random.Random(0)) == actions[0]
    view, actions = message_8_view(pig=False)
    assert heuristic(view, actions, random.Random(0)) != actions[0]
