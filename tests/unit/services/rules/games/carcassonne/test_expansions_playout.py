"""Random playouts of every combination of Inns & Cathedrals, Traders & Builders and The
Messengers, at every player count the options allow, with invariants after every move.

The base game alone has its own playouts (``test_playout``, ``test_messengers_playout``).
Games per combination are modest (the suite runs them all); ``playtable bench engine
carcassonne --options`` measures thousands.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import product

import msgspec
import pytest

from services.operator.stored import StoredMatch
from services.operator.verify import differences
from services.rules.engine import RulesEngine
from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.expansions import (
    FOLLOWER,
    IN_SUPPLY,
    LARGE,
    BonusScored,
    BuilderTurn,
    GoodsTaken,
    most_goods,
)
from services.rules.games.carcassonne.messengers import MessageResolved
from services.rules.games.carcassonne.state import (
    FOLLOWERS_PER_PLAYER,
    FeatureScored,
    TileDrawn,
    TilePlaced,
)
from services.rules.games.playout import random_game, random_playout
from services.rules.games.registry import GAMES
from shared.domain import rules_api as api

COMBINATIONS = [
    {"inns_cathedrals": ic, "traders_builders": tb, "messengers": ms}
    for ic, tb, ms in product((False, True), repeat=3)
    if ic or tb
]
GAMES_PER_COMBINATION = 300
ENGINE = RulesEngine(GAMES)


def seat_counts(options: dict[str, bool]) -> list[int]:
    return [2, 3, 4, 5, 6] if options["inns_cathedrals"] or options["messengers"] else [2, 3, 4, 5]


class ExpansionInvariants:
    """Checks run after every move of a playout with either expansion."""

    def __init__(self, seats: int):
        self.seats = seats
        self.scores = [0] * seats
        self.placed: Counter = Counter()
        self.counted: Counter = Counter()
        self.turn_seat = 0
        self.full = 0
        self.builder_turns = 0
        self.builder_part = False
        self.placer = -1
        self.seen: Counter = Counter()

    def __call__(self, state, seat, action, events) -> None:
        for event in events:
            self.check_event(state, event)
        extras = state.extras
        large = set(extras.large)
        followers = Counter()
        for held in filter(None, state.holders):
            for holder in held:
                if holder >> 3 not in large:
                    followers[holder & 7] += 1
        for player in range(self.seats):
            assert state.supply[player] + followers[player] == FOLLOWERS_PER_PLAYER
            node = extras.large[player]
            if node != IN_SUPPLY:
                assert (node << 3) | player in state.holders[state.parent[node]]
            for piece, node in (("builder", extras.builders[player]), ("pig", extras.pigs[player])):
                if node == IN_SUPPLY:
                    continue
                root = state.parent[node]
                held = state.holders[root] or []
                assert any(h & 7 == player for h in held), f"{piece} without its owner there"
                if piece == "builder":
                    assert state.open_ends[root], "a builder on a completed feature"
        assert all(now >= before for now, before in zip(state.scores, self.scores, strict=True))
        self.scores = list(state.scores)
        assert sum(extras.goods) <= 20
        if state.finished:
            assert self.counted == self.placed, "every follower's feature is scored once"

    def check_event(self, state, event) -> None:
        kind = type(event)
        self.seen[kind.__name__] += 1
        if kind is TileDrawn and event.seat != self.turn_seat:
            self.turn_seat, self.full, self.builder_turns = event.seat, 0, 0
        elif kind is BuilderTurn:
            self.builder_turns += 1
            assert self.builder_turns <= self.full, "a builder turn earned by a builder turn"
            self.builder_part = True
        elif kind is TilePlaced:
            self.seen[f"piece {event.piece}"] += event.follower is not None
            self.full += not self.builder_part
            self.builder_part = False
            self.placer = event.seat
            if event.follower is not None and event.piece in (FOLLOWER, LARGE):
                self.placed[(event.x, event.y, event.follower)] += 1
        elif kind is FeatureScored:
            for follower in event.followers:
                self.counted[(follower.x, follower.y, follower.spot)] += 1
        elif kind is MessageResolved and event.returned is not None:
            returned = event.returned
            self.counted[(returned.x, returned.y, returned.spot)] += 1
        elif kind is GoodsTaken:
            assert event.seat == self.placer and sum(event.goods) > 0
        elif kind is BonusScored and event.reason != "pig":
            assert event in most_goods(state.extras.goods, self.seats)


@pytest.mark.parametrize(
    "options",
    COMBINATIONS,
    ids=["+".join(name for name, on in options.items() if on) for options in COMBINATIONS],
)
def test_random_playouts_of_every_combination_keep_the_invariants(options):
    counts = seat_counts(options)
    rng = random.Random(len(counts) * 7 + sum(options.values()))
    seen: Counter = Counter()
    for game in range(GAMES_PER_COMBINATION):
        seats = counts[game % len(counts)]
        check = ExpansionInvariants(seats)
        state, outcome, _moves = random_playout(GAME, seats, rng, options, check=check)
        assert state.finished and outcome.scores == state.scores
        assert outcome.winners == [s for s in range(seats) if state.scores[s] == max(state.scores)]
        seen += check.seen
    if options["inns_cathedrals"]:
        assert seen["piece large_follower"] > 0
    if options["traders_builders"]:
        assert seen["piece builder"] and seen["piece pig"] and seen["BuilderTurn"]
        assert seen["GoodsTaken"] and seen["BonusScored"] and seen["PieceReturned"]


def test_an_expansions_match_verifies_and_imports_as_a_match_file():
    """The stored rows of a match with all three expansions are the fold of its events (as
    ``playtable verify`` checks them), and its playtable match file imports to the same end."""
    options = GAME.resolve_options({**COMBINATIONS[-1]}, 3)
    events, state = random_game(GAME, 3, random.Random(8), options)
    codec = ENGINE.codec("carcassonne")
    progress = codec.progress(state, events)
    players = ["Ann", "Bo", "Cy"]
    row = StoredMatch(
        match_id="expansions",
        game="carcassonne",
        version=len(events),
        state=progress.state,
        to_move=progress.to_move,
        status="finished",
        result=progress.result,
        players=players,
        options=options,
        commitments={},
    )
    stored = [(number, msgspec.json.encode(event)) for number, event in enumerate(events, 1)]
    assert list(differences(codec, row, stored, {})) == []
    assert codec.state(progress.state) == state
    document = {
        "format": "playtable-match",
        "format_version": 1,
        "game": "carcassonne",
        "options": options,
        "players": players,
        "status": "finished",
        "result": msgspec.to_builtins(progress.result),
        "events": [
            {"version": number, "type": type(event).__name__, "data": data, "seat": None}
            for number, data, event in zip(
                range(1, len(events) + 1), msgspec.to_builtins(events), events, strict=True
            )
        ],
    }
    raw = msgspec.Raw(msgspec.json.encode(document))
    imported = ENGINE.handle(api.ImportMatch("carcassonne", raw))
    assert isinstance(imported, api.Imported), imported
    assert imported.progress.result == progress.result
    assert msgspec.json.encode(GAME.view(state, 0))  # the view encodes, pieces and goods too
