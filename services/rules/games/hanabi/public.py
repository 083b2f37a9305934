"""Hanabi's published view for other services: the game data they may use.

This module is the games' published interface to the rest of playtable (the bots first).
Other services import Hanabi's data from here (and the games from
``services.rules.games.registry``), never from the engine's other modules, which may change
shape at any time; a name here changes only together with its users.

- ``SUITS``: the suits in their order (a card code is ``suit index * 10 + rank``); the sixth,
  ``multicolour``, plays only in the variants.
- ``RANKS`` and ``COPIES_PER_RANK``: the ranks and how many copies of each a suit holds (the
  short rainbow variant keeps one multicolour card per rank).
- ``MAX_CLUE_TOKENS``, ``MAX_FUSES``, ``HAND_SIZES`` (by seat count).
"""

from __future__ import annotations

from services.rules.games.hanabi.cards import (
    COPIES_PER_RANK,
    HAND_SIZES,
    MAX_CLUE_TOKENS,
    MAX_FUSES,
    RANKS,
    SUITS,
)

__all__ = ["COPIES_PER_RANK", "HAND_SIZES", "MAX_CLUE_TOKENS", "MAX_FUSES", "RANKS", "SUITS"]
