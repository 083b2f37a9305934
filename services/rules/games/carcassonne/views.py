"""What each seat of a Carcassonne match may see, and the result."""

from __future__ import annotations

from typing import Any

import msgspec

from services.rules.games.carcassonne import messengers
from services.rules.games.carcassonne.evolve import messengers_of
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
    for held in filter(None, state.holders):
        for holder in held:
            node = holder >> 3
            x, y = xy_of(state.squares[node >> 3])
            kind = SEG_KIND[state.codes[node >> 3] >> 2][node & 7]
            followers.append(Follower(holder & 7, x, y, node & 7, KIND_NAMES[kind]))
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
