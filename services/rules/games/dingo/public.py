"""Dingo's published view for other services: the game data and helpers they may use.

This module is the games' published interface to the rest of playtable (the bots first).
Other services import Dingo's data and rules helpers from here (and the games from
``services.rules.games.registry``), never from the engine's other modules, which may change
shape at any time; a name here changes only together with its users.

- ``day_points(values, target)``: the points of a day, one per player beaten, from each
  player's ranch value and the day's target.
- ``HAND_SIZE``, ``DIE_SIDES``, ``TARGET_BASE``: cards in hand, the die, and the target's base
  (a day's target is ``TARGET_BASE`` + the roll).
- ``CARD_ID``: every card's id (``"red-baby-1"``), in the order of ``seeds/dingo/cards.json``.
"""

from __future__ import annotations

from services.rules.games.dingo.cards import CARD_ID, DIE_SIDES, HAND_SIZE, TARGET_BASE
from services.rules.games.dingo.scoring import day_points

__all__ = ["CARD_ID", "DIE_SIDES", "HAND_SIZE", "TARGET_BASE", "day_points"]
