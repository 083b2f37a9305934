"""Breaking News: journalists join word cards into chains and tell the news (seed 000).

The card data is authored (no public list exists): ``seeds/breaking_news/cards.json`` holds the
35 element cards (a word in German, Italian and English, one symbol, a colour on each edge) and
the 20 object cards (three symbols and a point value); the README there documents the choices.

Coordinates: x grows east, y grows north; cards are never rotated. Element cards and object
cards are named by their ids in the data file.

A turn is a short sequence of actions by the seat to move:

- ``PlaceCard`` next to at least one table card, every touching edge matching, or
  ``PassTurn`` (the whole hand goes under the element deck and three cards are drawn).
- After a placement the turn pauses for news (phase ``news``) only if the table now shows a
  chain through the new card whose symbols are those of some object nobody has completed yet.
  That is public knowledge, so the pause reveals nothing about the player's hidden objects.
  The player then completes an object (``CompleteObject``, which carries the story) or ends
  the turn (``EndTurn``). With the stopwatch the completion takes two steps:
  ``CallBreakingNews`` starts the clock, ``TellStory`` stops it, and while the story runs any
  seat may ``ReportSilence`` (more than 3 s of silence), which ends the story without a
  completion.
- The turn then finishes by itself: without a completion, a card touching two or more table
  cards draws an object card (up to 3 in hand); then an element card is drawn.

Rulings where the seed is silent:

- The starting layout is built by ``setup``: each seat's card goes, in order, to the first
  fitting place along the row through the first card (nearest end first), else to the first
  fitting place next to the layout; a card that fits nowhere goes under the deck.
- Object cards: the first two of the shuffled deck are opened, then each seat gets one.
- One completion per turn. A face-down card has no colours: it touches (it counts for the
  two-card draw and as a neighbour) but constrains no edge, and it belongs to no chain.
- A story contains a card's word if its case-folded text contains the word in any of the
  card's languages (inside a longer word too: "Eisbär" contains "Bär"). A story declared in
  one of the cards' languages must contain the words in that language.
- The teller's own language is the option ``home_languages`` (one code per seat).
- If the players pass in a row ``seats + ceil(deck / 3)`` times (every card has been through a
  hand without being played), the game ends at once (``stalemate``): passing alone must not
  keep a stuck game running.
- Views and the event log never show a hand to anyone else, nor the deck order, even after
  the end; once the match has ended, a full replay (``full=true``) and the match file show
  everything, as for every game (there is nothing left to protect).

Server time: ``CallBreakingNews`` and ``TellStory`` carry ``server_time_ms``, which clients
must not set: the rules service stamps its wall clock (ms since the epoch) into every action
that has this field before calling ``decide``, which stays pure. Stories are timed from the
call's stamp to the story's stamp.

The package, by concern (a name starting with ``_`` is private to its module):

- ``cards``: the constants, the card data and the grid's cells.
- ``events``: the actions and events (msgspec Structs).
- ``state``: the state and views (msgspec Structs).
- ``options``: the per-match options and ``setup``.
- ``evolve``: every stored event applied.
- ``news``: chains of cards and the stories told about them.
- ``rules``: ``decide``, the legal actions, who moves, the result.
- ``views``: what each seat may see (``view``, ``redact``).
- ``game``: ``GAME``, the bundle the registry lists.
- ``public``: the published view of the game data for other services (the bots).
"""

from __future__ import annotations

from services.rules.games.breaking_news.game import GAME

__all__ = ["GAME"]
