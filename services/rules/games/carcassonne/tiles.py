"""Carcassonne tile data, loaded once from ``seeds/carcassonne/tiles.json`` and precomputed.

Everything the engine needs per move is a tuple lookup here: each tile in each of its four
rotations gets a *code* ``tile * 4 + rotation`` and tables indexed by that code, so placement
checks and feature merges never rotate anything at run time.

Geometry: a tile edge is split into three *ports* (left part, centre, right part), numbered
clockwise from the north-west corner: ``Nw N Ne En E Es Se S Sw Ws W Wn`` = 0..11. A clockwise
quarter turn moves port ``p`` to ``(p + 3) % 12``. Port ``3 * side + k`` touches the neighbour's
port ``3 * opposite(side) + 2 - k``. Sides are ``N E S W`` = 0..3.
"""

from __future__ import annotations

import json
from pathlib import Path

from services.rules.games.contract import SEEDS_DIR

CITY, ROAD, FIELD, CLOISTER = 0, 1, 2, 3
KIND_NAMES = ("city", "road", "field", "cloister")
NO_EDGE = 3
"""Edge value of an empty neighbour in an open square's requirement key."""

TILE_FILE = SEEDS_DIR / "carcassonne" / "tiles.json"
EXPANSIONS = ("inns_cathedrals", "traders_builders")
"""The expansions whose land tiles lie beside the base tiles, each in ``<name>.json`` and
played with the table option of the same name."""
GOODS = ("wine", "grain", "cloth")
"""Traders & Builders' goods, in the order of the per-seat goods counts."""


def _load(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


DATA = _load(TILE_FILE)
_EXPANSION_DATA = {name: _load(TILE_FILE.with_name(f"{name}.json")) for name in EXPANSIONS}
BASE_TILES = len(DATA["tiles"])
"""The base game's tiles come first: their indices (and so their codes) never change."""
DATA["tiles"] = DATA["tiles"] + [
    tile for name in EXPANSIONS for tile in _EXPANSION_DATA[name]["tiles"]
]
TILE_SET: tuple[str, ...] = ("base",) * BASE_TILES + tuple(
    name for name in EXPANSIONS for _tile in _EXPANSION_DATA[name]["tiles"]
)
"""Per tile, the set it comes from: ``base`` or an expansion's name."""
PORT_NAMES: tuple[str, ...] = tuple(DATA["ports"])
_PORT_INDEX = {name: index for index, name in enumerate(PORT_NAMES)}

LETTERS: tuple[str, ...] = tuple(tile["letter"] for tile in DATA["tiles"])
TILE_INDEX = {letter: index for index, letter in enumerate(LETTERS)}
COUNTS: tuple[int, ...] = tuple(tile["count"] for tile in DATA["tiles"])
"""Copies of each tile in the boxes, the expansions' included (``box_counts`` per match)."""


def box_counts(expansions: tuple[str, ...] = ()) -> tuple[int, ...]:
    """Copies of each tile in play with the base game and ``expansions``; 0 for the tiles of
    an expansion not played."""
    return tuple(
        count if TILE_SET[tile] == "base" or TILE_SET[tile] in expansions else 0
        for tile, count in enumerate(COUNTS)
    )


BASE_COUNTS = box_counts()
START_TILE: str = DATA["start_tile"]

PICTURES: int = DATA["pictures"]
"""The version of the unrotated pictures ``tiles.json`` describes its tiles in. Version 1
(before December 2026) drew H with its cities east and west and I with its cities north and
east; version 2 follows Wikicarpedia's pictures. A match's events and a turn list say which
version their rotations are turned from."""
_TURNS_SINCE: dict[int, dict[int, int]] = {
    int(version): {TILE_INDEX[letter]: turns for letter, turns in turned.items()}
    for version, turned in DATA["earlier_pictures"].items()
}
"""Per earlier version, the clockwise quarter turns to add to a rotation of a redrawn tile
given against that version's picture (H with rotation 0 in version 1 is H with rotation 1
today)."""


def _turns_since(pictures: int, tile: int) -> int:
    if pictures == PICTURES:
        return 0
    try:
        return _TURNS_SINCE[pictures].get(tile, 0)
    except KeyError:
        raise ValueError(
            f"pictures version {pictures} is not one of {sorted([*_TURNS_SINCE, PICTURES])}"
        ) from None


def current_rotation(tile: int, rotation: int, pictures: int) -> int:
    """A rotation turned from the pictures of version ``pictures``, as today's pictures say it
    (ValueError for a version never published)."""
    return (rotation + _turns_since(pictures, tile)) % 4


def rotation_in(tile: int, rotation: int, pictures: int) -> int:
    """Today's rotation as the pictures of version ``pictures`` say it."""
    return (rotation - _turns_since(pictures, tile)) % 4


SEG_KIND: tuple[tuple[int, ...], ...] = tuple(
    tuple(KIND_NAMES.index(feature["kind"]) for feature in tile["features"])
    for tile in DATA["tiles"]
)
"""Per tile, the kind of each feature (a follower *spot* is an index into this list)."""
SEG_PENNANT: tuple[tuple[int, ...], ...] = tuple(
    tuple(int(feature.get("pennant", False)) for feature in tile["features"])
    for tile in DATA["tiles"]
)
SEG_INN: tuple[tuple[int, ...], ...] = tuple(
    tuple(int(feature.get("inn", False)) for feature in tile["features"]) for tile in DATA["tiles"]
)
"""Per tile and feature: 1 for a road with an inn (Inns & Cathedrals)."""
SEG_CATHEDRAL: tuple[tuple[int, ...], ...] = tuple(
    tuple(int(feature.get("cathedral", False)) for feature in tile["features"])
    for tile in DATA["tiles"]
)
"""Per tile and feature: 1 for a city with a cathedral (Inns & Cathedrals)."""
SEG_GOODS: tuple[tuple[int, ...], ...] = tuple(
    tuple(
        GOODS.index(feature["goods"]) if "goods" in feature else -1 for feature in tile["features"]
    )
    for tile in DATA["tiles"]
)
"""Per tile and feature: the index in ``GOODS`` of a city's goods (Traders & Builders), or -1."""
SEG_CITIES: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(tuple(feature.get("cities", ())) for feature in tile["features"])
    for tile in DATA["tiles"]
)
"""Per tile and field feature, the city features of the same tile that the field touches."""
CLOISTER_SPOT: tuple[int, ...] = tuple(
    kinds.index(CLOISTER) if CLOISTER in kinds else -1 for kinds in SEG_KIND
)
"""Per tile, the feature index of its cloister, or -1."""


def _base_port_seg(tile: dict) -> tuple[int, ...]:
    owner = [-1] * 12
    for seg, feature in enumerate(tile["features"]):
        for name in feature.get("ports", ()):
            owner[_PORT_INDEX[name]] = seg
    return tuple(owner)


_BASE_PORT_SEG = tuple(_base_port_seg(tile) for tile in DATA["tiles"])

SEG_SIDES: tuple[tuple[int, ...], ...] = tuple(
    tuple(
        sum(1 for side in range(4) if owner[3 * side + 1] == seg)
        if SEG_KIND[tile][seg] in (CITY, ROAD)
        else 0
        for seg in range(len(SEG_KIND[tile]))
    )
    for tile, owner in enumerate(_BASE_PORT_SEG)
)
"""Per tile, how many tile sides each city or road feature reaches (its open ends alone)."""

PORT_SEG: list[tuple[int, ...]] = []
"""Per code, the feature index at each of the 12 ports in board orientation."""
EDGES: list[tuple[int, int, int, int]] = []
"""Per code, the edge kind (CITY, ROAD or FIELD) of the N, E, S and W sides."""
SEG_MASK: list[tuple[int, ...]] = []
"""Per code, the 12-bit port mask of each feature in board orientation (cloister: 0)."""
OPEN_LINKS: list[tuple[tuple[tuple[int, int, int], ...], ...]] = []
"""Per code and side ``d``: what the empty square beyond side ``d`` will join when a tile goes
there, as ``(port bits, port, feature)`` in that square's own port numbering; ``feature`` is
this tile's feature index. City and field sides give one link, road sides three."""

for _tile, _owner in enumerate(_BASE_PORT_SEG):
    for _rotation in range(4):
        ports = tuple(_owner[(port - 3 * _rotation) % 12] for port in range(12))
        PORT_SEG.append(ports)
        edges = tuple(min(SEG_KIND[_tile][ports[3 * side + 1]], FIELD) for side in range(4))
        EDGES.append(edges)  # type: ignore[arg-type]
        SEG_MASK.append(
            tuple(
                sum(1 << port for port in range(12) if ports[port] == seg)
                for seg in range(len(SEG_KIND[_tile]))
            )
        )
        links_by_side = []
        for side in range(4):
            facing = (side + 2) % 4
            if edges[side] == ROAD:
                links = tuple(
                    (1 << (3 * facing + 2 - k), 3 * facing + 2 - k, ports[3 * side + k])
                    for k in range(3)
                )
            else:
                links = ((7 << (3 * facing), 3 * facing + 1, ports[3 * side + 1]),)
            links_by_side.append(links)
        OPEN_LINKS.append(tuple(links_by_side))


def _fitting_rotations(tile: int, key: int) -> tuple[int, ...]:
    fits = []
    for rotation in range(4):
        edges = EDGES[tile * 4 + rotation]
        if all((key >> (2 * side)) & 3 in (NO_EDGE, edges[side]) for side in range(4)):
            fits.append(rotation)
    return tuple(fits)


FITS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(_fitting_rotations(tile, key) for key in range(256)) for tile in range(len(LETTERS))
)
"""``FITS[tile][key]``: the rotations of ``tile`` that fit an empty square whose requirement
``key`` holds 2 bits per side (N, E, S, W from the low bits): the edge kind the neighbour on
that side shows, or NO_EDGE."""

OPEN_KEY = 255
"""Requirement key of a square with no neighbours yet."""


# ---------------------------------------------------------------------------- naming features

SIDE_NAMES = ("N", "E", "S", "W")
HALF_NAMES = {0: "NNW", 2: "NNE", 3: "ENE", 5: "ESE", 6: "SSE", 8: "SSW", 9: "WSW", 11: "WNW"}
"""A field's half-edges on the board: the edge, then the half of it (``NNW``: the north
edge's western half)."""


def feature_reach(tile: int, rotation: int, spot: int) -> dict[str, list[str]]:
    """Where a tile's feature meets the tile's edges on the board, turned by ``rotation``: a
    city's or road's sides (``edges``), a field's half-edges (``halves``); a cloister none.
    What an outside tool names a follower's feature by, without the tile data."""
    owner = _BASE_PORT_SEG[tile]
    ports = sorted((port + 3 * rotation) % 12 for port in range(12) if owner[port] == spot)
    kind = SEG_KIND[tile][spot]
    if kind in (CITY, ROAD):
        return {"edges": [SIDE_NAMES[port // 3] for port in ports if port % 3 == 1]}
    if kind == FIELD:
        return {"halves": [HALF_NAMES[port] for port in ports if port % 3 != 1]}
    return {}


def spot_reaching(tile: int, rotation: int, kind: str, named: dict[str, list[str]]) -> int:
    """The feature (spot) of ``kind`` on the turned tile that reaches every edge or half-edge
    ``named`` (a cloister needs none); ValueError when none or several do."""
    wanted = {key: set(values) for key, values in named.items() if key in ("edges", "halves")}
    found = [
        spot
        for spot, seg_kind in enumerate(SEG_KIND[tile])
        if KIND_NAMES[seg_kind] == kind
        and all(
            values <= set(feature_reach(tile, rotation, spot).get(key, ()))
            for key, values in wanted.items()
        )
    ]
    if len(found) != 1:
        reach = ", ".join(f"{key} {sorted(values)}" for key, values in wanted.items())
        which = "no" if not found else "more than one"
        raise ValueError(
            f"{which} {kind} of tile {LETTERS[tile]} turned {rotation} reaches {reach or 'it'}"
        )
    return found[0]
