"""The webhook dispatcher against real Postgres: filters, apps kept apart, and an event handled
twice (a restart redelivering it) creates its deliveries once."""

from __future__ import annotations

import uuid

import msgspec
import pytest
from psycopg_pool import AsyncConnectionPool

from services.webhooks.dispatcher import Dispatcher
from shared.messages import EventEnvelope, metadata

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def envelope(stream_id: str, version: int, type_: str, data: object, app: str) -> bytes:
    return msgspec.json.encode(
        EventEnvelope(
            stream_id=stream_id,
            version=version,
            type=type_,
            data=msgspec.Raw(msgspec.json.encode(data)),
            metadata=metadata(correlation_id="c", app_id=app),
        )
    )


async def test_each_event_makes_one_delivery_per_matching_subscription(
    pool: AsyncConnectionPool,
) -> None:
    run = uuid.uuid4().hex[:8]
    table, match, their_table = f"t{run}", f"m{run}", f"u{run}"
    app, other_app = f"a{run}", f"b{run}"
    subscriptions = {
        f"by-table-{run}": ([], table, None, app),
        f"by-match-{run}": ([], None, match, app),
        f"finished-{run}": (["MatchFinished"], table, None, app),
        f"other-match-{run}": ([], None, f"x{run}", app),
        f"others-everything-{run}": ([], None, None, other_app),
    }
    async with pool.connection() as conn:
        for name, (types, table_id, match_id, owner) in subscriptions.items():
            await conn.execute(
                "INSERT INTO webhook_subscriptions (id, url, event_types, table_id, match_id,"
                " secret, app_id) VALUES (%s, 'http://127.0.0.1/', %s, %s, %s, 'whsec_AAAA', %s)",
                (name, types, table_id, match_id, owner),
            )
    enqueued: list[list[int]] = []
    dispatcher = Dispatcher(pool, enqueued.append)
    events = [
        envelope(f"table-{table}", 1, "TableCreated", {"game": "hanabi"}, app),
        envelope(f"table-{table}", 2, "TableStarted", {"match_id": match}, app),
        envelope(f"match-{match}", 1, "CardPlayed", {"card": 1}, app),
        envelope(f"match-{match}", 1, "MatchFinished", {"match_id": match}, app),
        envelope(f"table-{their_table}", 1, "TableCreated", {"game": "dingo"}, other_app),
    ]
    try:
        for payload in events + events:  # the second pass: redelivered after a restart
            await dispatcher.handle("0-0", payload)
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT subscription_id, event_key, id FROM webhook_deliveries"
                " WHERE subscription_id = ANY(%s) ORDER BY id",
                (list(subscriptions),),
            )
            rows = await cursor.fetchall()
    finally:
        async with pool.connection() as conn:
            await conn.execute(
                "DELETE FROM webhook_subscriptions WHERE id = ANY(%s)", (list(subscriptions),)
            )
    handed_over = [id_ for batch in enqueued for id_ in batch]  # other tests' subscriptions too
    assert len(handed_over) == len(set(handed_over))
    assert {row[2] for row in rows} <= set(handed_over)
    delivered = {(row[0].split("-")[0], row[1]) for row in rows}
    assert delivered == {
        ("by", f"table-{table}:1:TableCreated"),
        ("by", f"table-{table}:2:TableStarted"),
        ("by", f"match-{match}:1:CardPlayed"),
        ("by", f"match-{match}:1:MatchFinished"),
        ("finished", f"match-{match}:1:MatchFinished"),
        ("others", f"table-{their_table}:1:TableCreated"),  # its own app's only
    }
    per_subscription = {name: [r[1] for r in rows if r[0] == name] for name in subscriptions}
    assert len(per_subscription[f"by-table-{run}"]) == 4
    assert per_subscription[f"by-match-{run}"] == [
        f"match-{match}:1:CardPlayed",
        f"match-{match}:1:MatchFinished",
    ]
    assert per_subscription[f"other-match-{run}"] == []
