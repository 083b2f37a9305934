"""Breaking News' published view for other services: the game data and helpers they may use.

This module is the games' published interface to the rest of playtable (the bots first).
Other services import Breaking News' data and helpers from here (and the games from
``services.rules.games.registry``), never from the engine's other modules, which may change
shape at any time; a name here changes only together with its users.

- ``normalise_text(text)``: a story or word as the rules compare them (NFC, case-folded,
  whitespace collapsed); a story contains a card's word if its normalised text contains the
  normalised word.
- ``MAX_STORY_CHARS``: the longest story accepted; ``OBJECT_HAND_LIMIT``: object cards a hand
  holds at most.
- ``SIDES``: the edges of a card in the order of its colours (north, east, south, west).
"""

from __future__ import annotations

from services.rules.games.breaking_news.cards import (
    MAX_STORY_CHARS,
    OBJECT_HAND_LIMIT,
    SIDES,
    normalise_text,
)

__all__ = ["MAX_STORY_CHARS", "OBJECT_HAND_LIMIT", "SIDES", "normalise_text"]
