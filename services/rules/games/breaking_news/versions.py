"""Breaking News' rules versions: a match is played under the version its ``GameStarted``
records (``rules_version``). The events fold the same under both; only ``to_move`` during a
story differs, and no event records it.

A log recorded before versions carries none, nor do the states stored then: such a match
plays on by version 2, as the last release before versions did (a rolling upgrade changes
nothing for it). A state records no version for version 2 either (``RULES.in_state``), so
that release's processes, deciding moves on our states in a rolling upgrade, store states
alike to ours. A release before 4 December 22:24 played version 1 and stored, for a match
in the middle of a story, every seat in its ``to_move`` column: ``rules.stored_to_move`` says
so, and ``playtable verify`` accepts that row until the match's next move rewrites it.
"""

from __future__ import annotations

from services.rules.games.contract import RulesVersions

RULES = RulesVersions(
    current=2,
    changes={
        1: "During a story every seat is to move: the teller, then the listeners.",
        2: (
            "During a story the game waits on the teller alone; the listeners may still report "
            "silence (``may_act``) but no clock of theirs runs and no bot of theirs is asked "
            "(b473c38, issue 34)."
        ),
    },
    played_before_versions=2,
    unversioned=(
        "By version 2, as the last release before versions played it; the two differ only in "
        "who is to move during a story, which no event records, so a row stored mid-story by a "
        "release before 4 December 22:24 shows version 1's (``stored_to_move``)."
    ),
)
