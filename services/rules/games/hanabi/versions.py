"""Hanabi's rules versions: a match folds, for good, by the version its ``GameStarted``
records (``rules_version``).

A log recorded before versions has none, and folds by version 1 (no clue history), which
every release before 4 December 2026, 21:35 played: its states stored then have no ``clues``,
so ``playtable verify`` finds them equal and an upgrade rewrites none. The releases of
21:35-22:34 that day kept the clue history without recording a version, which no event tells
apart: ``readings`` gives verify that log read as version 2 too, and such a match plays on
with the history its stored state holds.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.rules.games.contract import RulesVersions
from services.rules.games.hanabi.state import GameStarted

RULES = RulesVersions(
    current=2,
    changes={
        1: "The state keeps no clue history.",
        2: "The state keeps every clue given (``clues``), shown in the views (issue 34).",
    },
    unversioned="By version 1 (no clue history); verify accepts version 2's fold too.",
)
CLUE_HISTORY_SINCE = 2
"""The first rules version whose state keeps the clue history."""


def readings(events: list[Any]) -> list[list[Any]]:
    """The log as the engine folds it, and, when it may have been recorded before versions
    (version 1, the field's default), as version 2 kept it."""
    if not events or not isinstance(events[0], GameStarted) or events[0].rules_version != 1:
        return [events]
    return [events, [msgspec.structs.replace(events[0], rules_version=2), *events[1:]]]
