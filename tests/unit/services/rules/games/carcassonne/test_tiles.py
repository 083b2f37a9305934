"""The Carcassonne tile data against the published base-game tile list (2nd edition)."""

from __future__ import annotations

import json

import pytest

from services.rules.games.carcassonne import tiles
from services.rules.games.contract import SEEDS_DIR

DATA = json.loads((SEEDS_DIR / "carcassonne" / "tiles.json").read_text(encoding="utf-8"))
BY_LETTER = {tile["letter"]: tile for tile in DATA["tiles"]}

PUBLISHED_COUNTS = {
    "A": 2, "B": 4, "C": 1, "D": 4, "E": 5, "F": 2, "G": 1, "H": 3, "I": 2, "J": 3, "K": 3,
    "L": 3, "M": 2, "N": 3, "O": 2, "P": 3, "Q": 1, "R": 3, "S": 2, "T": 1, "U": 8, "V": 9,
    "W": 4, "X": 1,
}  # fmt: skip

PUBLISHED_EDGES = {
    "A": "FFRF", "B": "FFFF", "C": "CCCC", "D": "CRFR", "E": "CFFF", "F": "FCFC", "G": "FCFC",
    "H": "CFCF", "I": "CFFC", "J": "CRRF", "K": "CFRR", "L": "CRRR", "M": "CCFF", "N": "CCFF",
    "O": "CRRC", "P": "CRRC", "Q": "CCFC", "R": "CCFC", "S": "CCRC", "T": "CCRC", "U": "RFRF",
    "V": "FFRR", "W": "FRRR", "X": "RRRR",
}  # fmt: skip
"""Edge kinds of the published pictures (Wikicarpedia's base-game tiles, whose letters these
are), north, east, south, west (City, Road, Field)."""

SIDES = "NESW"


def _features(letter: str, kind: str) -> list[dict]:
    return [feature for feature in BY_LETTER[letter]["features"] if feature["kind"] == kind]


def _side_kind(tile: dict, side: str) -> str:
    for feature in tile["features"]:
        if side in feature.get("ports", ()):
            return feature["kind"][0].upper()
    raise AssertionError(f"{tile['letter']}: no feature owns port {side}")


def test_counts_and_totals_match_the_published_tile_list():
    counts = {tile["letter"]: tile["count"] for tile in DATA["tiles"]}
    assert counts == PUBLISHED_COUNTS
    assert sum(counts.values()) == 72
    assert DATA["start_tile"] == "D"

    def total(kind: str, predicate=lambda feature: True) -> int:
        return sum(
            BY_LETTER[letter]["count"]
            for letter in counts
            for feature in _features(letter, kind)
            if predicate(feature)
        )

    assert total("cloister") == 6
    assert total("city", lambda feature: feature.get("pennant", False)) == 10
    assert total("city") == 49
    assert total("road") == 62
    side_totals = {"C": 0, "R": 0, "F": 0}
    for tile in DATA["tiles"]:
        for side in SIDES:
            side_totals[_side_kind(tile, side)] += tile["count"]
    assert side_totals == {"C": 79, "R": 94, "F": 115}


@pytest.mark.parametrize("letter", sorted(PUBLISHED_EDGES))
def test_edges_of_each_published_picture(letter):
    tile = BY_LETTER[letter]
    assert "".join(_side_kind(tile, side) for side in SIDES) == PUBLISHED_EDGES[letter]


@pytest.mark.parametrize("letter", sorted(PUBLISHED_EDGES))
def test_every_port_belongs_to_exactly_one_feature_and_sides_are_whole(letter):
    tile = BY_LETTER[letter]
    owners: dict[str, int] = {}
    for index, feature in enumerate(tile["features"]):
        for port in feature.get("ports", ()):
            assert port not in owners, f"{letter}: port {port} owned twice"
            owners[port] = index
    assert sorted(owners) == sorted(DATA["ports"])
    for side in SIDES:
        halves = [owners[port] for port in DATA["ports"] if port[0] == side]
        centre = tile["features"][owners[side]]["kind"]
        if centre == "road":
            assert halves[0] != owners[side] != halves[-1], f"{letter}: road side {side}"
        else:
            assert len(set(halves)) == 1, f"{letter}: side {side} split without a road"
    for feature in tile["features"]:
        if feature["kind"] == "road":
            assert all(len(port) == 1 for port in feature["ports"]), f"{letter}: road off-centre"
        for city in feature.get("cities", ()):
            assert tile["features"][city]["kind"] == "city"


def test_features_of_well_known_tiles():
    assert [feature["kind"] for feature in BY_LETTER["A"]["features"]] == [
        "cloister",
        "road",
        "field",
    ]
    assert _features("A", "road")[0]["ports"] == ["S"]
    assert _features("C", "city")[0]["pennant"] is True
    assert len(_features("D", "field")) == 2
    assert [field["cities"] for field in _features("D", "field")] == [[0], []]
    assert len(_features("H", "city")) == 2 and _features("H", "field")[0]["cities"] == [0, 1]
    assert len(_features("I", "city")) == 2 and _features("I", "field")[0]["cities"] == [0, 1]
    assert len(_features("L", "road")) == 3 and len(_features("L", "field")) == 3
    assert len(_features("W", "road")) == 3 and len(_features("X", "road")) == 4
    assert len(_features("X", "field")) == 4
    assert [len(_features(letter, "field")) for letter in "STUV"] == [2, 2, 2, 2]
    pennants = {
        letter for letter in BY_LETTER if any(c.get("pennant") for c in _features(letter, "city"))
    }
    assert pennants == {"C", "F", "M", "O", "Q", "S"}


def test_rotation_turns_the_picture_clockwise():
    d = tiles.TILE_INDEX["D"]
    city, road, field = tiles.CITY, tiles.ROAD, tiles.FIELD
    assert tiles.EDGES[d * 4] == (city, road, field, road)
    assert tiles.EDGES[d * 4 + 1] == (road, city, road, field)
    assert tiles.EDGES[d * 4 + 2] == (field, road, city, road)
    assert tiles.EDGES[d * 4 + 3] == (road, field, road, city)
    a = tiles.TILE_INDEX["A"]
    road_port = tiles.PORT_SEG[a * 4 + 1].index(1)
    assert tiles.PORT_NAMES[road_port] == "W"


def test_fits_table_requires_matching_edges():
    e = tiles.TILE_INDEX["E"]
    only_city_north = 0 | (tiles.NO_EDGE << 2) | (tiles.NO_EDGE << 4) | (tiles.NO_EDGE << 6)
    assert tiles.FITS[e][only_city_north] == (0,)
    city_north_and_south = tiles.CITY | (tiles.NO_EDGE << 2) | (tiles.CITY << 4)
    city_north_and_south |= tiles.NO_EDGE << 6
    assert tiles.FITS[e][city_north_and_south] == ()
    assert tiles.FITS[tiles.TILE_INDEX["C"]][tiles.OPEN_KEY] == (0, 1, 2, 3)
