"""Dingo's cards: the data of ``seeds/dingo/cards.json`` and the per-card lookup tables."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from services.rules.games.contract import (
    SEEDS_DIR,
)

CARD_FILE = SEEDS_DIR / "dingo" / "cards.json"
HAND_SIZE = 2
DIE_SIDES = 10
TARGET_BASE = 10
MAX_SEATS = 5
KEYWORDS = ("scare", "chase", "destroy", "eat", "stomp")
"""The seed's removal keywords (Erschrecken, Verfolgen, Zerstören, Fressen, Stampfen)."""


# --- Card data ------------------------------------------------------------------------------


class Card(msgspec.Struct, frozen=True, gc=False):
    """One card as clients see it; ``removes`` lists the kinds its effect may remove."""

    id: str
    colour: str
    kind: str
    value: int
    keyword: str | None
    removes: tuple[str, ...]
    guards_left: bool


def load_cards(
    path: Path = CARD_FILE,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Card, ...]]:
    """The colours (in starting-card order), the kinds and the cards (code = index),
    checked for the rules' assumptions."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    colours, kinds = tuple(data["colours"]), data["kinds"]
    if any(kind not in kinds for entry in kinds.values() for kind in entry["removes"]):
        raise ValueError("an effect removes an unknown kind")
    cards = []
    for entry in data["cards"]:
        kind = kinds[entry["kind"]]
        card = Card(
            id=entry["id"],
            colour=entry["colour"],
            kind=entry["kind"],
            value=entry["value"],
            keyword=kind["keyword"],
            removes=tuple(kind["removes"]),
            guards_left=kind.get("guards_left", False),
        )
        if card.colour not in colours or (card.keyword is None) != (not card.removes):
            raise ValueError(f"card {card.id}: unknown colour or effect without keyword")
        if card.keyword is not None and card.keyword not in KEYWORDS:
            raise ValueError(f"card {card.id}: {card.keyword!r} is not a keyword of the seed")
        if card.guards_left and card.removes:
            raise ValueError(f"card {card.id}: a guarding card has no effect")
        cards.append(card)
    if len({card.id for card in cards}) != len(cards):
        raise ValueError("card ids must be unique")
    return colours, tuple(kinds), tuple(cards)


COLOURS, KINDS, CARDS = load_cards()
DECK_SIZE = len(CARDS)
CARD_ID = tuple(card.id for card in CARDS)
CARD_CODE = {card.id: code for code, card in enumerate(CARDS)}
COLOUR_BIT = tuple(1 << COLOURS.index(card.colour) for card in CARDS)
KIND_BIT = tuple(1 << KINDS.index(card.kind) for card in CARDS)
VALUE = tuple(card.value for card in CARDS)
REMOVES = tuple(sum(1 << KINDS.index(kind) for kind in card.removes) for card in CARDS)
"""Bitmask of the kinds a card's effect removes; 0 for a card without effect."""
KEYWORD = tuple(card.keyword or "" for card in CARDS)
"""A card's effect keyword; read only for cards that have an effect."""
GUARDS = tuple(card.guards_left for card in CARDS)
CODES = range(DECK_SIZE)
STARTING_BIT = tuple(1 << seat for seat in range(MAX_SEATS))
"""Seat ``s`` holds the starting card of colour ``COLOURS[s]``."""
