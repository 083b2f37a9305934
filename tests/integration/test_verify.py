"""``playtable verify`` against a real Postgres: corrupt matches are reported, never fatal."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import msgspec
import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from services.operator.stored import open_archive
from services.operator.verify import verify
from services.rules.engine import RulesEngine
from services.rules.games import load_games
from shared.domain import rules_api as api
from shared.domain.messages import metadata
from shared.infra.db import open_pool
from shared.infra.eventstore import EventStore, NewEvent
from shared.infra.settings import Settings
from tests.conftest import create_database, drop_database, with_database

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ENGINE = RulesEngine(load_games())
MOVES = 6
PREFERRED = ["DiscardCard", "GiveRankClue", "GiveColourClue", "PlayCard"]


class Played(msgspec.Struct):
    events: list[api.EncodedEvent]
    set_up: int
    """The version the match was created at."""
    progress: api.Progress


def played_hanabi(seed: int) -> Played:
    """A two-seat Hanabi match, MOVES moves in (a discard whenever allowed, else a clue, so
    that it keeps running), decided by the rules engine in-process."""
    done = ENGINE.handle(api.SetUp(game="hanabi", options={}, seats=2, seed=seed))
    events, progress = list(done.events), done.progress
    for _ in range(MOVES):
        seat = progress.to_move[0]
        legal = ENGINE.handle(api.ListLegalActions(game="hanabi", state=progress.state, seat=seat))
        chosen = min(legal, key=lambda action: PREFERRED.index(type(action).__name__))
        action = msgspec.Raw(msgspec.json.encode(chosen))
        decided = ENGINE.handle(
            api.Decide(game="hanabi", state=progress.state, seat=seat, action=action)
        )
        events += decided.events
        progress = decided.progress
    return Played(events, len(done.events), progress)


@pytest_asyncio.fixture
async def own_database(postgres_server_url: str) -> AsyncIterator[str]:
    """A database of this test's alone, since verify checks every match it holds."""
    name = f"playtable_verify_{uuid.uuid4().hex[:12]}"
    create_database(postgres_server_url, name)
    try:
        yield with_database(postgres_server_url, name)
    finally:
        drop_database(postgres_server_url, name)


@pytest_asyncio.fixture
async def own_pool(own_database: str) -> AsyncIterator[AsyncConnectionPool]:
    pool = await open_pool(own_database, min_size=1, max_size=2)
    try:
        yield pool
    finally:
        await pool.close()


async def store(
    pool: AsyncConnectionPool,
    played: Played,
    *,
    events: list[NewEvent] | None = None,
    version: int | None = None,
    snapshots: dict[int, bytes] | None = None,
) -> str:
    """Store a match as the match service does (its row, events, snapshots at creation and at
    the end), or with the ``events``, row ``version`` or ``snapshots`` given instead."""
    match_id = uuid.uuid4().hex
    meta = metadata(correlation_id=match_id)
    if events is None:
        events = [NewEvent(event.type, bytes(event.data), meta) for event in played.events]
    if snapshots is None:
        snapshots = service_snapshots(played)
    progress = played.progress
    async with pool.connection() as conn, conn.transaction():
        await conn.execute(
            "insert into matches (match_id, game, seats, options, players, version, state,"
            " to_move, status, result) values (%s, 'hanabi', 2, '{}', '[\"ada\", \"bo\"]',"
            " %s, %s, %s, 'running', null)",
            (match_id, version or len(events), progress.state, progress.to_move),
        )
        await EventStore(pool).append(f"match-{match_id}", 0, events, conn=conn)
        for at, state in snapshots.items():
            await conn.execute(
                "insert into match_snapshots (match_id, version, state) values (%s, %s, %s)",
                (match_id, at, state),
            )
    return match_id


def service_snapshots(played: Played) -> dict[int, bytes]:
    """The snapshots the match service keeps of a match this short: at creation and now."""
    set_up = [event.data for event in played.events[: played.set_up]]
    created = ENGINE.handle(api.Fold(game="hanabi", events=set_up))
    return {played.set_up: created.state, len(played.events): played.progress.state}


async def verified(database_url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    exit_code = await verify(Settings(database_url=database_url))
    return exit_code, capsys.readouterr().out.splitlines()


async def test_every_corrupt_match_is_reported_and_the_others_still_checked(
    own_database: str, own_pool: AsyncConnectionPool, capsys: pytest.CaptureFixture[str]
) -> None:
    played = played_hanabi(seed=5)
    count = len(played.events)
    assert played.progress.result is None  # still running, as stored
    discarded = next(e for e in reversed(played.events) if e.type == "CardDiscarded")
    meta = metadata(correlation_id="forged")
    stored = [NewEvent(event.type, bytes(event.data), meta) for event in played.events]

    healthy = await store(own_pool, played)
    duplicated = await store(
        own_pool, played, events=[*stored, NewEvent(discarded.type, bytes(discarded.data), meta)]
    )
    miscounted = await store(own_pool, played, version=count + 1)
    undecodable = await store(own_pool, played, events=[*stored, NewEvent("Nonsense", b"{}", meta)])
    beyond = await store(own_pool, played, snapshots={**service_snapshots(played), count + 5: b"x"})

    exit_code, lines = await verified(own_database, capsys)

    assert exit_code == 1
    problems = lines[:-1]
    assert len(problems) == 4
    assert not any(line.startswith(healthy) for line in problems)
    (fold_failure,) = [line for line in problems if line.startswith(duplicated)]
    assert fold_failure.startswith(
        f"{duplicated}: fold fails at version {count + 1}: ValueError: list.remove(x)"
    )
    assert f"{miscounted}: version {count + 1}, but {count} events" in problems
    assert any(
        line.startswith(f"{undecodable}: event at version {count + 1} does not decode: ")
        for line in problems
    )
    assert f"{beyond}: snapshot at version {count + 5} is beyond the last event" in problems
    assert lines[-1] == "verified 5 matches: 1 consistent, 4 with differences"


async def test_a_clean_database_verifies(
    own_database: str, own_pool: AsyncConnectionPool, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await verified(own_database, capsys) == (
        0,
        ["verified 0 matches: 0 consistent, 0 with differences"],
    )
    await store(own_pool, played_hanabi(seed=6))

    assert await verified(own_database, capsys) == (
        0,
        ["verified 1 matches: 1 consistent, 0 with differences"],
    )


async def corrupt(pool: AsyncConnectionPool, statement: str, *params: object) -> None:
    """Damage one stored row in place, as a disk, a bad restore or a hand-made fix would."""
    async with pool.connection() as conn:
        changed = await conn.execute(statement, params)
        assert changed.rowcount == 1


async def corrupt_event(
    pool: AsyncConnectionPool, match_id: str, version: int, column: str, value: object
) -> None:
    statement = f"update events set {column} = %s where stream_id = %s and version = %s"
    await corrupt(pool, statement, value, f"match-{match_id}", version)


async def test_one_corrupt_row_stops_nothing_but_its_match(
    own_database: str, own_pool: AsyncConnectionPool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real corrupt rows in Postgres, one kind per match, between healthy matches: each is
    reported with its reason, every other match is still verified, and verify never raises."""
    played = played_hanabi(seed=7)
    count = len(played.events)
    healthy = [await store(own_pool, played)]
    wrong_shape = await store(own_pool, played)
    await corrupt_event(own_pool, wrong_shape, count, "data", b'{"seat": "one"}')
    unknown_type = await store(own_pool, played)
    await corrupt_event(own_pool, unknown_type, count, "type", "MeteorStruck")
    await corrupt_event(own_pool, unknown_type, count, "data", b'{"type": "MeteorStruck"}')
    not_json = await store(own_pool, played)
    await corrupt_event(own_pool, not_json, 2, "data", b"\xff\x00[")
    bad_metadata = await store(own_pool, played)
    await corrupt_event(own_pool, bad_metadata, 1, "metadata", b"[1, 2]")
    healthy.append(await store(own_pool, played))
    bad_snapshot = await store(own_pool, played)
    await corrupt(
        own_pool,
        "update match_snapshots set state = %s where match_id = %s and version = %s",
        b"\xc1not msgpack",
        bad_snapshot,
        played.set_up,
    )
    unknown_game = await store(own_pool, played)
    await corrupt(own_pool, "update matches set game = 'chess' where match_id = %s", unknown_game)
    bad_row = await store(own_pool, played)
    await corrupt(
        own_pool, "update matches set players = %s where match_id = %s", b"{not json", bad_row
    )
    healthy.append(await store(own_pool, played))

    exit_code, lines = await verified(own_database, capsys)

    assert exit_code == 1
    reasons = dict(line.split(": ", 1) for line in lines[:-1])
    assert len(reasons) == len(lines) - 1 == 7
    assert not reasons.keys() & set(healthy)
    assert reasons[wrong_shape].startswith(f"event at version {count} does not decode: ")
    assert reasons[unknown_type].startswith(f"event at version {count} does not decode: ")
    assert reasons[not_json].startswith("event at version 2 does not decode: ")
    assert reasons[bad_metadata].startswith("its events cannot be read: ")
    assert reasons[bad_snapshot] == f"snapshot at version {played.set_up} differs from the fold"
    assert reasons[unknown_game] == "unknown game 'chess'"
    assert reasons[bad_row].startswith("its matches row cannot be read: ")
    assert lines[-1] == "verified 10 matches: 3 consistent, 7 with differences"


async def test_a_match_that_moves_while_it_is_read_is_read_as_of_one_moment(
    own_database: str, own_pool: AsyncConnectionPool
) -> None:
    """Verify on a live database: a move committed between reading a match's row and reading
    its events is seen by neither, so the match reads as consistent, not as a version ahead."""
    played = played_hanabi(seed=8)
    count = len(played.events)
    match_id = await store(own_pool, played)
    async with open_archive(Settings(database_url=own_database)) as archive:
        (match,) = await archive.every_match()
        moved = played.events[-1]
        meta = metadata(correlation_id="moved-meanwhile")
        async with own_pool.connection() as conn, conn.transaction():
            await EventStore(own_pool).append(
                f"match-{match_id}",
                count,
                [NewEvent(moved.type, bytes(moved.data), meta)],
                conn=conn,
            )
            await conn.execute(
                "update matches set version = version + 1 where match_id = %s", (match_id,)
            )
        events = await archive.events(match_id)
    assert match.version == len(events) == count
