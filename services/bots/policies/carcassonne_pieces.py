"""The Carcassonne bot's worth of the pieces and goods of Inns & Cathedrals and Traders & Builders
(see ``carcassonne_board``, which adds these to a placement's worth):

- the large follower: as a follower that counts two, plus a share of the feature's expected
  points (a majority fight is likelier, and worth more, on a big feature), less a reserve for
  keeping the one large follower for a bigger feature later;
- the builder: on a road or city of ours still open, a second tile each time we extend it on a
  later turn (the chance that one of our draws fits one of its open squares, a few times at
  most), less a reserve; extending the road or city our builder stands on, outside a builder
  turn, is worth that second tile now;
- the pig: 1 per city (completed, or its discounted chance) of a farm where we hold the
  majority (a little where we do not), less a reserve; a farm's points (``farm_points``: 3 per
  completed city, 4 with the seat's pig, as the engine scores it at the end and for The
  Messengers' message 8) count it wherever the bot values a farm;
- goods: the tokens of a city the placement completes (ours whoever scores it), worth a point
  each and part of the change they make to the end-game majorities (10 per good).

The reserves shrink with our turns left: late in the game every piece is better used than kept.
"""

from __future__ import annotations

from typing import Any

from services.rules.games.carcassonne.public import GOODS

FOLLOWER, LARGE, BUILDER, PIG = "follower", "large_follower", "builder", "pig"
EXPANSIONS = ("inns_cathedrals", "traders_builders")

TURN_WORTH = 4.0
"""What a second tile in a turn is worth (points)."""
LARGE_SHARE = 0.3
"""Share of a feature's expected points the large follower adds over a follower."""
LARGE_RESERVE = 2.0
"""What keeping the large follower for later is worth at most."""
BUILDER_EXTENSIONS = 3.0
"""Second tiles a builder earns at most, as counted."""
BUILDER_USE = 0.6
"""Chance that we extend the builder's feature when a drawn tile could."""
BUILDER_RESERVE = 1.0
FARM_PER_CITY = 3
"""A farm's points per completed city for the seats with the most farmers."""
PIG_PER_CITY = 1
"""What a seat's pig adds per completed city of a farm it scores (4 a city instead of 3)."""
PIG_RESERVE = 2.0
PIG_NO_MAJORITY = 0.3
"""The pig's worth, per city, in a farm where another seat has more farmers."""
GOOD_TOKEN = 1.0
"""A goods token's worth beside the majorities."""
GOODS_LEAD = 0.5
"""Share of the change in the end-game goods majorities counted now (more tokens will come)."""
MOST_GOODS = 10.0


class Extras:
    """What the view says of the two expansions (their ``pieces``), for seat ``me``."""

    def __init__(self, view: dict[str, Any], me: int) -> None:
        pieces = view.get("pieces") or {}
        self.expansions = tuple(name for name in EXPANSIONS if pieces.get(name))
        self.on_board: list[dict[str, Any]] = pieces.get("pieces", [])
        """The builders and pigs on the board."""
        self.builder_turn: bool = pieces.get("builder_turn", False)
        self.goods = [[held.get(name, 0) for name in GOODS] for held in pieces.get("goods", ())]
        """Per seat, its tokens per good."""


def _reserve(board: Any, worth: float) -> float:
    turns = board.own_turns
    return worth * turns / (turns + 3.0)


def large_bonus(board: Any, expected: float) -> float:
    """The large follower's worth over a follower's on a feature expected to give
    ``expected`` points to its majority (0: none to fight over)."""
    return LARGE_SHARE * max(0.0, expected) - _reserve(board, LARGE_RESERVE)


def builder_value(board: Any, reach: set[int], square: int, code: int) -> float:
    """The builder on a road or city whose open ends face ``reach`` (``code`` laid on
    ``square``): the second tiles it may earn, 0 on a feature this tile completes."""
    if not reach or board.own_turns <= 1:
        return 0.0
    miss = 1.0
    for empty in reach:
        miss *= 1.0 - board.share(board.key(empty, square, code))
    extensions = min(BUILDER_EXTENSIONS, (board.own_turns - 1) * (1.0 - miss) * BUILDER_USE)
    return TURN_WORTH * extensions - _reserve(board, BUILDER_RESERVE)


def pig_value(board: Any, cities: float, owners: list[int]) -> float:
    """The pig in a farm of ``cities`` (expected completed) where the seats have ``owners``
    farmers (ours not yet counting the pig, which is no farmer)."""
    mine = owners[board.me]
    share = 1.0 if mine and mine == max(owners) else PIG_NO_MAJORITY
    return PIG_PER_CITY * cities * share - _reserve(board, PIG_RESERVE)


def farm_points(cities: int, pig: bool) -> int:
    """A farm's points for a seat with the majority there at final scoring (and so for message
    8): per completed city 3, and 1 more with the seat's pig in it."""
    return (FARM_PER_CITY + PIG_PER_CITY * pig) * cities


def goods_gain(board: Any, tokens: list[int]) -> float:
    """What taking ``tokens`` (per good) is worth: a point each, and part of the change in the
    end-game majorities."""
    held = board.extras.goods
    gain = 0.0
    for good, got in enumerate(tokens):
        if not got:
            continue
        column = [held[seat][good] if held else 0 for seat in range(board.seats)]
        before = _majority(board.weights, column)
        column[board.me] += got
        gain += GOOD_TOKEN * got + GOODS_LEAD * (_majority(board.weights, column) - before)
    return gain


def _majority(weights: list[float], counts: list[int]) -> float:
    """The goods bonus of one good, weighted by seat: 10 to each seat with the most tokens."""
    most = max(counts)
    if not most:
        return 0.0
    leaders = [weight for weight, count in zip(weights, counts, strict=True) if count == most]
    return MOST_GOODS * sum(leaders)
