"""The Carcassonne bot's features (see ``carcassonne_board``): one connected road, city, field or
cloister of the view's board, what a road or city scores, and which of them a tile laid on an
empty square joins."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.rules.games.carcassonne.public import (
    PORT_SEG,
    ROAD,
    SEG_CATHEDRAL,
    SEG_INN,
    SEG_KIND,
)

STEP = (1, 256, -1, -256)
"""Square offsets to the N, E, S and W neighbours (squares coded as the engine does)."""
STEPS = frozenset(STEP)
AROUND = (1, 257, 256, 255, -1, -257, -256, -255)
BACK = tuple(3 * ((side + 2) % 4) for side in range(4))
"""First port of the neighbour's side facing back across side ``side``."""
SPECIAL: tuple[tuple[int, ...], ...] = tuple(
    tuple(inn | cathedral for inn, cathedral in zip(inns, cathedrals, strict=True))
    for inns, cathedrals in zip(SEG_INN, SEG_CATHEDRAL, strict=True)
)
"""Per tile and feature: 1 for a road with an inn or a city with a cathedral."""


def square_of(x: int, y: int) -> int:
    return ((x + 128) << 8) | (y + 128)


class Feature:
    """One connected road, city, field or cloister of the board."""

    __slots__ = (
        "kind",
        "tiles",
        "pennants",
        "ends",
        "squares",
        "owners",
        "links",
        "special",
        "goods",
        "large",
        "pigs",
    )

    def __init__(self, kind: int, seats: int) -> None:
        self.kind = kind
        self.tiles: set[int] = set()
        self.pennants = 0
        self.ends = 0
        """Unmatched sides (city and road)."""
        self.squares: set[int] = set()
        """The empty squares its open ends face."""
        self.owners = [0] * seats
        """Followers per seat, a large follower counting two."""
        self.links: set[int] = set()
        """A field's cities, a city's fields (roots)."""
        self.special = 0
        """Inns on a road, cathedrals in a city (Inns & Cathedrals)."""
        self.goods = [0, 0, 0]
        """A city's goods symbols per good (Traders & Builders)."""
        self.large = 0
        """The bot's own large followers on it (0 or 1)."""
        self.pigs: set[int] = set()
        """The seats whose pig stands in this field."""


def feature_points(kind: int, tiles: int, pennants: int, special: int) -> tuple[int, int]:
    """A road's or city's points unfinished (at the end) and completed; ``special``: with an
    inn or a cathedral (Inns & Cathedrals: 2 per road tile, 3 per city tile and pennant when
    completed, nothing when not)."""
    if kind == ROAD:
        return (0, 2 * tiles) if special else (tiles, tiles)
    if special:
        return 0, 3 * (tiles + pennants)
    return tiles + pennants, 2 * (tiles + pennants)


Joins = tuple[
    list[set[int] | None], list[int], list[list[int]], dict[int, list[int]], Callable[[int], int]
]


def joins(board: Any, square: int, code: int) -> Joins:
    """What ``code`` laid on the empty ``square`` joins on ``board``: per feature of the tile,
    the roots it joins, how many of its sides meet a neighbour (roads and cities), the empty
    squares its open sides face; the tile's features grouped by the board feature that
    connects them (representative: its members), and the representative of a feature."""
    kinds = SEG_KIND[code >> 2]
    ports = PORT_SEG[code]
    count = len(kinds)
    ordinal = board.ordinal
    codes = board.codes
    root = board.root
    joined: list[set[int] | None] = [None] * count
    links = [0] * count
    open_squares: list[list[int]] = [[] for _ in range(count)]
    for side in range(4):
        beyond = square + STEP[side]
        centre = ports[3 * side + 1]
        other = ordinal.get(beyond)
        if other is None:
            if kinds[centre] <= ROAD:
                open_squares[centre].append(beyond)
            continue
        their = PORT_SEG[codes[beyond]]
        back = BACK[side]
        base = 8 * other
        for k in range(3):
            seg = ports[3 * side + k]
            top = root[base + their[back + 2 - k]]
            found = joined[seg]
            if found is None:
                joined[seg] = {top}
            else:
                found.add(top)
        if kinds[centre] <= ROAD:
            links[centre] += 1

    group = list(range(count))

    def find(seg: int) -> int:
        while group[seg] != seg:
            seg = group[seg]
        return seg

    first: dict[int, int] = {}
    for seg in range(count):
        for top in joined[seg] or ():
            seen = first.get(top)
            if seen is None:
                first[top] = seg
            else:
                a, b = find(seen), find(seg)
                if a != b:
                    group[a] = b
    members: dict[int, list[int]] = {}
    for seg in range(count):
        members.setdefault(find(seg), []).append(seg)
    return joined, links, open_squares, members, find


def distinct_towns(towns: set[int], merged: dict[int, int]) -> list[int]:
    """Each city once: roots merged into one group of the new tile count once."""
    seen: set[int] = set()
    result = []
    for town in towns:
        rep = merged.get(town)
        if rep is None:
            result.append(town)
        elif rep not in seen:
            seen.add(rep)
            result.append(town)
    return result
