"""Fixtures shared by the integration tests of the event store, bus and outbox."""

from __future__ import annotations

import pytest
from psycopg_pool import AsyncConnectionPool

from shared.infra.eventstore import EventStore


@pytest.fixture
def store(pool: AsyncConnectionPool) -> EventStore:
    return EventStore(pool)
