"""The webhook dispatcher against real Postgres: filters, apps kept apart, and an event handled
twice (a restart redelivering it) creates its deliveries once; a batch of events (one statement)
creates the same deliveries as its events handled one by one."""

from __future__ import annotations

import asyncio
import uuid

import msgspec
import pytest
import redis.asyncio as redis_async
from psycopg_pool import AsyncConnectionPool

from services.webhooks.dispatcher import Dispatcher
from shared.domain.messages import EventEnvelope, metadata
from shared.infra.bus import Bus, Consumer

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def envelope(stream_id: str, version: int, type_: str, data: object, app: str | None) -> bytes:
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


Subscriptions = dict[str, tuple[list[str], str | None, str | None, str, bool]]
"""By id: event types, table, match, app, enabled."""


async def subscribe(pool: AsyncConnectionPool, subscriptions: Subscriptions) -> None:
    async with pool.connection() as conn:
        for name, (types, table_id, match_id, owner, enabled) in subscriptions.items():
            await conn.execute(
                "INSERT INTO webhook_subscriptions (id, url, event_types, table_id, match_id,"
                " secret, app_id, enabled)"
                " VALUES (%s, 'http://127.0.0.1/', %s, %s, %s, 'whsec_AAAA', %s, %s)",
                (name, types, table_id, match_id, owner, enabled),
            )


async def unsubscribe(pool: AsyncConnectionPool, subscriptions: Subscriptions) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "DELETE FROM webhook_subscriptions WHERE id = ANY(%s)", (list(subscriptions),)
        )


async def deliveries(
    pool: AsyncConnectionPool, subscriptions: Subscriptions, status: str = "pending"
) -> list[tuple[int, str, str]]:
    """``(id, subscription, event key)`` of the subscriptions' deliveries to be sent (those
    of a disabled subscription are ``missed``), oldest first."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT id, subscription_id, event_key FROM webhook_deliveries"
            " WHERE subscription_id = ANY(%s) AND status = %s ORDER BY id",
            (list(subscriptions), status),
        )
        return [(row[0], row[1], row[2]) for row in await cursor.fetchall()]


async def handled(pool: AsyncConnectionPool, run: str) -> list[str]:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT event_key FROM webhook_handled WHERE event_key LIKE %s ORDER BY event_key",
            (f"%{run}%",),
        )
        return [row[0] for row in await cursor.fetchall()]


def scenario(run: str) -> tuple[Subscriptions, list[bytes]]:
    """Two apps' subscriptions and events, in the order a stream would hold them: a match
    event before the TableStarted of its match (a table's filter must not admit it yet), the
    match's events after it, a TableStarted naming an already started match again, an event
    published twice, an event of no app."""
    table, match, late_table = f"t{run}", f"m{run}", f"l{run}"
    their_table, their_match = f"u{run}", f"n{run}"
    app, other_app = f"a{run}", f"b{run}"
    subscriptions: Subscriptions = {
        f"by-table-{run}": ([], table, None, app, True),
        f"by-match-{run}": ([], None, match, app, True),
        f"finished-{run}": (["MatchFinished"], table, None, app, True),
        f"late-table-{run}": ([], late_table, None, app, True),
        f"their-table-{run}": ([], their_table, None, app, True),  # the other app's table
        f"disabled-{run}": ([], None, None, app, False),
        f"others-everything-{run}": ([], None, None, other_app, True),
        f"others-by-table-{run}": (["CardPlayed"], their_table, None, other_app, True),
    }
    events = [
        envelope(f"table-{table}", 1, "TableCreated", {"game": "hanabi"}, app),
        envelope(f"match-{match}", 1, "MatchCreated", {"seats": 2}, app),  # before TableStarted
        envelope(f"table-{their_table}", 1, "TableCreated", {"game": "dingo"}, other_app),
        envelope(f"table-{table}", 2, "TableStarted", {"match_id": match}, app),
        envelope(f"match-{match}", 2, "CardPlayed", {"card": 1}, app),
        envelope(f"table-{their_table}", 2, "TableStarted", {"match_id": their_match}, other_app),
        envelope(f"match-{their_match}", 1, "CardPlayed", {"card": 7}, other_app),
        envelope(f"match-{match}", 2, "CardPlayed", {"card": 1}, app),  # published twice
        envelope(f"table-{late_table}", 1, "TableStarted", {"match_id": match}, app),
        envelope(f"match-{match}", 3, "CardPlayed", {"card": 2}, app),
        envelope(f"table-{table}", 3, "TableCreated", {"game": "hanabi"}, None),  # no app
        envelope(f"match-{match}", 3, "MatchFinished", {"match_id": match}, app),
    ]
    return subscriptions, events


def expected_deliveries(run: str) -> list[tuple[str, str]]:
    """``(subscription, event key)`` in the order the deliveries are created."""
    table, match, late_table = f"t{run}", f"m{run}", f"l{run}"
    their_table, their_match = f"u{run}", f"n{run}"
    return [
        (f"by-table-{run}", f"table-{table}:1:TableCreated"),
        (f"by-match-{run}", f"match-{match}:1:MatchCreated"),
        (f"others-everything-{run}", f"table-{their_table}:1:TableCreated"),
        (f"by-table-{run}", f"table-{table}:2:TableStarted"),
        (f"by-match-{run}", f"match-{match}:2:CardPlayed"),
        (f"by-table-{run}", f"match-{match}:2:CardPlayed"),
        (f"others-everything-{run}", f"table-{their_table}:2:TableStarted"),
        (f"others-by-table-{run}", f"match-{their_match}:1:CardPlayed"),
        (f"others-everything-{run}", f"match-{their_match}:1:CardPlayed"),
        (f"late-table-{run}", f"table-{late_table}:1:TableStarted"),
        (f"by-match-{run}", f"match-{match}:3:CardPlayed"),  # late-table: already started
        (f"by-table-{run}", f"match-{match}:3:CardPlayed"),
        (f"by-match-{run}", f"match-{match}:3:MatchFinished"),
        (f"by-table-{run}", f"match-{match}:3:MatchFinished"),
        (f"finished-{run}", f"match-{match}:3:MatchFinished"),
    ]


def in_creation_order(rows: list[tuple[int, str, str]]) -> list[tuple[str, str]]:
    """Deliveries by event, then subscription: the order both ways of handling create them."""
    return [(subscription, key) for _, subscription, key in rows]


def in_stream_order(batch: list[int], rows: list[tuple[int, str, str]]) -> bool:
    """Each subscription's deliveries of one stream come in a batch side by side, in order."""
    streams = {id_: (subscription, key.split(":")[0]) for id_, subscription, key in rows}
    mine = [(streams[id_], id_) for id_ in batch if id_ in streams]
    return mine == sorted(mine)


def by_event(pairs: list[tuple[str, str]], events: list[str]) -> list[tuple[str, str]]:
    return sorted(pairs, key=lambda pair: (events.index(pair[1]), pair[0]))


@pytest.mark.parametrize("batch_size", [1, 3, 5, 100])
async def test_a_batch_makes_the_deliveries_of_its_events_handled_one_by_one(
    pool: AsyncConnectionPool, batch_size: int
) -> None:
    run = uuid.uuid4().hex[:8]
    subscriptions, events = scenario(run)
    await subscribe(pool, subscriptions)
    enqueued: list[list[int]] = []
    dispatcher = Dispatcher(pool, enqueued.append)
    entries = [(f"{n}-0", payload) for n, payload in enumerate(events, start=1)]
    try:
        for start in range(0, len(entries), batch_size):
            await dispatcher.handle_batch(entries[start : start + batch_size])
        rows = await deliveries(pool, subscriptions)
        missed = await deliveries(pool, subscriptions, "missed")
        for start in range(0, len(entries), batch_size):  # redelivered after a restart
            await dispatcher.handle_batch(entries[start : start + batch_size])
        assert await deliveries(pool, subscriptions) == rows
    finally:
        await unsubscribe(pool, subscriptions)

    keys = list(dict.fromkeys(key for _, _, key in rows))
    assert by_event(in_creation_order(rows), keys) == expected_deliveries(run)
    assert in_creation_order(rows) == expected_deliveries(run)  # ids in event order
    # the copy shares its key; the event of no app concerns no subscription: not even recorded
    assert len(await handled(pool, run)) == len(events) - 2
    handed_over = [id_ for batch in enqueued for id_ in batch]
    assert len(handed_over) == len(set(handed_over))
    assert {row[0] for row in rows} <= set(handed_over)
    assert all(in_stream_order(batch, rows) for batch in enqueued)
    # the disabled subscription's are kept, as missed, one per event of its app; none is sent
    assert [key for _, _, key in missed] == [
        f"table-t{run}:1:TableCreated",
        f"match-m{run}:1:MatchCreated",
        f"table-t{run}:2:TableStarted",
        f"match-m{run}:2:CardPlayed",
        f"table-l{run}:1:TableStarted",
        f"match-m{run}:3:CardPlayed",
        f"match-m{run}:3:MatchFinished",
    ]
    assert not {row[0] for row in missed} & set(handed_over)


async def test_consumed_batches_deliver_once_and_a_redelivered_stream_nothing(
    pool: AsyncConnectionPool, redis: redis_async.Redis, bus: Bus, key_prefix: str
) -> None:
    """Through a real consumer group: each read is one batch (TableStarted and its match's
    events together); a second group reading the stream again (a restart that lost the
    acknowledgements) creates and enqueues nothing."""
    run = uuid.uuid4().hex[:8]
    subscriptions, events = scenario(run)
    await subscribe(pool, subscriptions)
    stream = f"{key_prefix}match-events"
    await bus.publish_many([(stream, payload) for payload in events])
    enqueued: list[list[int]] = []
    dispatcher = Dispatcher(pool, enqueued.append)
    batches: list[int] = []

    async def handle_batch(items: list[tuple[str, bytes]]) -> None:
        batches.append(len(items))
        await dispatcher.handle_batch(items)

    async def one_by_one(entry_id: str, payload: bytes) -> None:
        raise AssertionError("no batch should fail")

    try:
        for group in ("webhooks", "webhooks-after-restart"):
            await bus.ensure_group(stream, group)
            member = Consumer(
                redis, stream, group, "d", one_by_one, batch_handler=handle_batch, block_ms=0
            )
            while await member.step():
                pass
            assert (await redis.xpending(stream, group))["pending"] == 0
            if group == "webhooks":
                rows = await deliveries(pool, subscriptions)
                first_enqueued = list(enqueued)
        assert await deliveries(pool, subscriptions) == rows
    finally:
        await unsubscribe(pool, subscriptions)

    assert batches == [len(events), len(events)]
    assert in_creation_order(rows) == expected_deliveries(run)
    assert enqueued == first_enqueued  # the redelivered stream enqueued nothing
    assert len(enqueued) == 1 and in_stream_order(enqueued[0], rows)
    assert {row[0] for row in rows} <= set(enqueued[0])


async def test_events_of_apps_without_subscriptions_are_skipped_without_a_write(
    pool: AsyncConnectionPool,
) -> None:
    """Nothing to deliver: the events are not even recorded, but a table's start is (a table's
    filter must know its match). A subscription created next gets the events committed after
    it, although this dispatcher had just found its app without any."""
    run = uuid.uuid4().hex[:8]
    table, match, app = f"t{run}", f"m{run}", f"a{run}"
    events = [
        envelope(f"table-{table}", 2, "TableStarted", {"match_id": match}, app),
        envelope(f"match-{match}", 1, "CardPlayed", {"card": 1}, app),
    ]
    enqueued: list[list[int]] = []
    dispatcher = Dispatcher(pool, enqueued.append)
    entries = [(f"{n}-0", payload) for n, payload in enumerate(events, start=1)]
    assert await dispatcher.handle_batch(entries[1:]) is False  # wanted by no subscription
    await dispatcher.handle_batch(entries)
    assert await handled(pool, run) == [f"table-{table}:2:TableStarted"]
    subscriptions: Subscriptions = {f"by-table-{run}": ([], table, None, app, True)}
    await subscribe(pool, subscriptions)
    try:
        later = envelope(f"match-{match}", 2, "CardPlayed", {"card": 2}, app)
        assert await dispatcher.handle_batch([("3-0", later)]) is True
        rows = await deliveries(pool, subscriptions)
    finally:
        await unsubscribe(pool, subscriptions)

    assert await handled(pool, run) == [
        f"match-{match}:2:CardPlayed",
        f"table-{table}:2:TableStarted",
    ]
    assert in_creation_order(rows) == [(f"by-table-{run}", f"match-{match}:2:CardPlayed")]
    assert len(enqueued) == 1


def counting_looks(dispatcher: Dispatcher) -> list[int]:
    """Counts (in its one item) the dispatcher's looks at which apps have a subscription."""
    looks = [0]
    look = dispatcher._subscribed.look

    async def counted() -> frozenset[str] | None:
        looks[0] += 1
        return await look()

    dispatcher._subscribed.look = counted  # type: ignore[method-assign]
    return looks


async def test_a_subscription_gets_every_event_committed_after_it_whatever_the_dispatcher_knew(
    pool: AsyncConnectionPool,
) -> None:
    """Apps subscribe (and one unsubscribes) between reads of a dispatcher that keeps which
    apps have a subscription: every event read after an app subscribed is delivered, however
    recently the dispatcher looked; Postgres is asked only when a read holds an event of an app
    not known to be subscribed."""
    run = uuid.uuid4().hex[:8]
    apps = [f"a{run}", f"b{run}", f"c{run}"]
    dispatcher = Dispatcher(pool, lambda ids: None)
    looks = counting_looks(dispatcher)
    subscribed: Subscriptions = {}
    expected: list[tuple[str, str]] = []
    try:
        for version in range(1, 7):
            if version in (2, 4):  # apps[0], then apps[1], subscribe between two reads
                app = apps[version // 2 - 1]
                added: Subscriptions = {f"all-{app}": ([], None, None, app, True)}
                await subscribe(pool, added)
                subscribed.update(added)
            if version == 5:  # apps[0] unsubscribes: its later events are wanted no more
                await unsubscribe(pool, {f"all-{apps[0]}": subscribed.pop(f"all-{apps[0]}")})
            read = [
                (f"{version}-{n}", envelope(f"match-{app}", version, "CardPlayed", {}, app))
                for n, app in enumerate(apps)
            ]
            await dispatcher.handle_batch(read)
            expected += [
                (f"all-{app}", f"match-{app}:{version}:CardPlayed")
                for app in apps
                if f"all-{app}" in subscribed
            ]
        rows = await deliveries(pool, subscribed)
    finally:
        await unsubscribe(pool, subscribed)

    assert in_creation_order(rows) == [pair for pair in expected if pair[0] in subscribed]
    assert len(rows) == 3  # apps[1]'s events from version 4 on
    assert looks == [6]  # apps[2] never subscribed: each read held one of its events


async def test_a_read_of_subscribed_apps_events_only_asks_nothing_more(
    pool: AsyncConnectionPool,
) -> None:
    """A subscription's app, once known, is trusted: only who is not subscribed is asked."""
    run = uuid.uuid4().hex[:8]
    app = f"a{run}"
    subscriptions: Subscriptions = {f"all-{app}": ([], None, None, app, True)}
    await subscribe(pool, subscriptions)
    dispatcher = Dispatcher(pool, lambda ids: None)
    try:
        await dispatcher.handle_batch([("1-0", envelope(f"match-{run}", 1, "CardPlayed", {}, app))])
        looks = counting_looks(dispatcher)
        await dispatcher.handle_batch([("2-0", envelope(f"match-{run}", 2, "CardPlayed", {}, app))])
        rows = await deliveries(pool, subscriptions)
    finally:
        await unsubscribe(pool, subscriptions)
    assert looks == [0]
    assert len(rows) == 2


async def test_a_consumed_read_nobody_wants_is_acknowledged_and_writes_nothing(
    pool: AsyncConnectionPool, redis: redis_async.Redis, bus: Bus, key_prefix: str
) -> None:
    run = uuid.uuid4().hex[:8]
    stream = f"{key_prefix}match-events"
    events = [envelope(f"match-m{run}", n, "CardPlayed", {}, f"a{run}") for n in range(1, 51)]
    await bus.publish_many([(stream, payload) for payload in events])
    await bus.ensure_group(stream, "webhooks")
    dispatcher = Dispatcher(pool, lambda ids: None)
    looks = counting_looks(dispatcher)
    member = Consumer(
        redis, stream, "webhooks", "d", dispatcher.handle, batch_handler=dispatcher.handle_batch
    )
    assert await member.step() == len(events)
    assert (await redis.xpending(stream, "webhooks"))["pending"] == 0
    assert await handled(pool, run) == []
    assert looks == [1]  # one look for the whole read


async def test_overlapping_batches_handled_at_once_deliver_once(
    pool: AsyncConnectionPool,
) -> None:
    """Two dispatchers with overlapping batches at the same time (one recovering entries the
    other is still handling): each event's deliveries are created once, without a deadlock."""
    run = uuid.uuid4().hex[:8]
    subscriptions, events = scenario(run)
    await subscribe(pool, subscriptions)
    entries = [(f"{n}-0", payload) for n, payload in enumerate(events, start=1)]
    enqueued: list[list[int]] = []
    first, second = Dispatcher(pool, enqueued.append), Dispatcher(pool, enqueued.append)
    for dispatcher in (first, second):  # both know the apps: the first batch starts first
        await dispatcher._subscribed.look()
    try:
        await asyncio.wait_for(
            asyncio.gather(first.handle_batch(entries[:9]), second.handle_batch(entries[2:])),
            timeout=10,
        )
        rows = await deliveries(pool, subscriptions)
    finally:
        await unsubscribe(pool, subscriptions)

    assert sorted(in_creation_order(rows)) == sorted(expected_deliveries(run))
    handed_over = [id_ for batch in enqueued for id_ in batch]
    assert len(handed_over) == len(set(handed_over))
    assert {row[0] for row in rows} <= set(handed_over)


async def test_an_undecodable_entry_fails_alone_not_its_batch(
    pool: AsyncConnectionPool, redis: redis_async.Redis, bus: Bus, key_prefix: str
) -> None:
    run = uuid.uuid4().hex[:8]
    subscriptions, events = scenario(run)
    await subscribe(pool, subscriptions)
    stream = f"{key_prefix}match-events"
    await bus.publish_many([(stream, payload) for payload in [*events[:4], b"{not json"]])
    await bus.ensure_group(stream, "webhooks")
    dispatcher = Dispatcher(pool, lambda ids: None)
    member = Consumer(
        redis,
        stream,
        "webhooks",
        "d",
        dispatcher.handle,
        batch_handler=dispatcher.handle_batch,
        block_ms=0,
    )
    try:
        assert await member.step() == 5
        rows = await deliveries(pool, subscriptions)
    finally:
        await unsubscribe(pool, subscriptions)

    assert in_creation_order(rows) == expected_deliveries(run)[:4]
    pending = await redis.xpending_range(stream, "webhooks", min="-", max="+", count=10)
    assert len(pending) == 1  # the undecodable entry, left for the retries
