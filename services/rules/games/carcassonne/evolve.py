"""Carcassonne's ``evolve``: laying tiles, the features' union-find, and every event applied."""

from __future__ import annotations

from typing import Any

from services.rules.games.carcassonne import expansions, messengers, standing
from services.rules.games.carcassonne.expansions import (
    FOLLOWER,
    IN_SUPPLY,
    LARGE,
    BonusScored,
    BuilderTurn,
    ExpansionsInPlay,
    ExtrasState,
    GoodsTaken,
    PieceReturned,
)
from services.rules.games.carcassonne.messengers import (
    EXTRA_TURN,
    MESSAGES,
    FigureAdvanced,
    FiguresSummed,
    MessageDrawn,
    MessageResolved,
    MessagesShuffled,
    MessengersState,
    PreferenceSet,
)
from services.rules.games.carcassonne.state import (
    FACING_SHIFT,
    FOLLOWERS_PER_PLAYER,
    NODE_SLOTS,
    STEPS,
    CarcassonneState,
    FeatureScored,
    GameOver,
    StackShuffled,
    TileDiscarded,
    TileDrawn,
    TilePlaced,
    square_of,
)
from services.rules.games.carcassonne.tiles import (
    CLOISTER,
    COUNTS,
    EDGES,
    KIND_NAMES,
    OPEN_KEY,
    OPEN_LINKS,
    PICTURES,
    PORT_SEG,
    ROAD,
    SEG_KIND,
    SEG_SIDES,
    TILE_INDEX,
    current_rotation,
)
from services.rules.games.carcassonne.versions import (
    RULES,
    FiguresSummedHoldingMessage,
    MessageResolvedAtOnce,
    at_once,
    flushes_at_end,
)


def _place(state: CarcassonneState, square: int, code: int) -> int:
    """Lay a tile: new feature nodes, merges with the neighbours, new open squares."""
    tile = code >> 2
    ordinal = len(state.codes)
    base = ordinal << 3
    state.codes.append(code)
    state.squares.append(square)
    board = state.board
    board[square] = ordinal
    parent = state.parent
    try:
        parent += _NODES[ordinal]
    except IndexError:  # more tiles than the box holds: only a hand-made stack
        parent += range(base, base + NODE_SLOTS)
    members = state.members
    members += _EMPTY_SLOTS
    open_ends = state.open_ends
    open_ends += _OPEN_TEMPLATE[tile]
    state.holders.extend(_EMPTY_SLOTS)
    del state.open[square]
    port_seg = PORT_SEG[code]
    closes = CLOSES[tile]
    for _bits, port, node in state.links.pop(square):
        seg = port_seg[port]
        mine = parent[base + seg]
        theirs = parent[node]
        if mine == theirs:
            pass
        elif mine == base + seg and members[mine] is None:
            parent[mine] = theirs
            joined = members[theirs]
            if joined is None:
                members[theirs] = [theirs, mine]
            else:
                joined.append(mine)
            open_ends[theirs] += open_ends[mine]
            mine = theirs
        else:
            mine = _union(state, mine, theirs)
        open_ends[mine] -= closes[seg]
    open_squares = state.open
    all_links = state.links
    for step, keep, require, links in SIDES[code]:
        neighbour = square + step
        key = open_squares.get(neighbour)
        if key is None and neighbour in board:
            continue
        if len(links) == 1:
            ((bits, port, seg),) = links
            fresh = [(bits, port, base + seg)]
        else:  # a road side: the road and the fields on either side of it
            (bits, port, seg), (bits1, port1, seg1), (bits2, port2, seg2) = links
            fresh = [
                (bits, port, base + seg),
                (bits1, port1, base + seg1),
                (bits2, port2, base + seg2),
            ]
        if key is None:
            open_squares[neighbour] = (OPEN_KEY & keep) | require
            all_links[neighbour] = fresh
        else:
            open_squares[neighbour] = (key & keep) | require
            known = all_links[neighbour]
            known += fresh
    return base


_EMPTY_SLOTS = (None,) * NODE_SLOTS
_NODES = tuple(tuple(range(ordinal << 3, (ordinal + 1) << 3)) for ordinal in range(sum(COUNTS)))
"""Per tile ordinal, its union-find nodes (each its own root when laid)."""
_OPEN_TEMPLATE = tuple(sides + (0,) * (NODE_SLOTS - len(sides)) for sides in SEG_SIDES)
CLOSES = tuple(tuple(2 if kind <= ROAD else 0 for kind in kinds) for kinds in SEG_KIND)
"""Per tile and feature: open ends a matched side closes (both sides of a road or city)."""
SIDES = tuple(
    tuple(
        (
            STEPS[side],
            ~(3 << FACING_SHIFT[side]) & OPEN_KEY,
            EDGES[code][side] << FACING_SHIFT[side],
            OPEN_LINKS[code][side],
        )
        for side in range(4)
    )
    for code in range(len(EDGES))
)
"""Per code and side: square step, key mask and bits for the square beyond, and its links."""


def _union(state: CarcassonneState, a: int, b: int) -> int:
    """Merge two features; the smaller one's nodes point at the larger one's root."""
    members = state.members
    joined, moved = members[a], members[b]
    if (len(joined) if joined else 1) < (len(moved) if moved else 1):
        a, b, joined, moved = b, a, moved, joined
    parent = state.parent
    if moved is None:
        moved = [b]
    for node in moved:
        parent[node] = a
    if joined is None:
        members[a] = [a, *moved]
    else:
        joined += moved
    members[b] = None
    state.open_ends[a] += state.open_ends[b]
    holders = state.holders
    absorbed = holders[b]
    if absorbed:
        kept = holders[a]
        if not kept:
            holders[a] = absorbed
        else:
            kept += absorbed
        holders[b] = None
    return a


def _evolve_started(state: CarcassonneState | None, event: StackShuffled) -> CarcassonneState:
    origin = square_of(0, 0)
    state = CarcassonneState(
        seats=event.seats,
        stack=[TILE_INDEX[letter] for letter in event.stack or ()],
        drawn=0,
        seat=0,
        tile=-1,
        finished=False,
        scores=[0] * event.seats,
        supply=[FOLLOWERS_PER_PLAYER] * event.seats,
        winners=[],
        board={},
        codes=[],
        squares=[],
        open={origin: OPEN_KEY},
        links={origin: []},
        parent=[],
        members=[],
        open_ends=[],
        holders=[],
        cloisters={},
        pictures=event.pictures,
        codes_pictures=PICTURES,
        rules_version=RULES.in_state(event.rules_version),
    )
    current_rotation(0, 0, event.pictures)  # a version never published is refused here
    if problem := RULES.problem(event.rules_version):
        raise ValueError(f"StackShuffled: {problem}")
    _place(state, origin, TILE_INDEX[event.start_tile] << 2)
    return state


def _evolve_drawn(state: CarcassonneState, event: TileDrawn) -> CarcassonneState:
    if event.seat != state.seat:
        _turn_passed(state)
    state.drawn += 1
    state.seat = event.seat
    state.tile = TILE_INDEX[event.tile]
    return state


def _evolve_discarded(state: CarcassonneState, event: TileDiscarded) -> CarcassonneState:
    if event.seat != state.seat:
        _turn_passed(state)
    state.drawn += 1
    state.seat = event.seat
    return state


def _turn_passed(state: CarcassonneState) -> None:
    """Another seat draws (or play ends): an extra turn of message 4 is over, and message 4
    goes under the message stack only now, below every message drawn during that turn."""
    expansion = state.messengers
    if expansion is not None and expansion.held:
        expansion.stack.append(expansion.held)
        expansion.held = 0
    extras = state.extras
    if extras is not None:
        extras.owed = 0
        extras.building = False


def extends_builder(state: CarcassonneState, seat: int, square: int) -> bool:
    """Whether a tile on ``square`` extends the road or city of ``seat``'s builder while the
    turn is a full one (not a builder turn): it earns a builder turn. Read before the tile
    is laid (a tile touching the builder's feature always joins it: edges match)."""
    extras = state.extras
    if extras is None or extras.building:
        return False
    node = extras.builders[seat]
    if node == IN_SUPPLY:
        return False
    parent = state.parent
    root = parent[node]
    for _bits, _port, linked in state.links[square]:
        if parent[linked] == root:
            return True
    return False


def _evolve_placed(state: CarcassonneState, event: TilePlaced) -> CarcassonneState:
    square = ((event.x + 128) << 8) | (event.y + 128)
    tile = TILE_INDEX[event.tile]
    rotation = event.rotation
    if state.pictures != PICTURES:
        rotation = current_rotation(tile, rotation, state.pictures)
    extras = state.extras
    if extras is not None and extends_builder(state, event.seat, square):
        extras.owed += 1
    base = _place(state, square, (tile << 2) + rotation)
    spot = event.follower
    if spot is not None and event.piece == FOLLOWER:
        _stand(state, base + spot, event.seat, square)
        state.supply[event.seat] -= 1
    elif spot is not None:
        _place_piece(state, event, base + spot, square)
    state.tile = -1
    if state.messengers is not None:
        state.messengers.moved = 0
    return state


def _place_piece(state: CarcassonneState, event: TilePlaced, node: int, square: int) -> None:
    """An expansion's piece: the large follower is a follower too, builder and pig are not."""
    expansions.nodes_of(extras_of(state), event.piece)[event.seat] = node
    if event.piece == LARGE:
        _stand(state, node, event.seat, square)


def _stand(state: CarcassonneState, node: int, seat: int, square: int) -> None:
    """A follower of ``seat`` (ordinary or large) holds the feature of ``node``, on the tile
    just placed at ``square``; on a cloister it is that cloister's monk."""
    root = state.parent[node]
    held = state.holders[root]
    if not held:
        state.holders[root] = [(node << 3) | seat]
    else:
        held.append((node << 3) | seat)
    standing.stood(state, seat, node)
    if SEG_KIND[state.codes[node >> 3] >> 2][node & 7] == CLOISTER:
        state.cloisters[square] = node


def _follower_home(state: CarcassonneState, seat: int, large: bool) -> None:
    if large:
        extras_of(state).large[seat] = IN_SUPPLY
    else:
        state.supply[seat] += 1


def _evolve_scored(state: CarcassonneState, event: FeatureScored) -> CarcassonneState:
    if not event.final:
        for follower in event.followers:
            square = square_of(follower.x, follower.y)
            node = (state.board[square] << 3) + follower.spot
            state.holders[state.parent[node]] = None
            standing.left(state, follower.seat, node)
            _follower_home(state, follower.seat, follower.large)
            if follower.feature == "cloister":
                del state.cloisters[square]
    expansion = state.messengers
    if expansion is None or event.final:
        for seat in event.seats:
            _award(state, seat, event.points)
    elif state.seat in event.seats:
        expansion.pending.append((KIND_NAMES.index(event.feature), event.points))
    return state


def _award(state: CarcassonneState, seat: int, points: int, figure: int = 0) -> None:
    """Every point reaches a player's score here and nowhere else (``_score`` decides who
    scores what). With The Messengers the points of play arrive as ``FigureAdvanced`` events
    and also move that figure; the final scoring's go to the one figure left (figure 0)."""
    state.scores[seat] += points
    expansion = state.messengers
    if expansion is not None:
        expansion.figures[2 * seat + figure] += points


def _evolve_over(state: CarcassonneState, event: GameOver) -> CarcassonneState:
    state.finished = True
    state.tile = -1
    state.winners = list(event.winners)
    return state


def extras_of(state: CarcassonneState) -> ExtrasState:
    """The expansions' state, for code that only runs when the match plays them."""
    return state.extras  # type: ignore[return-value]


def messengers_of(state: CarcassonneState) -> MessengersState:
    """The Messengers' state, for code that only runs when the match plays them."""
    return state.messengers  # type: ignore[return-value]


def _evolve_messages_shuffled(state: CarcassonneState, event: MessagesShuffled) -> CarcassonneState:
    state.messengers = messengers.new_state(event, state.seats)
    return state


def _evolve_preference(state: CarcassonneState, event: PreferenceSet) -> CarcassonneState:
    preference = messengers.BEHIND if event.figure is None else event.figure
    messengers_of(state).preferences[event.seat] = preference
    return state


def _evolve_advanced(state: CarcassonneState, event: FigureAdvanced) -> CarcassonneState:
    """Points to a figure; the active player's move pays the first pending scoring."""
    _award(state, event.seat, event.points, event.figure)
    expansion = messengers_of(state)
    if event.seat == state.seat and expansion.pending:
        del expansion.pending[0]
        expansion.moved |= 1 << event.figure
    return state


def _evolve_message_drawn(state: CarcassonneState, event: MessageDrawn) -> CarcassonneState:
    expansion = messengers_of(state)
    if expansion.stack:  # empty only in a fold of redacted events
        del expansion.stack[0]
    expansion.message = event.message
    return state


def _evolve_message_resolved(state: CarcassonneState, event: MessageResolved) -> CarcassonneState:
    """The message goes under the stack (message 4 carried out, since rules version 2, once
    its extra turn is over: that turn is its action); message 8's follower goes home."""
    expansion = messengers_of(state)
    if at_once(state.rules_version, event):
        expansion.stack.append(event.message)
    else:
        expansion.held = event.message
    expansion.message = 0
    if state.extras is not None and _gives_turn(event):
        state.extras.building = False  # message 4's turn is a full one
    returned = event.returned
    if returned is not None:
        square = square_of(returned.x, returned.y)
        node = (state.board[square] << 3) + returned.spot
        root = state.parent[node]
        held = state.holders[root] or []
        held.remove((node << 3) | event.seat)
        if not held:
            state.holders[root] = None
        standing.left(state, event.seat, node)
        if state.cloisters.get(square) == node:
            del state.cloisters[square]
        extras = state.extras
        _follower_home(state, event.seat, extras is not None and extras.large[event.seat] == node)
    return state


def _gives_turn(event: MessageResolved) -> bool:
    return not event.took_points and MESSAGES[event.message].effect == EXTRA_TURN


def _evolve_in_play(state: CarcassonneState, event: ExpansionsInPlay) -> CarcassonneState:
    state.extras = expansions.new_state(event, state.seats)
    return state


def _evolve_builder_turn(state: CarcassonneState, event: BuilderTurn) -> CarcassonneState:
    extras = extras_of(state)
    extras.owed -= 1
    extras.building = True
    return state


def _evolve_goods(state: CarcassonneState, event: GoodsTaken) -> CarcassonneState:
    goods = extras_of(state).goods
    first = len(event.goods) * event.seat
    for good, count in enumerate(event.goods):
        goods[first + good] += count
    return state


def _evolve_returned(state: CarcassonneState, event: PieceReturned) -> CarcassonneState:
    expansions.nodes_of(extras_of(state), event.piece)[event.seat] = IN_SUPPLY
    return state


def _evolve_bonus(state: CarcassonneState, event: BonusScored) -> CarcassonneState:
    _award(state, event.seat, event.points)
    return state


def _evolve_summed(state: CarcassonneState, event: FiguresSummed) -> CarcassonneState:
    if flushes_at_end(state.rules_version, event):
        _turn_passed(state)  # play is over: an extra turn of message 4 too
    figures = messengers_of(state).figures
    for seat, total in enumerate(event.totals):
        figures[2 * seat] = total
        figures[2 * seat + 1] = 0
    messengers_of(state).summed = True
    return state


_EVOLVERS: dict[type, Any] = {
    StackShuffled: _evolve_started,
    TileDrawn: _evolve_drawn,
    TileDiscarded: _evolve_discarded,
    TilePlaced: _evolve_placed,
    FeatureScored: _evolve_scored,
    GameOver: _evolve_over,
    MessagesShuffled: _evolve_messages_shuffled,
    PreferenceSet: _evolve_preference,
    FigureAdvanced: _evolve_advanced,
    MessageDrawn: _evolve_message_drawn,
    MessageResolved: _evolve_message_resolved,
    MessageResolvedAtOnce: _evolve_message_resolved,
    FiguresSummedHoldingMessage: _evolve_summed,
    FiguresSummed: _evolve_summed,
    ExpansionsInPlay: _evolve_in_play,
    BuilderTurn: _evolve_builder_turn,
    GoodsTaken: _evolve_goods,
    PieceReturned: _evolve_returned,
    BonusScored: _evolve_bonus,
}


def evolve(state: CarcassonneState | None, event: Any) -> CarcassonneState:
    return _EVOLVERS[type(event)](state, event)
