"""What each seat of a Carcassonne match may see, and the result."""

from __future__ import annotations

from typing import Any

import msgspec

from services.rules.games.carcassonne import expansions, messengers
from services.rules.games.carcassonne.evolve import messengers_of
from services.rules.games.carcassonne.expansions import IN_SUPPLY, Piece, PiecesView
from services.rules.games.carcassonne.messengers import (
    MessagesShuffled,
    MessengersView,
)
from services.rules.games.carcassonne.rules import to_move
from services.rules.games.carcassonne.state import (
    CarcassonneState,
    CarcassonneView,
    Follower,
    PlacedTile,
    StackShuffled,
    xy_of,
)
from services.rules.games.carcassonne.tiles import (
    KIND_NAMES,
    LETTERS,
    SEG_KIND,
)
from services.rules.games.contract import Outcome


def view(state: CarcassonneState, seat: int | None) -> CarcassonneView:
    """The same for every seat and spectators: nothing in Carcassonne is private but the
    order of the stacks (land tiles, messages), which no view shows."""
    board = []
    for code, square in zip(state.codes, state.squares, strict=True):
        x, y = xy_of(square)
        board.append(PlacedTile(LETTERS[code >> 2], x, y, code & 3))
    return CarcassonneView(
        seats=state.seats,
        to_move=to_move(state),
        tile=None if state.tile < 0 else LETTERS[state.tile],
        tiles_left=len(state.stack) - state.drawn,
        scores=list(state.scores),
        supply=list(state.supply),
        board=board,
        followers=_followers_on_board(state),
        finished=state.finished,
        winners=list(state.winners),
        messengers=None if state.messengers is None else _messengers_view(state),
        pieces=None if state.extras is None else _pieces_view(state),
    )


def _pieces_view(state: CarcassonneState) -> PiecesView:
    extras = state.extras
    assert extras is not None
    pieces = []
    for piece in (expansions.BUILDER, expansions.PIG):
        for seat, node in enumerate(expansions.nodes_of(extras, piece)):
            if node != IN_SUPPLY:
                x, y = xy_of(state.squares[node >> 3])
                pieces.append(Piece(seat, piece, x, y, node & 7))
    return PiecesView(
        inns_cathedrals=extras.inns_cathedrals,
        traders_builders=extras.traders_builders,
        supply=[expansions.supply_view(extras, seat) for seat in range(state.seats)],
        goods=[expansions.goods_view(extras, seat) for seat in range(state.seats)],
        pieces=pieces,
        builder_turns_owed=extras.owed,
        builder_turn=extras.building,
    )


def _messengers_view(state: CarcassonneState) -> MessengersView:
    expansion = messengers_of(state)
    if state.finished:
        phase = "finished"
    elif expansion.pending:
        phase = "choose_figure"
    elif expansion.message:
        phase = "resolve_message"
    else:
        phase = "place_tile"
    return messengers.message_view(expansion, state.seats, phase)


def _followers_on_board(state: CarcassonneState) -> list[Follower]:
    followers = []
    large = state.extras.large if state.extras is not None else ()
    for held in filter(None, state.holders):
        for holder in held:
            node = holder >> 3
            x, y = xy_of(state.squares[node >> 3])
            kind = SEG_KIND[state.codes[node >> 3] >> 2][node & 7]
            follower = Follower(holder & 7, x, y, node & 7, KIND_NAMES[kind], node in large)
            followers.append(follower)
    followers.sort(key=lambda follower: (follower.x, follower.y, follower.spot))
    return followers


def redact(event: Any, seat: int | None) -> Any:
    """Only the setup events hide something: the order of the stacks. A drawn message is
    public."""
    if type(event) is StackShuffled:
        return StackShuffled(event.seats, event.start_tile, None, event.stack_size)
    if type(event) is MessagesShuffled:
        return msgspec.structs.replace(event, order=None)
    return event


def result(state: CarcassonneState) -> Outcome | None:
    if not state.finished:
        return None
    return Outcome(list(state.scores), list(state.winners))
