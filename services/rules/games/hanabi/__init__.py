"""Hanabi: the cooperative fireworks game (R&R Games rules, seed 002) with its sixth-suit variants.

Encodings, chosen so that matches line up card for card with hanab.live (see ``live``):

- Suits, in this order: red, yellow, green, blue, white, multicolour. Indices 0-4 are the slots
  of hanab.live's "No Variant" (Red, Yellow, Green, Blue, Purple): our white sits in the Purple
  slot, because hanab.live's own "White" suit is a special suit that no colour clue touches.
  The sixth suit sits in hanab.live's sixth slot (Teal, Rainbow or Dark Rainbow).
- A card's identity is the int ``suit_index * 10 + rank``: 11 is a red 1, 35 the blue 5,
  53 a multicolour 3. The ``deck`` option and ``GameStarted.deck`` use these codes.
- A card's *order* is its index in draw order, as on hanab.live: the deal gives seat 0 the first
  hand (orders 0..h-1), seat 1 the next, and so on; the first card drawn afterwards has order
  ``seats * h``. Actions name cards by order, never by hand slot. Hands list orders oldest first.
- Clue colour indices are the suit indices of the nameable colours.

Variants and how the options combine (``validate_options`` normalises them):

- ``suits: 6`` adds multicolour as an ordinary sixth colour of 10 cards, which clues can name.
- ``rainbow`` makes the sixth suit multicolour in the rules' sense: every colour clue touches it
  and it cannot be named. It implies ``suits: 6``.
- ``rainbow_short`` keeps one multicolour card per rank (5 cards). It implies ``rainbow``.
- ``empty_clues`` allows clues that touch no card (they still cost a token and give negative
  information).
- ``deck`` replays a known deal: every card code in draw order, a permutation of the variant's
  deck.

Rulings: a discard is refused at 8 clue tokens; a 5 completing a firework regains a token unless
all 8 are available; after the last card is drawn every seat, the drawer included, plays exactly
one more turn; the game ends at once on the maximum score (``perfect``) or on the third fuse
(``strike_out``: score 0 and no winner); otherwise it ends after that final round
(``deck_out``). The game is cooperative: unless it struck out, every seat is a winner.

Hidden information: a seat never sees its own cards, only their orders and what clues revealed;
spectators see no card in any hand while the match runs; nobody sees the deck order, only its
size. Once the game is over, views show everything.


The package, by concern (a name starting with ``_`` is private to its module):

- ``cards``: suits, ranks, copies and the per-card-code lookup tables.
- ``state``: the actions, events, state and views (msgspec Structs).
- ``options``: the per-match options and decks.
- ``rules``: setup, ``decide``, ``evolve``, legal actions, who moves, the result.
- ``views``: what each seat may see (``view``, ``redact``).
- ``game``: ``GAME``, the bundle the registry lists.
- ``live``: the hanab.live exchange format.
- ``public``: the published view of the game data for other services (the bots).
"""

from __future__ import annotations

from services.rules.games.hanabi.game import GAME

__all__ = ["GAME"]
