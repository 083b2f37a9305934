"""Dingo's per-match options: what a table may choose, checked and normalised."""

from __future__ import annotations

from typing import Any

from services.rules.games.contract import (
    OptionSpec,
    Rejection,
)
from services.rules.games.dingo.cards import CARD_CODE, CARD_ID, DECK_SIZE, DIE_SIDES, MAX_SEATS

OPTIONS = (
    OptionSpec(
        name="target_score",
        title="Points to win",
        type="int",
        default=15,
        description="The game ends after the day on which a player's total passes (exceeds) "
        "this score.",
        minimum=1,
        maximum=99,
    ),
    OptionSpec(
        name="tiebreak",
        title="Tied leaders",
        type="enum",
        default="extra_day",
        description="Leaders tied at the end: share the win (share), or play extra days until "
        "one leads alone (extra_day).",
        choices=["share", "extra_day"],
    ),
    OptionSpec(
        name="two_player_six",
        title="Six-card days for two",
        type="bool",
        default=True,
        description="With two players a day ends at 6 cards on the discard pile instead of 4.",
    ),
    OptionSpec(
        name="first_player",
        title="First start player",
        type="int",
        default=None,
        description="The seat that deals and moves first on the first day; random if not given.",
        minimum=0,
        maximum=MAX_SEATS - 1,
    ),
    OptionSpec(
        name="deck_order",
        title="Stacked decks (secret)",
        type="list[str]",
        default=None,
        description=f"Replay known days: {DECK_SIZE} card ids per day in dealing order, the days "
        "one after another; later days are shuffled.",
        secret=True,
    ),
    OptionSpec(
        name="die_rolls",
        title="Fixed die rolls (secret)",
        type="list[int]",
        default=None,
        description="Replay known days: the d10 rolls (1-10) of the first days, in order; later "
        "days are rolled.",
        secret=True,
    ),
)


def options_problem(options: dict[str, Any], seats: int) -> str | None:
    """Why the options cannot start a match of ``seats`` players, or None."""
    first = options.get("first_player")
    if first is not None and not 0 <= first < seats:
        return f"option 'first_player': there is no seat {first} with {seats} players"
    order = options.get("deck_order") or []
    if len(order) % DECK_SIZE:
        return f"option 'deck_order': needs {DECK_SIZE} card ids per day, got {len(order)}"
    every_card = sorted(CARD_ID)
    for start in range(0, len(order), DECK_SIZE):
        if sorted(order[start : start + DECK_SIZE]) != every_card:
            unknown = sorted(set(order[start : start + DECK_SIZE]) - set(CARD_CODE))
            what = f"unknown card ids {unknown[:3]}" if unknown else "a card is repeated"
            day = start // DECK_SIZE + 1
            return f"option 'deck_order': day {day} is not the whole deck ({what})"
    rolls = options.get("die_rolls") or []
    if any(not 1 <= roll <= DIE_SIDES for roll in rolls):
        return f"option 'die_rolls': every roll must be 1-{DIE_SIDES}"
    return None


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """Check the explicit first player, deck orders and die rolls."""
    problem = options_problem(options, seats)
    return Rejection("bad_option", problem) if problem else options
