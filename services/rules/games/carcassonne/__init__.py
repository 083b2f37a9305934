"""Carcassonne, base game (2nd edition, River excluded): 72 land tiles, followers, farms;
optionally with the mini expansion The Messengers (option ``messengers``) and the expansions
Inns & Cathedrals (``inns_cathedrals``) and Traders & Builders (``traders_builders``).

A turn is one action, ``PlaceTile(x, y, rotation, follower)``: the drawn tile goes next to the
board with every touching edge matching, and the player may put a follower on one feature of
that tile whose connected feature holds no follower yet. Completed roads, cities and cloisters
score at once and give their followers back; unfinished features and farms score at the end.

All chance is the shuffle in ``setup`` (recorded in ``StackShuffled``, hidden from every seat);
each draw then follows the recorded order, a tile that fits nowhere is discarded
(``TileDiscarded``) and the next one drawn. Coordinates: x grows east, y grows north, the start
tile lies at (0, 0); a rotation is a number of clockwise quarter turns of the tile's published
picture; a follower *spot* is an index into the tile's feature list in
``seeds/carcassonne/tiles.json`` (see the README there for the data format and the export).

Speed: squares are ints, tiles are precomputed in all rotations (``tiles``), and
features live in an incremental union-find whose roots keep their open ends, members and
followers, so no check ever walks the board.

The Messengers (``messengers`` holds its data, messages and track rules): a turn
becomes a short sequence of actions by the active player. ``PlaceTile``; then one
``ChooseFigure`` per feature the player scored (in scoring order), which the board has already
scored (``FeatureScored``); then, if a figure that moved stopped on a dark space, a message is
drawn and resolved with ``CarryOutMessage`` or ``TakeMessagePoints``. Other players' points go
to the figure of their standing preference (``SetScoringPreference``, accepted from any seat
at any time). Every figure move is a ``FigureAdvanced`` event. Without the expansion nothing of
this runs and the events are those of the base game.


The package, by concern (a name starting with ``_`` is private to its module):

- ``tiles``: the 72 land tiles, and the expansions' beside them, with their precomputed
  rotations (``seeds/carcassonne/tiles.json``, ``inns_cathedrals.json``, ``traders_builders.json``).
- ``messengers``: The Messengers' data, messages and scoring track.
- ``expansions``: Inns & Cathedrals' and Traders & Builders' pieces, goods, events and state.
- ``state``: board coordinates, the actions, events, state and views (msgspec Structs).
- ``options``: the per-match options and ``setup``.
- ``evolve``: laying tiles, the features' union-find, every event applied.
- ``placements``: the legal placements of the drawn tile, and where a piece may stand.
- ``rules``: the legal actions, who moves, ``decide``.
- ``scoring``: completed features, drawing the next tile, the final count.
- ``views``: what each seat may see, and the result.
- ``game``: ``GAME``, the bundle the registry lists.
- ``turns``: the carcassonne-turns exchange format.
- ``public``: the published view of the game data for other services (the bots).
"""

from __future__ import annotations

from services.rules.games.carcassonne.game import GAME

__all__ = ["GAME"]
