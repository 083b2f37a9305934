"""Inns & Cathedrals and Traders & Builders for Carcassonne: their pieces, events and state.

This module holds what does not walk the board: the options, the events, the per-seat pieces
(the large follower, the builder, the pig), the goods tokens and the end-game goods bonus. The
engine (``evolve``, ``rules``, ``scoring``) applies them to the board; the tiles' inns,
cathedrals and goods are data (``tiles.SEG_INN``, ``SEG_CATHEDRAL``, ``SEG_GOODS``). See
``seeds/carcassonne/README.md`` ("Inns & Cathedrals", "Traders & Builders") for every reading.

Pieces on the board are kept as union-find nodes (``ordinal * 8 + spot``, -1: in the supply).
The large follower is also a follower (in ``holders``, as every follower is): only its node
marks it, and it counts twice for majorities. The builder and the pig are no followers: they
never count for majorities and never occupy a feature.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.rules.games.carcassonne.tiles import GOODS
from services.rules.games.contract import Rejection

INNS_CATHEDRALS = "inns_cathedrals"
TRADERS_BUILDERS = "traders_builders"

FOLLOWER, LARGE, BUILDER, PIG = "follower", "large_follower", "builder", "pig"
PIECES = (FOLLOWER, LARGE, BUILDER, PIG)
"""What ``PlaceTile.piece`` may name: the ordinary follower (the default), or one of the
expansions' pieces."""
IN_SUPPLY = -1
INN_POINTS_PER_TILE = 2
CATHEDRAL_POINTS_PER_ITEM = 3
PIG_POINTS_PER_CITY = 1
"""The pig's farm: 4 points per completed city instead of 3 (the farm's 3, and this)."""
MOST_GOODS_POINTS = 10


class ExpansionsInPlay(msgspec.Struct, frozen=True, tag_field="type"):
    """The match plays Inns & Cathedrals and/or Traders & Builders (follows ``StackShuffled``,
    whose stack then holds their tiles)."""

    inns_cathedrals: bool
    traders_builders: bool


class BuilderTurn(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    """``seat`` extended the road or city of its builder on a full turn's tile: it draws and
    places a second tile now (that tile earns no third)."""

    seat: int


class GoodsTaken(msgspec.Struct, frozen=True, tag_field="type"):
    """``seat`` completed a city with goods and takes its tokens, per good of ``tiles.GOODS``
    (wine, grain, cloth), whoever scores the city."""

    seat: int
    goods: list[int]


class PieceReturned(msgspec.Struct, frozen=True, tag_field="type"):
    """A builder or pig goes back to ``seat``: its feature was completed, or its owner has no
    follower left on it."""

    seat: int
    piece: str
    x: int
    y: int
    spot: int


class BonusScored(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    """Final scoring, beside a feature's points: ``reason`` ``pig`` (1 more per completed city
    of the farm its owner scores) or a good (``wine``, ``grain``, ``cloth``: 10 for the most
    tokens, every tied seat)."""

    seat: int
    reason: str
    points: int


class ExtrasState(msgspec.Struct):
    """Per seat, the node of its large follower, builder and pig (``IN_SUPPLY``: not on the
    board; a piece the match does not play stays there) and its goods tokens
    (``goods[3 * seat + good]``). ``owed`` counts the builder turns the active seat has earned
    and not yet played; ``building`` marks the placement now being made as one of them."""

    inns_cathedrals: bool
    traders_builders: bool
    large: list[int]
    builders: list[int]
    pigs: list[int]
    goods: list[int]
    owed: int = 0
    building: bool = False


class Piece(msgspec.Struct, frozen=True):
    """A builder or pig on the board: the tile square and the feature (spot) it stands on."""

    seat: int
    piece: str
    x: int
    y: int
    spot: int


class PiecesView(msgspec.Struct, frozen=True):
    """Public: which expansions are played, per seat the pieces still in its supply
    (``large_follower``, ``builder``, ``pig``: 1 or 0) and its goods tokens per good, the
    builders and pigs on the board, and the builder turns the active seat is owed."""

    inns_cathedrals: bool
    traders_builders: bool
    supply: list[dict[str, int]]
    goods: list[dict[str, int]]
    pieces: list[Piece]
    builder_turns_owed: int
    builder_turn: bool


# ---------------------------------------------------------------------------- options


def chosen(options: dict[str, Any]) -> tuple[str, ...]:
    """The expansions the options play, in ``tiles.EXPANSIONS`` order."""
    return tuple(name for name in (INNS_CATHEDRALS, TRADERS_BUILDERS) if options.get(name))


def in_play(options: dict[str, Any]) -> ExpansionsInPlay | None:
    if not chosen(options):
        return None
    return ExpansionsInPlay(bool(options.get(INNS_CATHEDRALS)), bool(options.get(TRADERS_BUILDERS)))


def new_state(event: ExpansionsInPlay, seats: int) -> ExtrasState:
    return ExtrasState(
        inns_cathedrals=event.inns_cathedrals,
        traders_builders=event.traders_builders,
        large=[IN_SUPPLY] * seats,
        builders=[IN_SUPPLY] * seats,
        pigs=[IN_SUPPLY] * seats,
        goods=[0] * (len(GOODS) * seats),
    )


def copy_state(state: ExtrasState) -> ExtrasState:
    return msgspec.structs.replace(
        state,
        large=list(state.large),
        builders=list(state.builders),
        pigs=list(state.pigs),
        goods=list(state.goods),
    )


def nodes_of(extras: ExtrasState, piece: str) -> list[int]:
    """Per seat, the node of its ``piece`` (large follower, builder or pig)."""
    if piece == LARGE:
        return extras.large
    return extras.builders if piece == BUILDER else extras.pigs


def piece_problem(extras: ExtrasState | None, seat: int, piece: str) -> Rejection | None:
    """Why ``seat`` may not place ``piece`` at all now (the match lacks its expansion, or the
    piece is on the board), None if it may; where it may stand the engine checks."""
    if piece == FOLLOWER:
        return None
    if piece not in PIECES:
        return Rejection("bad_piece", f"piece is one of {', '.join(PIECES)}")
    if extras is None or not (
        extras.inns_cathedrals if piece == LARGE else extras.traders_builders
    ):
        return Rejection("bad_piece", f"this match plays no {piece}")
    if nodes_of(extras, piece)[seat] != IN_SUPPLY:
        return Rejection("piece_placed", f"your {piece} is on the board")
    return None


# ---------------------------------------------------------------------------- scoring helpers


def most_goods(goods: list[int], seats: int) -> list[BonusScored]:
    """The end-game goods bonus: per good, 10 to every seat holding the most tokens (none
    when nobody holds one)."""
    bonuses = []
    for good, name in enumerate(GOODS):
        counts = [goods[len(GOODS) * seat + good] for seat in range(seats)]
        best = max(counts)
        if best:
            bonuses += [
                BonusScored(seat, name, MOST_GOODS_POINTS)
                for seat, count in enumerate(counts)
                if count == best
            ]
    return bonuses


def supply_view(extras: ExtrasState, seat: int) -> dict[str, int]:
    supply = {}
    if extras.inns_cathedrals:
        supply[LARGE] = int(extras.large[seat] == IN_SUPPLY)
    if extras.traders_builders:
        supply[BUILDER] = int(extras.builders[seat] == IN_SUPPLY)
        supply[PIG] = int(extras.pigs[seat] == IN_SUPPLY)
    return supply


def goods_view(extras: ExtrasState, seat: int) -> dict[str, int]:
    if not extras.traders_builders:
        return {}
    return {name: extras.goods[len(GOODS) * seat + good] for good, name in enumerate(GOODS)}
