"""Hanabi's per-match options and decks: what a table may choose, checked and normalised."""

from __future__ import annotations

import functools
from typing import Any

from services.rules.games.contract import (
    OptionSpec,
    Rejection,
)
from services.rules.games.hanabi.cards import COPIES_PER_RANK, MULTICOLOUR, RANKS

OPTIONS = (
    OptionSpec(
        name="suits",
        title="Number of suits",
        type="enum",
        default=5,
        description="5: red, yellow, green, blue, white. 6 adds multicolour as a sixth suit, "
        "clued as a colour of its own unless it is a rainbow.",
        choices=[5, 6],
    ),
    OptionSpec(
        name="rainbow",
        title="Rainbow sixth suit",
        type="bool",
        default=False,
        description="The multicolour suit is a rainbow: every colour clue touches its cards and "
        "no clue names it. Turns on the sixth suit.",
    ),
    OptionSpec(
        name="rainbow_short",
        title="Short rainbow suit",
        type="bool",
        default=False,
        description="Only one multicolour card of each rank, 5 in all, so every one of them is "
        "critical. Turns on the rainbow suit.",
    ),
    OptionSpec(
        name="empty_clues",
        title="Clues that touch no card",
        type="bool",
        default=False,
        description="A clue may name a colour or rank the player holds none of (it still costs "
        "a clue token).",
    ),
    OptionSpec(
        name="deck",
        title="Stacked deck (secret)",
        type="list[int]",
        default=None,
        description="Replay a known deal: every card of the variant's deck in draw order, each "
        "coded suit*10 + rank with suits red, yellow, green, blue, white, multicolour = 0-5. "
        "Default: shuffled.",
        secret=True,
    ),
)


@functools.cache
def _sorted_deck(suits: int, rainbow_short: bool) -> tuple[int, ...]:
    deck: list[int] = []
    for suit in range(suits):
        copies = (1,) * 5 if rainbow_short and suit == MULTICOLOUR else COPIES_PER_RANK
        for rank, count in zip(RANKS, copies, strict=True):
            deck.extend([suit * 10 + rank] * count)
    return tuple(deck)


def standard_deck(suits: int, rainbow_short: bool) -> list[int]:
    """Every card code of a variant, sorted: 3/2/2/2/1 per suit, 1 per rank if short."""
    return list(_sorted_deck(suits, rainbow_short))


def normalise_options(options: dict[str, Any]) -> dict[str, Any]:
    """Apply the implications rainbow_short => rainbow => 6 suits."""
    rainbow_short = bool(options.get("rainbow_short", False))
    rainbow = rainbow_short or bool(options.get("rainbow", False))
    suits = 6 if rainbow else options.get("suits", 5)
    return {
        **options,
        "suits": suits,
        "rainbow": rainbow,
        "rainbow_short": rainbow_short,
        "empty_clues": bool(options.get("empty_clues", False)),
        "deck": options.get("deck"),
    }


def deck_problem(deck: list[int], suits: int, rainbow_short: bool) -> str | None:
    """Why ``deck`` is not a permutation of the variant's deck, or ``None`` if it is."""
    expected = standard_deck(suits, rainbow_short)
    if len(deck) != len(expected):
        return f"deck must hold {len(expected)} cards for this variant, not {len(deck)}"
    counts: dict[int, int] = {}
    for code in expected:
        counts[code] = counts.get(code, 0) + 1
    for code in deck:
        if code not in counts:
            return (
                f"deck card {code} is not a card of this variant "
                f"(codes are suit_index*10 + rank, {suits} suits)"
            )
        counts[code] -= 1
        if counts[code] < 0:
            return f"deck holds too many copies of card {code}"
    return None


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """Normalise the variant flags and check an explicit deck against the variant."""
    resolved = normalise_options(options)
    deck = resolved["deck"]
    if deck is not None:
        problem = deck_problem(deck, resolved["suits"], resolved["rainbow_short"])
        if problem:
            return Rejection("bad_option", f"option 'deck': {problem}")
    return resolved
