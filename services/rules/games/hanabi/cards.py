"""Hanabi's cards: the suits, ranks and copies, and the per-card-code lookup tables."""

from __future__ import annotations

SUITS = ("red", "yellow", "green", "blue", "white", "multicolour")
MULTICOLOUR = 5
RANKS = (1, 2, 3, 4, 5)
COPIES_PER_RANK = (3, 2, 2, 2, 1)
MAX_CLUE_TOKENS = 8
MAX_FUSES = 3
HAND_SIZES = {2: 5, 3: 5, 4: 4, 5: 4}
MAX_SEATS = 5
_CODES = range(len(SUITS) * 10)
COLOUR_INDEX = {name: index for index, name in enumerate(SUITS)}

# Per-card-code lookup tables: the hot path never divides or branches on the variant per card.
SUIT_OF = tuple(code // 10 for code in _CODES)
RANK_OF = tuple(code % 10 for code in _CODES)
RANK_BIT = tuple(1 << (code % 10 - 1) if code % 10 else 0 for code in _CODES)
COLOUR_BITS = tuple(1 << (code // 10) for code in _CODES)
"""Which colour clues touch a card when every suit is an ordinary colour."""
RAINBOW_COLOUR_BITS = tuple(
    0b11111 if code // 10 == MULTICOLOUR else 1 << (code // 10) for code in _CODES
)
"""Which colour clues touch a card when the sixth suit is multicolour (touched by all five)."""
