"""Dingo's rules versions: a match is played under the version its ``GameStarted`` records
(``rules_version``). No change has yet altered how a recorded Dingo log folds (its git history
holds refactors only, and logs recorded by the releases of 1 and 4 December fold to the states
they stored: ``tests/unit/services/rules/games/recorded``), so a log recorded before versions
folds by version 1, the only one.
"""

from __future__ import annotations

from services.rules.games.contract import RulesVersions

RULES = RulesVersions(
    current=1,
    changes={1: "The rules of seed 003, as first implemented."},
    unversioned="By version 1, the only one.",
)
