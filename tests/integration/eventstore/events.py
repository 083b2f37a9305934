"""Events to append and the means of reading them back, for the event store tests."""

from __future__ import annotations

import msgspec

from shared.domain.messages import Actor, metadata, new_id
from shared.infra.eventstore import Checkpoint, EventStore, NewEvent, StoredEvent
from tests.waiting import await_until

BEFORE_PARTITIONING = 5
"""Streams written before the log is partitioned (each of three events)."""


def new_events(*types: str) -> list[NewEvent]:
    return [
        NewEvent(
            type=type_,
            data=msgspec.json.encode({"name": type_}),
            metadata=metadata(correlation_id="corr", actor=Actor(kind="seat", seat=1)),
        )
        for type_ in types
    ]


def new_stream() -> str:
    return f"match-{new_id()}"


async def read_until(store: EventStore, after: Checkpoint, count: int) -> list[StoredEvent]:
    """Read the whole log after ``after`` until ``count`` events are readable.

    Any transaction on the server that is older than the writers (another session's, too)
    holds their events back from ``read_all`` until it ends, so wait for that.
    """

    async def readable() -> list[StoredEvent] | None:
        events = await store.read_all(after=after)
        return events if len(events) >= count else None

    return await await_until(readable, what=f"{count} events readable")


def types(events: list[StoredEvent]) -> list[str]:
    return [event.type for event in events]
