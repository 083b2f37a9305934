"""Hanabi as the engine contract's ``Game``: its functions, types and refusals in one bundle."""

from __future__ import annotations

from services.rules.games.contract import (
    Game,
)
from services.rules.games.hanabi.cards import MAX_SEATS
from services.rules.games.hanabi.options import OPTIONS, validate_options
from services.rules.games.hanabi.rules import (
    deal_problem,
    decide,
    evolve,
    legal_actions,
    result,
    setup,
    to_move,
)
from services.rules.games.hanabi.state import (
    HanabiAction,
    HanabiEvent,
    HanabiRedactedEvent,
    HanabiState,
    HanabiView,
)
from services.rules.games.hanabi.versions import RULES, readings
from services.rules.games.hanabi.views import redact, view

REFUSALS = {
    "not_in_hand": (
        "The card played or discarded is not in your hand: name one of your own cards by its order."
    ),
    "clue_tokens_full": (
        "You discard while all 8 clue tokens are free: give a clue or play a card instead."
    ),
    "unknown_seat": "The clue's target is not a seat of the match: clue a seat at the table.",
    "clue_to_self": "The clue's target is your own seat: clue another player.",
    "no_clue_tokens": "No clue token is left for a clue: play or discard a card instead.",
    "empty_clue": (
        "The clue touches none of the target's cards and this table plays without empty "
        "clues: give a clue that touches at least one card."
    ),
    "unknown_colour": "The clue names a colour this game does not have: name one of its colours.",
    "unnamable_colour": (
        "The clue names multicolour, which the rainbow variants never name because every colour "
        "clue touches it: name another colour."
    ),
    "unknown_rank": "The clue names a rank other than 1 to 5: name a rank from 1 to 5.",
}
"""When the rules of Hanabi refuse a move, beyond ``COMMON_REFUSALS`` (see ``Game.refusals``)."""


GAME = Game(
    cooperative=True,
    name="hanabi",
    title="Hanabi",
    min_players=2,
    max_players=MAX_SEATS,
    options=OPTIONS,
    action_type=HanabiAction,
    event_type=HanabiEvent,
    redacted_event_type=HanabiRedactedEvent,
    state_type=HanabiState,
    view_type=HanabiView,
    setup=setup,
    deal_problem=deal_problem,
    decide=decide,
    evolve=evolve,
    legal_actions=legal_actions,
    to_move=to_move,
    view=view,
    redact=redact,
    result=result,
    rules=RULES,
    readings=readings,
    refusals=REFUSALS,
    validate_options=validate_options,
    description=(
        "Cooperative fireworks: clue your partners about the cards they hold but cannot see, "
        "and build the five (or six) colours from 1 to 5 together."
    ),
)
