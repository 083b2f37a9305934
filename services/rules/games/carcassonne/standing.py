"""An unstored index of each seat's followers on the board, for the builder's and the pig's
placements: finding the features of a player's followers by scanning ``holders`` (a slot per
union-find node, 900 with both expansions) cost a sixth of a move.

The index lives in the state's ``__dict__`` (``CarcassonneState`` has ``dict=True``), which
msgspec neither encodes nor copies: stored states and snapshots stay as they were. A state
without one (decoded, copied, or never asked) builds it from ``holders`` on first use; from
then on ``evolve`` keeps it as followers stand (``stood``) and go home (``left``).
"""

from __future__ import annotations

from typing import Any

_KEY = "standing"
"""The index's name in a state's ``__dict__``."""


def standing_of(state: Any) -> list[list[int]]:
    """Per seat, the nodes its followers (ordinary and large) stand on."""
    index = state.__dict__.get(_KEY)
    if index is None:
        index = state.__dict__[_KEY] = _built(state.seats, state.holders)
    return index


def _built(seats: int, holders: list[list[int] | None]) -> list[list[int]]:
    index: list[list[int]] = [[] for _ in range(seats)]
    for held in filter(None, holders):
        for holder in held:
            index[holder & 7].append(holder >> 3)
    return index


def stood(state: Any, seat: int, node: int) -> None:
    """A follower of ``seat`` now stands on ``node``."""
    index = state.__dict__.get(_KEY)
    if index is not None:
        index[seat].append(node)


def left(state: Any, seat: int, node: int) -> None:
    """The follower of ``seat`` on ``node`` went home."""
    index = state.__dict__.get(_KEY)
    if index is not None:
        index[seat].remove(node)
