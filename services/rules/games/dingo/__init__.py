"""The Dingo Ate the Baby (seed 003): fill your ranch up to the day's target, never over it.

A match is a series of days. Each day a d10 + 10 sets the target, every player gets one face-up
card on their ranch (right of their starting card) and two hidden cards in hand. On a turn a
player does one of four things:

- ``PlayCard(card, ranch=own seat)``: any colour onto the own ranch;
- ``PlayCard(card, ranch=other seat)``: onto an opponent's ranch, only in the colour of their
  starting card or of a card already on their ranch;
- ``DestroyProtected()``: the own protected (leftmost) ranch card, only with more than one;
- ``DiscardCard(card)``.

A played card with an effect may remove one card (``target``) from *any* ranch, chosen by the
player, who may also decline (``target=None``). The target must be of a kind the effect names,
and never a protected card or the card directly left of a moon. Playing onto the own ranch a
colour already there also allows destroying the own protected card (``destroy_protected``).
Removed and discarded cards go to the discard pile; the day ends the moment it holds twice as
many cards as there are players (6 with two, by default), or when a player cannot draw back up
to two because the draw pile is empty. Each player within the target scores one point per
player beaten; the game ends on the day a total passes the target score (15).

Cards are data (``seeds/dingo/cards.json``, with every invented choice in the README beside
it): actions and events name cards by id (``"red-baby-1"``); the state holds int codes (the
card's index in that file) and every per-card fact lives in a precomputed table.

Chance: ``setup`` draws a per-match seed with its ``rng`` and records it, hidden, in
``GameStarted``. Day ``d`` shuffles all 60 cards and rolls its die with
``random.Random(f"{seed}:{d}")`` unless the ``deck_order`` / ``die_rolls`` options fix that
day. The resulting order and roll are recorded in ``DayStarted``, so replay needs no RNG.
``redact`` shows each seat ``DayDealt`` instead: the ranch cards, its own hand, the pile size.

The package, by concern (a name starting with ``_`` is private to its module):

- ``cards``: the card data and the per-card lookup tables.
- ``state``: the actions, events, state and views (msgspec Structs).
- ``options``: the per-match options.
- ``chance``: each day's shuffle and roll, the deal, ``setup``.
- ``scoring``: the value of a ranch, the points of a day.
- ``rules``: ``decide``, the legal actions, who moves, the result.
- ``evolve``: every stored event applied.
- ``views``: what each seat may see (``view``, ``redact``).
- ``game``: ``GAME``, the bundle the registry lists.
- ``public``: the published view of the game data for other services (the bots).
"""

from __future__ import annotations

from services.rules.games.dingo.game import GAME

__all__ = ["GAME"]
