"""Random playouts with Inns & Cathedrals and Traders & Builders against the naive reference
model of ``test_playout`` (which floods features straight from the tile data), taught the
expansions' scoring: inns, cathedrals, the large follower's two votes, the pig's bonus."""

from __future__ import annotations

import json
import random
from collections import Counter

import msgspec
import pytest

from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne.expansions import LARGE, PIG, BonusScored
from services.rules.games.carcassonne.state import FeatureScored, TilePlaced
from services.rules.games.carcassonne.tiles import EXPANSIONS
from services.rules.games.contract import SEEDS_DIR
from tests.unit.services.rules.games.carcassonne.test_playout import TILES, Reference, kind

for _name in EXPANSIONS:
    _data = json.loads((SEEDS_DIR / "carcassonne" / f"{_name}.json").read_text(encoding="utf-8"))
    TILES.update({tile["letter"]: tile for tile in _data["tiles"]})


class ExpansionReference(Reference):
    """The reference model with the expansions' pieces and scoring."""

    def __init__(self, seats: int):
        super().__init__(seats)
        self.large: set[tuple[int, int, int]] = set()
        self.pigs: dict[int, tuple[int, int, int]] = {}
        self.pig_bonus: list[tuple[int, int]] = []

    def marked(self, parts: set, mark: str) -> bool:
        return any(TILES[self.board[(x, y)][0]]["features"][s].get(mark) for x, y, s in parts)

    def points(self, x: int, y: int, spot: int, final: bool) -> tuple[set, int]:
        parts, points = super().points(x, y, spot, final)
        what = kind(self.board[(x, y)][0], spot)
        if what not in ("road", "city"):
            return parts, points
        complete = not self.feature(x, y, spot)[1]
        tiles = len({(px, py) for px, py, _ in parts})
        if what == "road" and self.marked(parts, "inn"):
            return parts, 2 * tiles if complete else 0
        if what == "city" and self.marked(parts, "cathedral"):
            pennants = sum(
                TILES[self.board[(px, py)][0]]["features"][ps].get("pennant", False)
                for px, py, ps in parts
            )
            return parts, 3 * (tiles + pennants) if complete else 0
        return parts, points

    def check_scoring(self, event: FeatureScored) -> None:
        """As the base model's, with the large follower counting two."""
        first = event.followers[0]
        parts, points = self.points(first.x, first.y, first.spot, event.final)
        held = self.holders(parts)
        assert sorted(held) == sorted((f.x, f.y, f.spot) for f in event.followers)
        assert all((f.x, f.y, f.spot) in self.large for f in event.followers if f.large)
        assert event.points == points, event
        counts: Counter = Counter()
        for part, seat in held.items():
            counts[seat] += 2 if part in self.large else 1
        most = max(counts.values())
        assert event.seats == sorted(seat for seat, n in counts.items() if n == most), event
        for seat in event.seats:
            self.scores[seat] += event.points
        if event.final and event.feature == "field":
            cities = points // 3
            self.pig_bonus += [
                (seat, cities) for seat in event.seats if self.pigs.get(seat) in parts and cities
            ]
        if not event.final:
            for part in held:
                del self.followers[part]
                self.large.discard(part)

    def apply(self, events: list) -> None:
        placed = events[0]
        assert isinstance(placed, TilePlaced)
        spot = (placed.x, placed.y, placed.follower)
        if placed.piece == LARGE:
            self.large.add(spot)
        elif placed.piece != "follower":  # builder and pig: no followers
            if placed.piece == PIG:
                self.pigs[placed.seat] = spot
            events = [msgspec.structs.replace(placed, follower=None), *events[1:]]
        bonuses = [event for event in events if type(event) is BonusScored]
        for bonus in bonuses:
            self.scores[bonus.seat] += bonus.points
        super().apply(events)
        if bonuses:
            pigs = [(b.seat, b.points) for b in bonuses if b.reason == PIG]
            assert sorted(pigs) == sorted(self.pig_bonus)


@pytest.mark.parametrize(
    "options",
    [
        {"inns_cathedrals": True},
        {"traders_builders": True},
        {"inns_cathedrals": True, "traders_builders": True},
    ],
)
@pytest.mark.parametrize("seats", [2, 4])
def test_random_playouts_agree_with_the_naive_reference(options, seats):
    scored = Counter()
    for game_number in range(20):
        rng = random.Random(seats * 1000 + game_number)
        events = GAME.setup(GAME.resolve_options(options, seats), seats, rng)
        state = GAME.fold(events)
        reference = ExpansionReference(seats)
        while GAME.result(state) is None:
            seat = GAME.to_move(state)[0]
            new = GAME.decide(state, seat, rng.choice(GAME.legal_actions(state, seat)))
            reference.apply(new)
            scored.update(type(event).__name__ for event in new)
            scored.update(f"{e.reason} bonus" for e in new if type(e) is BonusScored)
            scored["large"] += sum(
                f.large for e in new if type(e) is FeatureScored for f in e.followers
            )
            state = GAME.fold(new, state)
        assert reference.scores == GAME.result(state).scores
    assert scored["FeatureScored"] > 0
    if options.get("traders_builders"):
        assert scored["pig bonus"] > 0 and scored["BonusScored"] > scored["pig bonus"]
    if options.get("inns_cathedrals"):
        assert scored["large"] > 0
