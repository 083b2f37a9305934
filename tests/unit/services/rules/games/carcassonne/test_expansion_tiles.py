"""The expansions' tile data (Inns & Cathedrals, Traders & Builders) against their published
contents, and as ``tiles`` loads it beside the base tiles."""

from __future__ import annotations

import json

import pytest

from services.rules.games.carcassonne import tiles
from services.rules.games.carcassonne.state import NODE_SLOTS
from services.rules.games.contract import SEEDS_DIR

SETS = {
    name: json.loads((SEEDS_DIR / "carcassonne" / f"{name}.json").read_text(encoding="utf-8"))
    for name in tiles.EXPANSIONS
}
ALL = [(name, tile) for name, data in SETS.items() for tile in data["tiles"]]

PUBLISHED_EDGES = {
    "IA": "FRFR", "IB": "CCCC", "IC": "CCCC", "ID": "CCFC", "IE": "CRCR", "IF": "CFCC",
    "IG": "CFFF", "IH": "CFRF", "II": "CRFC", "IJ": "RCRC", "IK": "CFRC", "IL": "CFRR",
    "IM": "CRRC", "IN": "FRRR", "IO": "FRFR", "IP": "FFRR", "IQ": "RRRR",
    "TA": "CFFC", "TB": "CFFC", "TC": "FCCC", "TD": "FCCC", "TE": "CCFC", "TF": "CCCC",
    "TG": "CRRC", "TH": "CRRC", "TI": "CRCC", "TJ": "CRCC", "TK": "CRFC", "TL": "CRFC",
    "TM": "CCRC", "TN": "CCCC", "TO": "FCFC", "TP": "CRFF", "TQ": "FCRC", "TR": "FCRC",
    "TS": "RCRC", "TT": "FRRR", "TU": "CFRC", "TV": "CFRC", "TW": "CFRR", "TX": "RRRR",
}  # fmt: skip
"""Edge kinds (north, east, south, west) of the tiles as JCloisterZone's definitions draw them
(their ids spell them: ``CRcR+`` is a city west-east with roads north and south)."""
SIDES = "NESW"
HALVES = {"N": ("Nw", "Ne"), "E": ("En", "Es"), "S": ("Se", "Sw"), "W": ("Ws", "Wn")}


def _count(name: str, predicate) -> int:
    return sum(
        tile["count"]
        for tile in SETS[name]["tiles"]
        for feature in tile["features"]
        if predicate(feature)
    )


def test_inns_and_cathedrals_holds_18_tiles_6_inns_and_2_cathedrals():
    data = SETS["inns_cathedrals"]
    assert sum(tile["count"] for tile in data["tiles"]) == 18
    assert _count("inns_cathedrals", lambda f: f.get("inn")) == 6
    assert _count("inns_cathedrals", lambda f: f.get("cathedral")) == 2
    assert all(f["kind"] == "road" for _, t in ALL for f in t["features"] if f.get("inn"))
    assert all(f["kind"] == "city" for _, t in ALL for f in t["features"] if f.get("cathedral"))
    assert "2nd edition" in data["edition"]


def test_traders_and_builders_holds_24_tiles_with_9_wine_6_grain_5_cloth():
    data = SETS["traders_builders"]
    assert sum(tile["count"] for tile in data["tiles"]) == 24
    goods = [f["goods"] for t in data["tiles"] for f in t["features"] if "goods" in f]
    assert {good: goods.count(good) for good in tiles.GOODS} == {
        "wine": 9,
        "grain": 6,
        "cloth": 5,
    }
    assert all(f["kind"] == "city" for _, t in ALL for f in t["features"] if "goods" in f)


@pytest.mark.parametrize(("name", "tile"), ALL, ids=[tile["letter"] for _, tile in ALL])
def test_every_port_is_one_features_and_the_edges_are_the_published_ones(name, tile):
    owners: dict[str, int] = {}
    for index, feature in enumerate(tile["features"]):
        for port in feature.get("ports", ()):
            assert port not in owners, f"{tile['letter']}: port {port} owned twice"
            owners[port] = index
    assert sorted(owners) == sorted(tiles.PORT_NAMES), f"{tile['letter']}: ports uncovered"
    edges = ""
    for side in SIDES:
        centre = tile["features"][owners[side]]
        edges += centre["kind"][0].upper()
        west, east = (tile["features"][owners[half]] for half in HALVES[side])
        if centre["kind"] == "city":  # a city owns the whole side
            assert owners[HALVES[side][0]] == owners[side] == owners[HALVES[side][1]]
        else:  # beside a road or a field: fields
            assert west["kind"] == east["kind"] == "field"
        if centre["kind"] == "field":
            assert owners[HALVES[side][0]] == owners[side] == owners[HALVES[side][1]]
    assert edges == PUBLISHED_EDGES[tile["letter"]]
    assert tile["description"] and len(tile["features"]) <= NODE_SLOTS
    for feature in tile["features"]:
        if feature["kind"] == "field":
            assert all(tile["features"][city]["kind"] == "city" for city in feature["cities"])
        if feature["kind"] == "cloister":
            assert "ports" not in feature


def test_the_engine_loads_the_expansions_after_the_base_tiles():
    base = tiles.BASE_TILES
    assert base == 24 and tiles.LETTERS[:base] == tuple("ABCDEFGHIJKLMNOPQRSTUVWX")
    assert set(tiles.LETTERS[base:]) == set(PUBLISHED_EDGES)
    assert sum(tiles.box_counts()) == 72
    assert sum(tiles.box_counts(("inns_cathedrals",))) == 90
    assert sum(tiles.box_counts(("traders_builders",))) == 96
    assert sum(tiles.box_counts(tiles.EXPANSIONS)) == 114
    cathedral = tiles.TILE_INDEX["IB"]
    assert tiles.COUNTS[cathedral] == 2 and tiles.SEG_CATHEDRAL[cathedral] == (1,)
    inn = tiles.TILE_INDEX["IO"]
    assert tiles.SEG_INN[inn] == (1, 0, 0) and tiles.TILE_SET[inn] == "inns_cathedrals"
    cloth = tiles.TILE_INDEX["TC"]
    assert tiles.SEG_GOODS[cloth][0] == tiles.GOODS.index("cloth")
    for letter, edges in PUBLISHED_EDGES.items():
        code = tiles.TILE_INDEX[letter] << 2
        assert "".join("CRF"[kind] for kind in tiles.EDGES[code]) == edges
    enclosed = tiles.TILE_INDEX["IC"]  # four city caps around a field touching no edge
    assert tiles.SEG_KIND[enclosed] == (0, 0, 0, 0, 2) and tiles.SEG_CITIES[enclosed][4] == (
        0,
        1,
        2,
        3,
    )
