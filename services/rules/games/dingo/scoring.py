"""Dingo's scoring: the value of a ranch and the points of a day."""

from __future__ import annotations

from services.rules.games.dingo.cards import VALUE


def ranch_value(ranch: list[int]) -> int:
    """The sum of the card values on a ranch (the starting card counts nothing)."""
    return sum(VALUE[code] for code in ranch)


def day_points(values: list[int], target: int) -> list[int]:
    """One point per player beaten: a player within the target beats everyone over it and
    everyone with a lower value; a player over the target scores nothing."""
    points = []
    for value in values:
        if value > target:
            points.append(0)
        else:
            points.append(sum(1 for other in values if other > target or other < value))
    return points
