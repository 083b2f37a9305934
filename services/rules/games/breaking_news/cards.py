"""Breaking News' constants, cards (``seeds/breaking_news/cards.json``) and the grid's cells."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Annotated, Any

import msgspec

from services.rules.games.contract import (
    SEEDS_DIR,
)

CARD_FILE = SEEDS_DIR / "breaking_news" / "cards.json"
MIN_SEATS, MAX_SEATS = 2, 4
START_HAND = 3
OBJECT_HAND_LIMIT = 3
OPEN_OBJECTS = 2
MAX_STORY_CHARS = 2000
StoryText = Annotated[
    str,
    msgspec.Meta(
        max_length=MAX_STORY_CHARS,
        description="The story: the word of each chain card in it (in its language, if named)",
    ),
]
SHORT_STORY_MS = 15_000
LONG_STORY_MS = 30_000
SIDES = ("north", "east", "south", "west")
MODES = ("beginner", "advanced")
TIEBREAKS = ("vote", "objects_in_hand")
PHASES = ("play", "news", "story", "vote", "over")
PLAY, NEWS, STORY, VOTE, OVER = range(len(PHASES))
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")


def completions_to_end(seats: int) -> int:
    """The completed objects that start the final round: the fourth with two players."""
    return 4 if seats == 2 else 3


# --- Card data ------------------------------------------------------------------------------


def _load_cards() -> dict[str, Any]:
    with CARD_FILE.open(encoding="utf-8") as handle:
        return json.load(handle)


def normalise_text(text: str) -> str:
    """The form stories and words are compared in: NFC, case-folded, single spaces."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


CARDS = _load_cards()
LANGUAGES: tuple[str, ...] = tuple(CARDS["languages"])
COLOURS: tuple[str, ...] = tuple(CARDS["colours"])
SYMBOLS: tuple[str, ...] = tuple(CARDS["symbols"])
ELEMENT_COUNT = len(CARDS["elements"])
OBJECT_COUNT = len(CARDS["objects"])
WORDS: tuple[dict[str, str], ...] = tuple(card["words"] for card in CARDS["elements"])
FOLDED_WORDS = tuple({lang: normalise_text(w) for lang, w in words.items()} for words in WORDS)
SYMBOL_OF: tuple[int, ...] = tuple(SYMBOLS.index(card["symbol"]) for card in CARDS["elements"])
EDGES: tuple[tuple[int, ...], ...] = tuple(
    tuple(COLOURS.index(card["edges"][side]) for side in SIDES) for card in CARDS["elements"]
)
"""Each element card's edge colours, as colour indices, in the order north, east, south, west."""
OBJECT_POINTS: tuple[int, ...] = tuple(card["points"] for card in CARDS["objects"])
OBJECT_SYMBOLS: tuple[tuple[int, ...], ...] = tuple(
    tuple(SYMBOLS.index(symbol) for symbol in card["symbols"]) for card in CARDS["objects"]
)
SYMBOL_BIT = tuple(1 << symbol for symbol in SYMBOL_OF)
OBJECT_MASK: tuple[int, ...] = tuple(sum(1 << s for s in symbols) for symbols in OBJECT_SYMBOLS)
ALL_OBJECT_MASKS = frozenset(OBJECT_MASK)
EDGE_CODE = tuple(sum(colour << 2 * side for side, colour in enumerate(e)) for e in EDGES)
"""Each card's four edge colours packed two bits per side, north lowest."""

# --- The grid -------------------------------------------------------------------------------
# A cell is the int (x + _OFFSET) * _STRIDE + (y + _OFFSET); a neighbour is one step away.
# Open cells (empty, next to a card) map to a packed requirement: bits 0-7 the mask of the
# constrained edges, bits 8-15 the colours they need, bits 16+ how many cards the cell touches.

_OFFSET = 64
_STRIDE = 128
REACH = 60
"""Largest |x| or |y| accepted; 35 cards never reach further than 34 from the first one."""
STEPS = (1, _STRIDE, -1, -_STRIDE)
OPPOSITE = (2, 3, 0, 1)


def cell_of(x: int, y: int) -> int:
    return (x + _OFFSET) * _STRIDE + y + _OFFSET


def xy_of(cell: int) -> tuple[int, int]:
    column, row = divmod(cell, _STRIDE)
    return column - _OFFSET, row - _OFFSET


XY = tuple(xy_of(cell) for cell in range(_STRIDE * _STRIDE))
"""``xy_of`` for every cell, looked up in the hot path."""
