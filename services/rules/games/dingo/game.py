"""Dingo as the engine contract's ``Game``: its functions, types and refusals together."""

from __future__ import annotations

from services.rules.games.contract import (
    Game,
)
from services.rules.games.dingo.cards import MAX_SEATS
from services.rules.games.dingo.chance import setup
from services.rules.games.dingo.evolve import evolve
from services.rules.games.dingo.options import OPTIONS, validate_options
from services.rules.games.dingo.rules import decide, legal_actions, result, to_move
from services.rules.games.dingo.state import (
    DingoAction,
    DingoEvent,
    DingoRedactedEvent,
    DingoState,
    DingoView,
)
from services.rules.games.dingo.versions import RULES
from services.rules.games.dingo.views import redact, view

REFUSALS = {
    "not_in_hand": "The card played or discarded is not in your hand: name one of your cards.",
    "unknown_seat": "The ranch named is not a seat of the match: play onto a ranch at the table.",
    "colour_not_on_ranch": (
        "The card's colour is neither the opponent's starting colour nor on their ranch, or, to "
        "destroy your protected card, not on your ranch yet: play onto a ranch showing it."
    ),
    "not_own_ranch": (
        "You would destroy your protected card with a card played onto another ranch: do that "
        "only with a card played onto your own."
    ),
    "no_effect": "A target is named for a card without an effect: play it with no target.",
    "target_not_in_a_ranch": (
        "The target is not a card on any ranch: name a card lying on a ranch, or no target."
    ),
    "wrong_target_kind": (
        "The card's effect cannot remove a card of the target's kind: name a target of a kind "
        "the effect names, or none."
    ),
    "target_protected": (
        "The target is a protected (leftmost) ranch card, which no effect removes: name another "
        "target, or none."
    ),
    "target_moon_guarded": (
        "The target lies directly left of a moon, which guards it: name another target, or none."
    ),
    "lone_ranch_card": (
        "Your protected card is the only card on your ranch: destroy it once the ranch holds more."
    ),
}
"""When the rules of Dingo refuse a move, beyond ``COMMON_REFUSALS`` (see ``Game.refusals``)."""


GAME = Game(
    name="dingo",
    title="The Dingo Ate the Baby",
    min_players=2,
    max_players=MAX_SEATS,
    options=OPTIONS,
    action_type=DingoAction,
    event_type=DingoEvent,
    redacted_event_type=DingoRedactedEvent,
    state_type=DingoState,
    view_type=DingoView,
    setup=setup,
    decide=decide,
    evolve=evolve,
    legal_actions=legal_actions,
    to_move=to_move,
    view=view,
    redact=redact,
    result=result,
    rules=RULES,
    refusals=REFUSALS,
    validate_options=validate_options,
    description=(
        "Fill your ranch up to the day's die-rolled target without going over, while babies, "
        "elephants, lions, dingoes, monkeys, sunlight and darkness scare, stomp, eat and "
        "chase the cards on everyone's ranch."
    ),
)
