"""Carcassonne's published view for other services: the game data and helpers they may use.

This module is the games' published interface to the rest of playtable (the bots first): the
tile data of ``seeds/carcassonne/tiles.json`` as the engine precomputes it, in the encodings
clients see in views and actions. Other services import Carcassonne's data from here (and the
games from ``services.rules.games.registry``), never from the engine's other modules, which
may change shape at any time; a name here changes only together with its users.

Tiles and rotations: a tile is its index in ``LETTERS`` (``TILE_INDEX`` by letter, ``COUNTS``
copies of each in the base game's box, 0 for the expansions' tiles, which follow the base
tiles); a *code* is ``tile * 4 + rotation`` (clockwise quarter turns of the
published picture). Sides are ``N E S W`` = 0..3; each side has three *ports*, numbered
clockwise from the north-west corner (0..11). A feature (a follower *spot*) is an index into the
tile's feature list.

- ``CITY``, ``ROAD``, ``FIELD``, ``CLOISTER``: the feature kinds (``KIND_NAMES`` spells them).
- ``EDGES[code]``: the edge kind (``CITY``, ``ROAD`` or ``FIELD``) of the N, E, S and W sides.
- ``FITS[tile][key]``: the rotations of ``tile`` that fit an empty square whose requirement
  ``key`` holds 2 bits per side (N, E, S, W from the low bits): the edge kind the neighbour on
  that side shows, or ``NO_EDGE``.
- ``PORT_SEG[code]``: the feature at each of the 12 ports, in board orientation.
- ``SEG_KIND[tile]``, ``SEG_SIDES[tile]``, ``SEG_CITIES[tile]``, ``SEG_PENNANT[tile]``: per
  feature, its kind, how many sides a city or road reaches, the city features a field touches,
  and whether it has a pennant.
- Inns & Cathedrals and Traders & Builders: ``box_counts(expansions)`` the copies of each tile
  in play with the expansions named (``inns_cathedrals``, ``traders_builders``);
  ``SEG_INN[tile]``, ``SEG_CATHEDRAL[tile]``: per feature, 1 for a road with an inn, a city
  with a cathedral; ``SEG_GOODS[tile]``: per feature, a city's good as an index into ``GOODS``
  (the names the view's goods counts use), or -1.
"""

from __future__ import annotations

from services.rules.games.carcassonne.tiles import (
    BASE_COUNTS as COUNTS,
)
from services.rules.games.carcassonne.tiles import (
    CITY,
    CLOISTER,
    EDGES,
    FIELD,
    FITS,
    GOODS,
    KIND_NAMES,
    LETTERS,
    NO_EDGE,
    PORT_SEG,
    ROAD,
    SEG_CATHEDRAL,
    SEG_CITIES,
    SEG_GOODS,
    SEG_INN,
    SEG_KIND,
    SEG_PENNANT,
    SEG_SIDES,
    TILE_INDEX,
    box_counts,
)

__all__ = [
    "CITY",
    "CLOISTER",
    "COUNTS",
    "EDGES",
    "FIELD",
    "FITS",
    "GOODS",
    "KIND_NAMES",
    "LETTERS",
    "NO_EDGE",
    "PORT_SEG",
    "ROAD",
    "SEG_CATHEDRAL",
    "SEG_CITIES",
    "SEG_GOODS",
    "SEG_INN",
    "SEG_KIND",
    "SEG_PENNANT",
    "SEG_SIDES",
    "TILE_INDEX",
    "box_counts",
]
