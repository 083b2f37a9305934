"""What the bots service reads from and sends to the match API: only the fields it uses (the
services share no code but ``shared``, so these are the bots' own reading of the contract)."""

from __future__ import annotations

from typing import Any

import msgspec


class SeatView(msgspec.Struct):
    """``GET /matches/{id}`` as a seat sees it."""

    version: int
    view: dict[str, Any]


class SeatActions(msgspec.Struct):
    """``GET /matches/{id}/actions?version=V``: the seat's actions at ``version`` (the actions
    now, at a later version, when the server no longer holds those of V)."""

    version: int
    actions: list[dict[str, Any]]


class Move(msgspec.Struct):
    """``POST /matches/{id}/actions``: ``action`` is one of ``game``'s."""

    game: str
    expected_version: int
    action: dict[str, Any]
