"""Carcassonne's placements of the drawn tile: every legal ``PlaceTile``, listed fast, and the
check of a piece's spot (``rules`` decides the rest).

Actions are built once per square and picked out with memoised ``itemgetter`` pickers per
(tile, requirement key, occupied ports): a legal action list shares its immutable actions.
With Inns & Cathedrals the large follower stands where a follower may; with Traders & Builders
the builder and the pig stand beside the player's own followers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from services.rules.games.carcassonne.expansions import (
    BUILDER,
    FOLLOWER,
    IN_SUPPLY,
    LARGE,
    PIG,
    piece_problem,
)
from services.rules.games.carcassonne.standing import standing_of
from services.rules.games.carcassonne.state import (
    NODE_SLOTS,
    CarcassonneState,
    PlaceTile,
    xy_of,
)
from services.rules.games.carcassonne.tiles import (
    CITY,
    FIELD,
    FITS,
    LETTERS,
    ROAD,
    SEG_KIND,
    SEG_MASK,
)
from services.rules.games.contract import Rejection

_NO_FOLLOWER = 1 << 12
"""Flag in a picker key: the player has no follower left."""
_SPOT_CHOICES = NODE_SLOTS + 1
"""Per rotation: no follower, or one of up to 8 spots."""
_ACTIONS_PER_SQUARE = 4 * _SPOT_CHOICES
_LARGE_PICKER = 1 << 30
"""Flag in a picker key: a picker out of ``_large_actions_at``."""
Picker = Callable[[list[PlaceTile]], Sequence[PlaceTile]]
_pickers: dict[int, Picker] = {}
_square_actions: dict[int, list[PlaceTile]] = {}


def _build_picker(tile: int, key: int, occupied: int, large: bool = False) -> Picker | None:
    """Picks the legal actions of ``tile`` out of a square's ``_actions_at`` list, given the
    square's requirement ``key`` and its ``occupied`` ports (those leading to a feature that
    holds a follower); None where the tile does not fit. ``large``: out of its
    ``_large_actions_at`` list, with the large follower too on every free spot."""
    picks = []
    large_picks = []
    for rotation in FITS[tile][key]:
        picks.append(rotation * _SPOT_CHOICES)
        free = [
            rotation * _SPOT_CHOICES + spot + 1
            for spot, mask in enumerate(SEG_MASK[(tile << 2) + rotation])
            if not mask & occupied
        ]
        if not occupied & _NO_FOLLOWER:
            picks += free
        if large:
            large_picks += [_ACTIONS_PER_SQUARE + pick for pick in free]
    picks += large_picks
    if not picks:
        return None
    if len(picks) > 1:
        return itemgetter(*picks)
    return itemgetter(slice(picks[0], picks[0] + 1))


def _picker(tile: int, key: int, occupied: int) -> Picker:
    """``_build_picker`` memoised: the same patterns come back all game long."""
    cache_key = (tile << 21) | (key << 13) | occupied
    picker = _pickers.get(cache_key)
    if picker is None:
        picker = _pickers[cache_key] = _build_picker(tile, key, occupied)  # type: ignore[assignment]
    return picker


def _large_picker(tile: int, key: int, occupied: int) -> Picker:
    """``_build_picker`` with the large follower, memoised."""
    cache_key = _LARGE_PICKER | (tile << 21) | (key << 13) | occupied
    picker = _pickers.get(cache_key)
    if picker is None:
        picker = _pickers[cache_key] = _build_picker(tile, key, occupied, True)  # type: ignore[assignment]
    return picker


_FREE_PICKERS = tuple(
    tuple(_build_picker(tile, key, 0) for key in range(256)) for tile in range(len(LETTERS))
)
"""``_FREE_PICKERS[tile][key]``: the picker when no neighbouring feature holds a follower
(None: the tile does not fit)."""
_BARE_PICKERS = tuple(
    tuple(_build_picker(tile, key, _NO_FOLLOWER) for key in range(256))
    for tile in range(len(LETTERS))
)
"""``_BARE_PICKERS[tile][key]``: the picker for a player without followers left."""


def _actions_at(square: int) -> list[PlaceTile]:
    """All conceivable actions on a square (index ``rotation * 9 + spot + 1``, no follower at
    ``rotation * 9``), built once per process: actions are immutable, so legal action lists
    share them."""
    actions = _square_actions.get(square)
    if actions is None:
        x, y = xy_of(square)
        actions = [
            PlaceTile(x, y, rotation, spot - 1 if spot else None)
            for rotation in range(4)
            for spot in range(_SPOT_CHOICES)
        ]
        _square_actions[square] = actions
    return actions


_piece_actions: dict[str, dict[int, list[PlaceTile | None]]] = {
    LARGE: {},
    BUILDER: {},
    PIG: {},
}
"""Per expansion piece and square, ``_pieces_at``'s list."""


def _pieces_at(square: int, piece: str) -> list[PlaceTile | None]:
    """``_actions_at`` for an expansion's piece: the same indices, None where no spot."""
    actions = _piece_actions[piece].get(square)
    if actions is None:
        x, y = xy_of(square)
        actions = [
            PlaceTile(x, y, rotation, spot - 1, piece) if spot else None
            for rotation in range(4)
            for spot in range(_SPOT_CHOICES)
        ]
        _piece_actions[piece][square] = actions
    return actions


_large_actions: dict[int, list[PlaceTile | None]] = {}


def _large_actions_at(square: int) -> list[PlaceTile | None]:
    """A square's ``_actions_at``, then the same with the large follower (memoised)."""
    actions = _large_actions.get(square)
    if actions is None:
        actions = _large_actions[square] = [*_actions_at(square), *_pieces_at(square, LARGE)]
    return actions


_piece_pickers: dict[int, Picker | None] = {}
_UNKNOWN: Any = object()
"""A piece picker not built yet (None: built, and the tile has no such spot there)."""


def _piece_picker(tile: int, key: int, own: int, field: bool) -> Picker | None:
    """Picks the builder's (``field`` False: roads and cities) or the pig's (fields) spots
    of ``tile`` on a square with requirement ``key`` whose ``own`` ports join a feature
    holding the player's followers (memoised)."""
    cache_key = (tile << 22) | (key << 14) | (own << 1) | field
    if cache_key in _piece_pickers:
        return _piece_pickers[cache_key]
    kinds = SEG_KIND[tile]
    picks = [
        rotation * _SPOT_CHOICES + spot + 1
        for rotation in FITS[tile][key]
        for spot, mask in enumerate(SEG_MASK[(tile << 2) + rotation])
        if mask & own and (kinds[spot] == FIELD) == field
    ]
    picker = None
    if len(picks) > 1:
        picker = itemgetter(*picks)
    elif picks:
        picker = itemgetter(slice(picks[0], picks[0] + 1))
    _piece_pickers[cache_key] = picker
    return picker


def occupied_ports(state: CarcassonneState, square: int) -> int:
    """Ports of an empty square that would join a feature already holding a follower."""
    parent = state.parent
    holders = state.holders
    occupied = 0
    for bits, _port, node in state.links[square]:
        if holders[parent[node]]:
            occupied |= bits
    return occupied


def placements(state: CarcassonneState, seat: int) -> list[Any]:
    """The placements of the drawn tile, picked out of memoised per-square action lists; with
    Inns & Cathedrals or Traders & Builders also those with their pieces: the large
    follower's beside each square's, then the builder's and pig's, square by square."""
    bare = not state.supply[seat]
    extras = state.extras
    if extras is None:
        return _tile_actions(state, bare)
    large = extras.inns_cathedrals and extras.large[seat] == IN_SUPPLY
    builder = extras.traders_builders and extras.builders[seat] == IN_SUPPLY
    pig = extras.traders_builders and extras.pigs[seat] == IN_SUPPLY
    mine = _own_roots(state, seat, builder, pig) if builder or pig else None
    if not mine:
        return _large_tile_actions(state, bare) if large else _tile_actions(state, bare)
    owned: list[tuple[int, int, int]] = []
    if large:
        actions = _large_tile_actions(state, bare)
        owned = _owned_squares(state, mine)
    else:
        actions = _owned_tile_actions(state, bare, mine, owned)
    return _add_builder_pig_actions(actions, state.tile, builder, pig, owned)


def _own_roots(state: CarcassonneState, seat: int, builder: bool, pig: bool) -> set[int]:
    """The roots of the features holding a follower of ``seat`` where its pieces may join:
    roads and cities for the ``builder``, fields for the ``pig``."""
    parent = state.parent
    codes = state.codes
    roots = set()
    for node in standing_of(state)[seat]:
        if pig if SEG_KIND[codes[node >> 3] >> 2][node & 7] == FIELD else builder:
            roots.add(parent[node])
    return roots


def _own_ports(state: CarcassonneState, square: int, seat: int) -> int:
    """Ports of an empty square that would join a feature holding a follower of ``seat``."""
    parent = state.parent
    holders = state.holders
    bits = 0
    for port_bits, _port, node in state.links[square]:
        held = holders[parent[node]]
        if held and any(holder & 7 == seat for holder in held):
            bits |= port_bits
    return bits


def _owned_squares(state: CarcassonneState, mine: set[int]) -> list[tuple[int, int, int]]:
    """The squares where the drawn tile fits and joins a feature of ``mine``, as ``(square,
    requirement key, ports joining those features)``."""
    fits = FITS[state.tile]
    parent = state.parent
    links = state.links
    owned = []
    for square, key in state.open.items():
        if not fits[key]:
            continue
        own = 0
        for bits, _port, node in links[square]:
            if parent[node] in mine:
                own |= bits
        if own:
            owned.append((square, key, own))
    return owned


def _add_builder_pig_actions(
    actions: list[Any], tile: int, builder: bool, pig: bool, owned: list[tuple[int, int, int]]
) -> list[Any]:
    """``actions`` extended by the placements of ``tile`` with the builder (on a road or
    city) or the pig (on a field) joining a feature of the player's on the ``owned`` squares
    (``_owned_squares``), square by square, the builder's first."""
    pickers = _piece_pickers
    builders, pigs = _piece_actions[BUILDER], _piece_actions[PIG]
    tile_key = tile << 22
    for square, key, own in owned:
        cache_key = tile_key | (key << 14) | (own << 1)
        if builder:
            picker = pickers.get(cache_key, _UNKNOWN)
            if picker is _UNKNOWN:
                picker = _piece_picker(tile, key, own, False)
            if picker is not None:
                actions += picker(builders.get(square) or _pieces_at(square, BUILDER))
        if pig:
            picker = pickers.get(cache_key | 1, _UNKNOWN)
            if picker is _UNKNOWN:
                picker = _piece_picker(tile, key, own, True)
            if picker is not None:
                actions += picker(pigs.get(square) or _pieces_at(square, PIG))
    return actions


def _tile_actions(state: CarcassonneState, bare: bool) -> list[Any]:
    """The placements of the drawn tile (``bare``: none with a follower)."""
    tile = state.tile
    actions: list[PlaceTile] = []
    square_actions = _square_actions
    if bare:
        bare_pickers = _BARE_PICKERS[tile]
        for square, key in state.open.items():
            picker = bare_pickers[key]
            if picker is not None:
                try:
                    actions += picker(square_actions[square])
                except KeyError:  # a square seen for the first time
                    actions += picker(_actions_at(square))
        return actions
    free = _FREE_PICKERS[tile]
    pickers = _pickers
    tile_key = tile << 21
    parent = state.parent
    holders = state.holders
    links = state.links
    for square, key in state.open.items():
        picker = free[key]
        if picker is None:
            continue
        occupied = 0
        for bits, _port, node in links[square]:
            if holders[parent[node]]:
                occupied |= bits
        if occupied:
            picker = pickers.get(tile_key | (key << 13) | occupied) or _picker(tile, key, occupied)
        try:
            actions += picker(square_actions[square])
        except KeyError:  # a square seen for the first time
            actions += picker(_actions_at(square))
    return actions


def _owned_tile_actions(
    state: CarcassonneState, bare: bool, mine: set[int], owned: list[tuple[int, int, int]]
) -> list[Any]:
    """``_tile_actions``, in the same pass appending to ``owned`` the squares whose ports
    join a feature of ``mine`` (as ``_owned_squares`` lists them)."""
    tile = state.tile
    free = (_BARE_PICKERS if bare else _FREE_PICKERS)[tile]
    pickers = _pickers
    tile_key = tile << 21
    square_actions = _square_actions
    parent = state.parent
    holders = state.holders
    links = state.links
    actions: list[PlaceTile] = []
    for square, key in state.open.items():
        picker = free[key]
        if picker is None:
            continue
        occupied = own = 0
        for bits, _port, node in links[square]:
            root = parent[node]
            if holders[root]:
                occupied |= bits
                if root in mine:
                    own |= bits
        if own:
            owned.append((square, key, own))
        if occupied and not bare:
            picker = pickers.get(tile_key | (key << 13) | occupied) or _picker(tile, key, occupied)
        actions += picker(square_actions.get(square) or _actions_at(square))
    return actions


def _large_tile_actions(state: CarcassonneState, bare: bool) -> list[Any]:
    """``_tile_actions`` for a player holding the large follower: every placement also with
    the large follower on each free spot, beside the square's others (``bare``: no ordinary
    follower left)."""
    tile = state.tile
    free = _free_large_pickers(tile)
    pickers = _pickers
    flags = _LARGE_PICKER | (tile << 21) | (_NO_FOLLOWER if bare else 0)
    square_actions = _large_actions
    parent = state.parent
    holders = state.holders
    links = state.links
    actions: list[Any] = []
    for square, key in state.open.items():
        picker = free[key]
        if picker is None:
            continue
        occupied = 0
        for bits, _port, node in links[square]:
            if holders[parent[node]]:
                occupied |= bits
        if occupied or bare:
            cache_key = flags | (key << 13) | occupied
            picker = pickers.get(cache_key) or _large_picker(
                tile, key, cache_key & _PICKER_OCCUPIED
            )
        actions += picker(square_actions.get(square) or _large_actions_at(square))
    return actions


_free_large: dict[int, list[Picker | None]] = {}


def _free_large_pickers(tile: int) -> list[Picker | None]:
    """``_FREE_PICKERS[tile]`` with the large follower, built on first use of the tile."""
    found = _free_large.get(tile)
    if found is None:
        found = _free_large[tile] = [_build_picker(tile, key, 0, True) for key in range(256)]
    return found


_PICKER_OCCUPIED = (1 << 13) - 1
"""The occupied ports and the no-follower flag of a picker key."""


def spot_problem(
    state: CarcassonneState, seat: int, piece: str, square: int, code: int, spot: int
) -> Rejection | None:
    """Why ``piece`` may not stand on feature ``spot`` of the tile ``code`` on ``square``."""
    problem = piece_problem(state.extras, seat, piece)
    if problem is not None:
        return problem
    mask = SEG_MASK[code][spot]
    if piece == FOLLOWER or piece == LARGE:
        if piece == FOLLOWER and not state.supply[seat]:
            return Rejection("no_followers", "all your followers are on the board")
        if mask & occupied_ports(state, square):
            return Rejection("feature_occupied", "that feature already holds a follower")
        return None
    kind = SEG_KIND[code >> 2][spot]
    if (kind == FIELD) != (piece == PIG) or kind not in (CITY, ROAD, FIELD):
        where = "a field" if piece == PIG else "a road or city"
        return Rejection("bad_spot", f"the {piece} stands on {where}")
    if not mask & _own_ports(state, square, seat):
        return Rejection(
            "no_own_follower", f"the {piece} joins a feature holding a follower of yours"
        )
    return None
