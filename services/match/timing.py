"""A match's clocks in its events: the ``ClockUpdated`` a change records, the clocks after a
move, and whether a seat's time ran out."""

from __future__ import annotations

from typing import Any

import msgspec

from services.match.snapshot import Snapshot
from shared.domain import rules_api as api
from shared.domain.hosting import Clocks, ClockUpdated, clock_view, run_clocks, seat_deadlines

_json = msgspec.json.Encoder()


def out_of_time(snapshot: Snapshot, seat: int, now: int) -> bool:
    control = snapshot.hosting.clock
    if control is None or snapshot.clocks is None:
        return False
    deadline = seat_deadlines(control, snapshot.clocks).get(seat)
    return deadline is not None and now > deadline


def clocks_after(snapshot: Snapshot, seat: int, to_move: list[int], now: int) -> Clocks | None:
    control = snapshot.hosting.clock
    if control is None or snapshot.clocks is None:
        return None
    return run_clocks(
        control,
        snapshot.clocks,
        moved=seat,
        to_move=to_move,
        unclocked=set(snapshot.bots),
        now_ms=now,
    )


def encoded_event(event: Any) -> api.EncodedEvent:
    return api.EncodedEvent(type(event).__name__, msgspec.Raw(_json.encode(event)))


def clock_event(
    control: Any, clocks: Clocks, moved: int | None, before: Clocks | None, now: int
) -> api.EncodedEvent:
    """A ``ClockUpdated`` of the clocks at ``now``; the mover's time taken from ``before``."""
    shown = clock_view(control, clocks, now)
    started = None if before is None or moved is None else before.running_since_ms[moved]
    return encoded_event(
        ClockUpdated(
            moved=moved,
            used_ms=None if started is None else now - started,
            remaining_ms=shown.remaining_ms,
            on_clock=shown.on_clock,
            deadline_ms=shown.deadline_ms,
            server_time_ms=now,
        )
    )
