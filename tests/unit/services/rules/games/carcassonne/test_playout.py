"""Random Carcassonne playouts: invariants at every step, and a naive reference model.

The reference model below knows nothing of the engine's union-find: it floods features across
the board straight from ``seeds/carcassonne/tiles.json`` and recomputes every scoring.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.state import (
    FOLLOWERS_PER_PLAYER,
    FeatureScored,
    GameOver,
    TilePlaced,
)
from services.rules.games.contract import SEEDS_DIR
from services.rules.games.playout import random_playout

DATA = json.loads((SEEDS_DIR / "carcassonne" / "tiles.json").read_text(encoding="utf-8"))
TILES = {tile["letter"]: tile for tile in DATA["tiles"]}
PORT_INDEX = {name: index for index, name in enumerate(DATA["ports"])}
DELTAS = ((0, 1), (1, 0), (0, -1), (-1, 0))  # N E S W


def owners(letter: str, rotation: int) -> list[int]:
    """Feature index at each of the 12 ports, in board orientation."""
    base = [-1] * 12
    for index, feature in enumerate(TILES[letter]["features"]):
        for port in feature.get("ports", ()):
            base[PORT_INDEX[port]] = index
    return [base[(port - 3 * rotation) % 12] for port in range(12)]


def kind(letter: str, spot: int) -> str:
    return TILES[letter]["features"][spot]["kind"]


class Reference:
    """A naive model of the board: tiles by (x, y), followers by (x, y, spot)."""

    def __init__(self, seats: int, start_tile: str = "D"):
        self.seats = seats
        self.board: dict[tuple[int, int], tuple[str, int]] = {(0, 0): (start_tile, 0)}
        self.followers: dict[tuple[int, int, int], int] = {}
        self.scores = [0] * seats

    def edge(self, x: int, y: int, side: int) -> str:
        letter, rotation = self.board[(x, y)]
        return kind(letter, owners(letter, rotation)[3 * side + 1])

    def feature(self, x: int, y: int, spot: int) -> tuple[set, int]:
        """The feature's (x, y, spot) parts and its number of unmatched sides."""
        parts = {(x, y, spot)}
        todo = [(x, y, spot)]
        open_sides = set()
        while todo:
            x, y, spot = todo.pop()
            letter, rotation = self.board[(x, y)]
            owner = owners(letter, rotation)
            for port in range(12):
                if owner[port] != spot:
                    continue
                side, k = divmod(port, 3)
                nx, ny = x + DELTAS[side][0], y + DELTAS[side][1]
                if (nx, ny) not in self.board:
                    open_sides.add((x, y, side))
                    continue
                their = owners(*self.board[(nx, ny)])[3 * ((side + 2) % 4) + 2 - k]
                if (nx, ny, their) not in parts:
                    parts.add((nx, ny, their))
                    todo.append((nx, ny, their))
        return parts, len(open_sides)

    def neighbours(self, x: int, y: int) -> int:
        return sum(
            (x + dx, y + dy) in self.board for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy
        )

    def points(self, x: int, y: int, spot: int, final: bool) -> tuple[set, int]:
        letter = self.board[(x, y)][0]
        what = kind(letter, spot)
        if what == "cloister":
            count = self.neighbours(x, y)
            return {(x, y, spot)}, (1 + count if final else 9 * (count == 8))
        parts, open_sides = self.feature(x, y, spot)
        tiles = len({(px, py) for px, py, _ in parts})
        if what == "road":
            return parts, tiles
        if what == "city":
            pennants = sum(
                TILES[self.board[(px, py)][0]]["features"][ps].get("pennant", False)
                for px, py, ps in parts
            )
            return parts, (tiles + pennants if open_sides else 2 * (tiles + pennants))
        cities = set()
        for px, py, ps in parts:
            for city in TILES[self.board[(px, py)][0]]["features"][ps]["cities"]:
                city_parts, city_open = self.feature(px, py, city)
                if not city_open:
                    cities.add(frozenset(city_parts))
        return parts, 3 * len(cities)

    def holders(self, parts: set) -> dict[tuple[int, int, int], int]:
        return {part: seat for part, seat in self.followers.items() if part in parts}

    def complete(self, x: int, y: int, spot: int) -> bool:
        letter = self.board[(x, y)][0]
        if kind(letter, spot) == "cloister":
            return self.neighbours(x, y) == 8
        return kind(letter, spot) in ("road", "city") and not self.feature(x, y, spot)[1]

    def check_scoring(self, event: FeatureScored) -> None:
        first = event.followers[0]
        parts, points = self.points(first.x, first.y, first.spot, event.final)
        held = self.holders(parts)
        assert sorted(held) == sorted((f.x, f.y, f.spot) for f in event.followers)
        assert all(held[(f.x, f.y, f.spot)] == f.seat for f in event.followers)
        assert event.feature == kind(self.board[(first.x, first.y)][0], first.spot)
        assert event.points == points, event
        if not event.final:
            assert self.complete(first.x, first.y, first.spot), event
        counts = Counter(held.values())
        most = max(counts.values())
        assert event.seats == sorted(seat for seat, n in counts.items() if n == most)
        for seat in event.seats:
            self.scores[seat] += event.points
        if not event.final:
            for part in held:
                del self.followers[part]

    def apply(self, events: list) -> None:
        """Check the events of one move against the model, then apply them."""
        placed = events[0]
        assert isinstance(placed, TilePlaced)
        x, y = placed.x, placed.y
        assert (x, y) not in self.board
        touching = 0
        for side, (dx, dy) in enumerate(DELTAS):
            if (x + dx, y + dy) in self.board:
                touching += 1
                self.board[(x, y)] = (placed.tile, placed.rotation)
                mine = self.edge(x, y, side)
                del self.board[(x, y)]
                assert mine == self.edge(x + dx, y + dy, (side + 2) % 4), placed
        assert touching, placed
        self.board[(x, y)] = (placed.tile, placed.rotation)
        if placed.follower is not None:
            parts, _ = self.feature(x, y, placed.follower)
            if kind(placed.tile, placed.follower) == "cloister":
                parts = {(x, y, placed.follower)}
            assert not self.holders(parts), f"{placed} joins an occupied feature"
            self.followers[(x, y, placed.follower)] = placed.seat
        for event in events[1:]:
            if isinstance(event, FeatureScored) and not event.final:
                self.check_scoring(event)
        for (fx, fy, spot), _ in list(self.followers.items()):
            assert not self.complete(fx, fy, spot), f"completed feature at {fx, fy} not scored"
        finals = [event for event in events if isinstance(event, FeatureScored) and event.final]
        if finals or isinstance(events[-1], GameOver):
            for event in finals:
                self.check_scoring(event)
            counted = {(f.x, f.y, f.spot) for event in finals for f in event.followers}
            assert counted == set(self.followers), "a follower escaped the final scoring"
            assert events[-1].scores == self.scores


class Invariants:
    """Cheap checks run after every move of every playout."""

    def __init__(self, seats: int):
        self.seats = seats
        self.board = {(0, 0): ("D", 0)}
        self.placed: Counter = Counter()
        self.counted: Counter = Counter()

    def __call__(self, state, seat, action, events) -> None:
        placed = events[0]
        assert isinstance(placed, TilePlaced) and placed.seat == seat
        assert (placed.x, placed.y, placed.rotation, placed.follower) == (
            action.x,
            action.y,
            action.rotation,
            action.follower,
        )
        x, y = placed.x, placed.y
        owner = owners(placed.tile, placed.rotation)
        neighbours = 0
        for side, (dx, dy) in enumerate(DELTAS):
            other = self.board.get((x + dx, y + dy))
            if other is not None:
                neighbours += 1
                theirs = owners(*other)[3 * ((side + 2) % 4) + 1]
                assert kind(placed.tile, owner[3 * side + 1]) == kind(other[0], theirs)
        assert neighbours >= 1 and (x, y) not in self.board
        self.board[(x, y)] = (placed.tile, placed.rotation)
        if placed.follower is not None:
            self.placed[(x, y, placed.follower)] += 1
        for event in events:
            if isinstance(event, FeatureScored):
                assert event.followers, "a feature without followers was scored"
                for follower in event.followers:
                    self.counted[(follower.x, follower.y, follower.spot)] += 1
        on_board = Counter(holder & 7 for held in state.holders if held for holder in held)
        for player in range(self.seats):
            assert state.supply[player] + on_board[player] == FOLLOWERS_PER_PLAYER
        if state.finished:
            assert self.counted == self.placed, "every follower's feature is scored exactly once"
            assert sum(state.supply) + sum(on_board.values()) == FOLLOWERS_PER_PLAYER * self.seats


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_random_playouts_keep_the_invariants(seats):
    rng = random.Random(1000 + seats)
    games = 500
    lengths = Counter()
    for _ in range(games):
        state, outcome, moves = random_playout(GAME, seats, rng, check=Invariants(seats))
        assert state.finished and len(state.codes) + (state.drawn - moves) == 72
        assert outcome.scores == state.scores and len(outcome.scores) == seats
        assert outcome.winners == [s for s in range(seats) if state.scores[s] == max(state.scores)]
        lengths[moves] += 1
    assert sum(lengths.values()) == games
    assert max(lengths) == 71  # nearly every game places every tile


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_random_playouts_agree_with_the_naive_reference(seats):
    for game_number in range(25):
        rng = random.Random(seats * 100 + game_number)
        events = GAME.setup({"tile_order": None}, seats, rng)
        state = GAME.fold(events)
        reference = Reference(seats)
        scored = 0
        while GAME.result(state) is None:
            seat = GAME.to_move(state)[0]
            new = GAME.decide(state, seat, rng.choice(GAME.legal_actions(state, seat)))
            reference.apply(new)
            scored += sum(isinstance(event, FeatureScored) for event in new)
            state = GAME.fold(new, state)
        assert reference.scores == GAME.result(state).scores
        assert scored > 0
