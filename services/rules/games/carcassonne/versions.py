"""Carcassonne's rules versions: a match folds, for good, by the version ``StackShuffled``
records (``rules_version``). Every version so far changed only The Messengers' message 4.

A log recorded before versions carries none, nor do the states stored then (``rules_version``
None, as ``playtable verify`` reads them): such a match plays on by version 3, as the last
release before versions did. A state records no version for version 3 either
(``RULES.in_state``), so that release's processes, deciding moves on our states in a rolling
upgrade, store states alike to ours. Its log is read (``readings``), first as the engine folds it:

- by version 1 when its tiles use the first pictures (no ``pictures``: recorded before
  1 December 2026, 18:14) and every message draw it records agrees with version 1's message
  stack: its message 4 carried out is upcast, in memory, to ``MessageResolvedAtOnce``, which
  goes under the stack at once (the draws are the chance the log records: they tell the
  versions apart once the stack comes round);
- else by version 3, the log as it is;
- and, for ``playtable verify``, by the others: as it is, and as version 2 (1 December
  16:35-18:28) read it, which left message 4 out of the stack when its extra turn ended the
  match (``FiguresSummed`` upcast to ``FiguresSummedHoldingMessage``). A version 2 log stopped
  in message 4's extra turn differs from version 1's only in the state stored, which verify
  compares with each reading's fold.

A match in progress across one of those releases was played under two rules and may be the
fold of no reading: a difference verify reports for it is one that release made.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.rules.games.carcassonne.messengers import (
    EXTRA_TURN,
    MESSAGES,
    FiguresSummed,
    MessageDrawn,
    MessageResolved,
)
from services.rules.games.carcassonne.state import Event, StackShuffled
from services.rules.games.contract import RulesVersions

RULES = RulesVersions(
    current=3,
    changes={
        1: "Message 4 carried out goes under the message stack at once.",
        2: (
            "Message 4 carried out goes under the stack once its extra turn is over (the next "
            "seat draws), below the messages drawn during it (5014903)."
        ),
        3: "Message 4 also goes under the stack when its extra turn ends the match (cd5c767).",
    },
    played_before_versions=3,
    unversioned=(
        "By version 1 when the log uses the first tile pictures and its message draws agree "
        "with version 1's stack, else by version 3 (see carcassonne.versions)."
    ),
)


class MessageResolvedAtOnce(MessageResolved, frozen=True, tag_field="type"):
    """Message 4 carried out in a log read as version 1's: it goes under the stack at once.
    Made only in memory, by ``readings``; never stored or shown."""


class FiguresSummedHoldingMessage(FiguresSummed, frozen=True, tag_field="type"):
    """Play ends in a log read as version 2's: a message 4 whose extra turn was still on
    stays out of the stack. Made only in memory, by ``readings``; never stored or shown."""


def at_once(rules_version: int | None, event: MessageResolved) -> bool:
    """Whether the resolved message goes under the stack now (not held for an extra turn)."""
    if MESSAGES[event.message].effect != EXTRA_TURN or event.took_points:
        return True
    return rules_version == 1 or type(event) is MessageResolvedAtOnce


def flushes_at_end(rules_version: int | None, event: FiguresSummed) -> bool:
    """Whether a message 4 held when play ends goes under the stack."""
    return rules_version != 2 and type(event) is not FiguresSummedHoldingMessage


def readings(events: list[Any]) -> list[list[Any]]:
    """The log as each version it may have been played under folds it, the engine's own
    first (see the module's docstring): one reading unless it was recorded before versions
    and carried out message 4."""
    if not events or not isinstance(events[0], StackShuffled):
        return [events]
    started = events[0]
    carried_out = [i for i, event in enumerate(events) if _carried_out_4(event)]
    if started.rules_version is not None or not carried_out:
        return [events]
    first = _upcast(events, carried_out, MessageResolvedAtOnce)
    summed = [i for i, event in enumerate(events) if type(event) is FiguresSummed]
    second = _upcast(events, summed, FiguresSummedHoldingMessage)
    if started.pictures == 1 and _draws_agree(first):
        return [first, events, second]
    return [events, second, first]


def _upcast(events: list[Any], places: list[int], kind: type) -> list[Any]:
    upcast = list(events)
    for i in places:
        upcast[i] = kind(**msgspec.structs.asdict(events[i]))
    return upcast


def _carried_out_4(event: Any) -> bool:
    return type(event) is MessageResolved and not at_once(None, event)


def _draws_agree(events: list[Any]) -> bool:
    """Whether every recorded message draw is the top of the stack this fold keeps."""
    from services.rules.games.carcassonne.evolve import evolve

    state = None
    try:
        for event in events:
            if not isinstance(event, Event):  # a seat's event (hosting), which no fold reads
                continue
            if isinstance(event, MessageDrawn) and state.messengers.stack[:1] != [event.message]:
                return False
            state = evolve(state, event)
    except Exception:  # a corrupt log: read as it is, and the fold will say where it fails
        return False
    return True
