"""Carcassonne's scoring and drawing: completed features, followers back, the final count."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import compress
from typing import Any

import msgspec

from services.rules.games.carcassonne import expansions, messengers
from services.rules.games.carcassonne.evolve import CLOSES, SIDES, evolve, extras_of
from services.rules.games.carcassonne.expansions import (
    BUILDER,
    CATHEDRAL_POINTS_PER_ITEM,
    FOLLOWER,
    IN_SUPPLY,
    INN_POINTS_PER_TILE,
    LARGE,
    PIG,
    PIG_POINTS_PER_CITY,
    BonusScored,
    ExtrasState,
    GoodsTaken,
    PieceReturned,
)
from services.rules.games.carcassonne.messengers import (
    FiguresSummed,
    OwnFollower,
    Spot,
)
from services.rules.games.carcassonne.state import (
    AROUND,
    CLOISTER_COMPLETE_POINTS,
    FARM_POINTS_PER_CITY,
    STEPS,
    CarcassonneState,
    FeatureScored,
    Follower,
    GameOver,
    TileDiscarded,
    TileDrawn,
    xy_of,
)
from services.rules.games.carcassonne.tiles import (
    CITY,
    CLOISTER,
    FIELD,
    FITS,
    GOODS,
    KIND_NAMES,
    LETTERS,
    OPEN_KEY,
    PORT_SEG,
    ROAD,
    SEG_CATHEDRAL,
    SEG_CITIES,
    SEG_GOODS,
    SEG_INN,
    SEG_KIND,
    SEG_PENNANT,
    SEG_SIDES,
)


def own_followers(state: CarcassonneState, seat: int) -> list[OwnFollower]:
    """``seat``'s followers on the board with what the messages need of their features."""
    followers = []
    codes = state.codes
    holders = state.holders
    large = large_nodes(state)
    for root in compress(range(len(holders)), holders):
        held: list[int] = holders[root]  # type: ignore[assignment]
        if all(holder & 7 != seat for holder in held):
            continue
        kind = SEG_KIND[codes[root >> 3] >> 2][root & 7]
        counts = _counts(state.seats, held, large)
        majority = counts[seat] == max(counts)
        points = _unfinished_points(state, root, kind)
        if kind == FIELD and _pig_at(state.extras, state.parent, seat, root):
            points += PIG_POINTS_PER_CITY * len(_completed_cities(state, root))
        nodes = state.members[root] or (root,)
        pennants = sum(SEG_PENNANT[codes[node >> 3] >> 2][node & 7] for node in nodes)
        for holder in sorted(held):
            if holder & 7 == seat:
                node = holder >> 3
                x, y = xy_of(state.squares[node >> 3])
                spot = Spot(x, y, node & 7)
                followers.append(OwnFollower(spot, kind, root, points, majority, pennants))
    return followers


def large_nodes(state: CarcassonneState, new: int = -1) -> Collection[int]:
    """The nodes of the large followers on the board (and ``new``, one being placed)."""
    extras = state.extras
    if extras is None or not extras.inns_cathedrals:
        return ()
    return {*extras.large, new}


def _counts(seats: int, held: list[int], large: Collection[int]) -> list[int]:
    """Followers per seat on a feature, the large follower counting two."""
    counts = [0] * seats
    for holder in held:
        counts[holder & 7] += 2 if holder >> 3 in large else 1
    return counts


def _pig_at(extras: ExtrasState | None, parent: list[int], seat: int, root: int) -> bool:
    if extras is None:
        return False
    pig = extras.pigs[seat]
    return pig != IN_SUPPLY and parent[pig] == root


def add_completions(
    events: list[Any],
    state: CarcassonneState,
    seat: int,
    square: int,
    code: int,
    spot: int | None,
    piece: str = FOLLOWER,
) -> None:
    """Append the scorings of the roads, cities and cloisters that the placement completes,
    read without mutating; with Traders & Builders also the goods taken and the builders
    sent home."""
    tile = code >> 2
    kinds = SEG_KIND[tile]
    port_seg = PORT_SEG[code]
    parent = state.parent
    ordinal = len(state.codes)
    closes = CLOSES[tile]
    joined: dict[int, list[int]] | None = None
    new_node = -1 if spot is None else (ordinal << 3) + spot
    new_large = new_node if piece == LARGE else -1
    for _bits, port, node in state.links[square]:
        seg = port_seg[port]
        if closes[seg]:
            if joined is None:
                joined = {seg: [parent[node]]}
            elif seg in joined:
                joined[seg].append(parent[node])
            else:
                joined[seg] = [parent[node]]
    if joined is not None:
        holders = state.holders
        extras = state.extras
        trading = extras is not None and extras.traders_builders
        follows = piece == FOLLOWER or piece == LARGE
        for segs, roots in _closed(joined, SEG_SIDES[tile], state.open_ends):
            held = [holder for root in roots for holder in holders[root] or ()]
            if spot in segs and follows:
                held.append((((ordinal << 3) + spot) << 3) | seat)
            if held or trading:
                members = state.members
                nodes = [member for root in roots for member in members[root] or (root,)]
                nodes.extend((ordinal << 3) + seg for seg in segs)
            if held:
                points = _feature_points(state, kinds[segs[0]], nodes, True, tile)
                large = large_nodes(state, new_large)  # only where a scoring needs it
                events.append(_score(state, kinds[segs[0]], points, held, square, False, large))
            if trading:
                builder = new_node if piece == BUILDER and spot in segs else -1
                _trade(events, state, seat, kinds[segs[0]], nodes, roots, square, tile, builder)
    board = state.board
    if spot is not None and kinds[spot] == CLOISTER:
        if all(square + offset in board for offset in AROUND):
            holder = (((ordinal << 3) + spot) << 3) | seat
            large = large_nodes(state, new_large)
            events.append(
                _score(state, CLOISTER, CLOISTER_COMPLETE_POINTS, [holder], square, False, large)
            )
    cloisters = state.cloisters
    if cloisters:
        monk_at = cloisters.get
        for offset in AROUND:
            monk = monk_at(square + offset)
            if monk is not None and _neighbours(board, square + offset) == 7:
                held = list(state.holders[monk] or ())
                large = large_nodes(state, new_large)
                events.append(
                    _score(state, CLOISTER, CLOISTER_COMPLETE_POINTS, held, square, False, large)
                )


def _trade(
    events: list[Any],
    state: CarcassonneState,
    seat: int,
    kind: int,
    nodes: list[int],
    roots: Collection[int],
    square: int,
    new_tile: int,
    builder: int,
) -> None:
    """Traders & Builders on a completed road or city: the placing seat takes the city's
    goods, and every builder on it (``builder``: one just placed on it) goes home."""
    codes = state.codes
    known = len(codes)
    if kind == CITY:
        goods = [0] * len(GOODS)
        for node in nodes:
            good = SEG_GOODS[codes[node >> 3] >> 2 if node >> 3 < known else new_tile][node & 7]
            if good >= 0:
                goods[good] += 1
        if any(goods):
            events.append(GoodsTaken(seat, goods))
    parent = state.parent
    for owner, node in enumerate(extras_of(state).builders):
        if node != IN_SUPPLY and parent[node] in roots:
            events.append(_returned(state, owner, BUILDER, node, square))
    if builder >= 0:
        events.append(_returned(state, seat, BUILDER, builder, square))


def _returned(state: CarcassonneState, seat: int, piece: str, node: int, square: int) -> Any:
    ordinal = node >> 3
    x, y = xy_of(state.squares[ordinal] if ordinal < len(state.squares) else square)
    return PieceReturned(seat, piece, x, y, node & 7)


def pieces_left_alone(state: CarcassonneState, seat: int, node: int) -> list[PieceReturned]:
    """The builder and pig of ``seat`` on the feature of its follower at ``node``, which goes
    home (message 8), when no other follower of ``seat`` stays there."""
    extras = state.extras
    if extras is None or not extras.traders_builders:
        return []
    parent = state.parent
    root = parent[node]
    others = [h for h in state.holders[root] or () if h & 7 == seat and h >> 3 != node]
    if others:
        return []
    returned = []
    for piece, placed in ((BUILDER, extras.builders[seat]), (PIG, extras.pigs[seat])):
        if placed != IN_SUPPLY and parent[placed] == root:
            returned.append(_returned(state, seat, piece, placed, -1))
    return returned


def _closed(
    joined: dict[int, list[int]], sides: tuple[int, ...], open_ends: list[int]
) -> list[tuple[list[int], Collection[int]]]:
    """The resulting features that the placement closes, as ``(features of the new tile,
    neighbour roots)``: every open end of theirs and of the tile's features is matched."""
    if len(joined) == 1:
        [(seg, roots)] = joined.items()
        groups = [([seg], roots if len(roots) == 1 else set(roots), len(roots))]
    else:
        groups = _join_groups(joined)
    closed = []
    for segs, distinct, links in groups:
        ends = 0
        for root in distinct:
            ends += open_ends[root]
        for seg in segs:
            ends += sides[seg]
        if ends == 2 * links:
            closed.append((segs, distinct))
    return closed


def _join_groups(joined: dict[int, list[int]]) -> list[tuple[list[int], set[int], int]]:
    """Group the new tile's road/city features that become one feature (a loop through the
    tile): ``(features, neighbour roots, links)`` per resulting feature."""
    groups: list[tuple[list[int], set[int], int]] = []
    for seg, roots in joined.items():
        segs, distinct, links = [seg], set(roots), len(roots)
        for group in [group for group in groups if group[1] & distinct]:
            groups.remove(group)
            segs += group[0]
            distinct |= group[1]
            links += group[2]
        groups.append((segs, distinct, links))
    return groups


def _neighbours(board: dict[int, int], square: int) -> int:
    return sum(1 for offset in AROUND if square + offset in board)


def _feature_points(
    state: CarcassonneState, kind: int, nodes: Sequence[int], complete: bool, new_tile: int = -1
) -> int:
    """Road: 1 per tile. City: 2 per tile and pennant when complete, else 1. A tile counts once
    even when the feature passes it twice. ``new_tile`` is the tile not yet on the board.
    Inns & Cathedrals: a road with an inn 2 per tile when complete, a city with a cathedral 3
    per tile and pennant; either 0 unfinished."""
    tiles = len({node >> 3 for node in nodes})
    extras = state.extras
    special = extras is not None and extras.inns_cathedrals
    if kind == ROAD:
        if special and _marked(state, SEG_INN, nodes, new_tile):
            return INN_POINTS_PER_TILE * tiles if complete else 0
        return tiles
    codes = state.codes
    known = len(codes)
    pennants = sum(
        SEG_PENNANT[codes[node >> 3] >> 2 if node >> 3 < known else new_tile][node & 7]
        for node in nodes
    )
    if special and _marked(state, SEG_CATHEDRAL, nodes, new_tile):
        return CATHEDRAL_POINTS_PER_ITEM * (tiles + pennants) if complete else 0
    return 2 * (tiles + pennants) if complete else tiles + pennants


def _marked(
    state: CarcassonneState, table: tuple[tuple[int, ...], ...], nodes: Sequence[int], new_tile: int
) -> bool:
    """Whether a feature of ``nodes`` has an inn or a cathedral (``table``)."""
    codes = state.codes
    known = len(codes)
    return any(
        table[codes[node >> 3] >> 2 if node >> 3 < known else new_tile][node & 7] for node in nodes
    )


def _score(
    state: CarcassonneState,
    kind: int,
    points: int,
    held: list[int],
    square: int,
    final: bool,
    large: Collection[int] = (),
) -> FeatureScored:
    """The one place a scoring is decided: the seats with the most followers on the feature
    (all tied seats; a large follower at one of ``large`` counts two) score ``points``.
    ``square`` locates a follower on the tile not yet placed."""
    counts = _counts(state.seats, held, large)
    most = max(counts)
    seats = [seat for seat, count in enumerate(counts) if count == most]
    squares = state.squares
    followers = []
    for holder in sorted(held):
        node = holder >> 3
        ordinal = node >> 3
        x, y = xy_of(squares[ordinal] if ordinal < len(squares) else square)
        followers.append(Follower(holder & 7, x, y, node & 7, KIND_NAMES[kind], node in large))
    return FeatureScored(KIND_NAMES[kind], points, seats, followers, final)


def fits_somewhere(state: CarcassonneState, tile: int, square: int, code: int) -> bool:
    """Whether ``tile`` fits the board once ``code`` lies on ``square`` (``square`` < 0: the
    board as it is)."""
    fits = FITS[tile]
    if square < 0:
        return any(fits[key] for key in state.open.values())
    for other, key in state.open.items():
        if fits[key] and other - square not in _CHANGED:
            return True
    board = state.board
    open_squares = state.open
    for step, keep, require, _links in SIDES[code]:
        neighbour = square + step
        if neighbour in board:
            continue
        if fits[(open_squares.get(neighbour, OPEN_KEY) & keep) | require]:
            return True
    return False


_CHANGED = frozenset((0, *STEPS))
"""Offsets of the squares whose requirement a placement changes (itself and its sides)."""


def draw(
    state: CarcassonneState, seat: int, pending: list[Any], square: int = -1, code: int = 0
) -> list[Any]:
    """Draw for ``seat`` after the ``pending`` events (placing ``code`` on ``square``),
    discarding tiles that fit nowhere; with the stack empty, score the end."""
    events: list[Any] = []
    stack = state.stack
    for index in range(state.drawn, len(stack)):
        tile = stack[index]
        if fits_somewhere(state, tile, square, code):
            events.append(TileDrawn(seat, LETTERS[tile]))
            return events
        events.append(TileDiscarded(seat, LETTERS[tile]))
    return events + _game_over(state, [*pending, *events])


def _clone(state: CarcassonneState) -> CarcassonneState:
    """A copy that evolving leaves ``state`` untouched (every mutable part copied)."""
    return msgspec.structs.replace(
        state,
        stack=list(state.stack),
        scores=list(state.scores),
        supply=list(state.supply),
        winners=list(state.winners),
        board=dict(state.board),
        codes=list(state.codes),
        squares=list(state.squares),
        open=dict(state.open),
        links={square: list(links) for square, links in state.links.items()},
        parent=list(state.parent),
        members=_copy_lists(state.members),
        open_ends=list(state.open_ends),
        holders=_copy_lists(state.holders),
        cloisters=dict(state.cloisters),
        messengers=None if state.messengers is None else messengers.copy_state(state.messengers),
        extras=None if state.extras is None else expansions.copy_state(state.extras),
    )


def _copy_lists(lists: list[list[int] | None]) -> list[list[int] | None]:
    """A copy whose inner lists are copies too (an empty one, never stored, is shared)."""
    copied = list(lists)
    for index in compress(range(len(copied)), copied):
        copied[index] = copied[index][:]  # type: ignore[index]
    return copied


def _game_over(state: CarcassonneState, pending: list[Any]) -> list[Any]:
    """Final scoring, computed on a scratch copy with the ``pending`` events applied; with
    The Messengers each player's figures are summed first."""
    scratch = _clone(state)
    for event in pending:
        scratch = evolve(scratch, event)
    events: list[Any] = []
    if scratch.messengers is not None:
        summed = FiguresSummed(list(scratch.scores))
        scratch = evolve(scratch, summed)
        events.append(summed)
    finals = _final_scoring(scratch)
    for event in finals:
        scratch = evolve(scratch, event)
    events += finals
    best = max(scratch.scores)
    winners = [seat for seat, score in enumerate(scratch.scores) if score == best]
    events.append(GameOver(list(scratch.scores), winners))
    return events


def _final_scoring(state: CarcassonneState) -> list[Any]:
    """Every feature still holding followers: unfinished roads, cities and cloisters, farms;
    with Traders & Builders each scoring pig's bonus after its farm, and the goods last."""
    events: list[Any] = []
    codes = state.codes
    holders = state.holders
    large = large_nodes(state)
    extras = state.extras
    for root in compress(range(len(holders)), holders):
        kind = SEG_KIND[codes[root >> 3] >> 2][root & 7]
        points = _unfinished_points(state, root, kind)
        scored = _score(state, kind, points, list(holders[root]), -1, True, large)  # type: ignore[arg-type]
        events.append(scored)
        if kind == FIELD and extras is not None and extras.traders_builders and points:
            cities = points // FARM_POINTS_PER_CITY
            events += [
                BonusScored(seat, PIG, PIG_POINTS_PER_CITY * cities)
                for seat in scored.seats
                if _pig_at(extras, state.parent, seat, root)
            ]
    if extras is not None and extras.traders_builders:
        events += expansions.most_goods(extras.goods, state.seats)
    return events


def _unfinished_points(state: CarcassonneState, root: int, kind: int) -> int:
    """A feature's points as at final scoring (also what messages 1-3 and 8 score)."""
    if kind == CLOISTER:
        return 1 + _neighbours(state.board, state.squares[root >> 3])
    if kind == FIELD:
        return FARM_POINTS_PER_CITY * len(_completed_cities(state, root))
    return _feature_points(state, kind, state.members[root] or [root], False)


def _completed_cities(state: CarcassonneState, field_root: int) -> set[int]:
    """Roots of the completed cities a farm touches (each city once)."""
    parent = state.parent
    codes = state.codes
    open_ends = state.open_ends
    cities = set()
    for node in state.members[field_root] or (field_root,):
        tile_base = node & ~7
        for city in SEG_CITIES[codes[node >> 3] >> 2][node & 7]:
            root = parent[tile_base + city]
            if not open_ends[root]:
                cities.add(root)
    return cities
