"""The Carcassonne bot's figures on The Messengers' scoring track: which figure takes which
points so that a moved figure stops on a dark space and draws a message."""

from __future__ import annotations

from typing import Any


def lands_dark(figures: list[int], points: list[int]) -> bool:
    """Whether some way of giving each scoring to one figure stops a moved figure on a
    multiple of 5."""
    return best_assignment(figures, points)[0]


def best_assignment(figures: list[int], points: list[int]) -> tuple[bool, list[int]]:
    """The figure for each scoring: one that draws a message if any does, else each to the
    figure behind; ties prefer figures on different residues mod 5."""
    points = points[:8]
    best: tuple[Any, ...] | None = None
    best_choice: list[int] = []
    for mask in range(1 << len(points)):
        spots = list(figures)
        moved = 0
        choice = []
        for index, gained in enumerate(points):
            figure = (mask >> index) & 1
            spots[figure] += gained
            moved |= 1 << figure
            choice.append(figure)
        dark = any(moved >> figure & 1 and spots[figure] % 5 == 0 for figure in (0, 1))
        rank = (dark, spots[0] % 5 != spots[1] % 5, -abs(spots[0] - spots[1]))
        if best is None or rank > best:
            best = rank
            best_choice = choice
    return bool(best and best[0]), best_choice


# ---------------------------------------------------------------------------- turn phases


def points_figure(figures: list[int], points: int) -> int:
    """The figure to take ``points``: one that stops on a dark space (another message),
    else the one behind."""
    for figure in (0, 1):
        if points and (figures[figure] + points) % 5 == 0:
            return figure
    return 1 if figures[1] < figures[0] else 0
