"""Hosted play in the lobby, against the real Postgres and Redis: tables created with bots and a
hosting policy, bots seated and unseated, a table of bots starting itself, and rematches of a
finished table (the lobby and a rules worker run in this process; no match service runs, so a
started table's ``CreateMatch`` stays in the commands table, where the tests read it, and a
finished match is a ``matches`` row written here)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import pytest
import pytest_asyncio
import redis.asyncio as redis_async
from litestar import Litestar
from psycopg_pool import AsyncConnectionPool

from services.lobby import lobby as lobby_module
from services.lobby.app import create_app
from services.operator.keys import fresh_key
from services.rules.worker import serve as serve_rules
from shared.domain.hosting import BOTS, Hosting
from shared.domain.messages import CreateMatch, decode_command
from shared.edge.apps import API_KEY_HEADER
from shared.edge.idempotency import remember
from shared.edge.tokens import hash_token
from shared.infra.db import open_pool
from shared.infra.eventstore import EventStore
from shared.infra.settings import Settings
from tests.conftest import SECRET_KEYS
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

HOSTING = {
    "clock": {"bank_s": 300, "increment_s": 5},
    "on_timeout": "bot",
    "on_leave": "bot",
    "bot": "hanabi-random",
}


def hosting(shown: Any) -> Hosting:
    """The hosting a body shows (whether or not it writes out the defaults)."""
    return msgspec.convert(shown, Hosting)


@dataclass
class Lobby:
    client: httpx.AsyncClient
    """Sends the app's key with every request."""
    pool: AsyncConnectionPool
    settings: Settings

    async def create(self, **body: Any) -> dict[str, Any]:
        created = await self.client.post("/tables", json=body)
        assert created.status_code == 201, created.text
        return created.json()

    async def join(self, table_id: str, name: str, **body: Any) -> dict[str, Any]:
        joined = await self.client.post(f"/tables/{table_id}/seats", json={"name": name, **body})
        assert joined.status_code == 201, joined.text
        return joined.json()

    async def table(self, table_id: str, token: str | None = None) -> dict[str, Any]:
        seen = await self.client.get(f"/tables/{table_id}", headers=auth(token) if token else {})
        assert seen.status_code == 200, seen.text
        return seen.json()

    async def start(self, table_id: str, token: str) -> dict[str, Any]:
        started = await self.client.post(f"/tables/{table_id}/start", headers=auth(token))
        # No match service runs: the start answers 202 once ``start_wait_s`` has passed.
        assert started.status_code in (201, 202), started.text
        return started.json()

    async def rematch(self, table_id: str, token: str, key: str | None = None) -> httpx.Response:
        headers = {**auth(token), **({"Idempotency-Key": key} if key else {})}
        return await self.client.post(f"/tables/{table_id}/rematch", headers=headers)

    async def fetch(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            result = await conn.execute(query, params)
            return await result.fetchall()

    async def events(self, table_id: str) -> list[tuple[str, dict[str, Any]]]:
        stored = await EventStore(self.pool).read_stream(f"table-{table_id}")
        return [(event.type, msgspec.json.decode(event.data)) for event in stored]

    async def create_match(self, match_id: str) -> CreateMatch:
        """The ``CreateMatch`` command the table's start recorded."""
        rows = await self.fetch("select payload from commands where subject = %s", match_id)
        assert len(rows) == 1
        envelope = decode_command(bytes(rows[0][0]))
        assert envelope.type == "CreateMatch"
        return msgspec.json.decode(envelope.body, type=CreateMatch)

    async def finish(self, match_id: str, status: str = "finished") -> None:
        """The match service's row of the match, as it reads once the match is over."""
        async with self.pool.connection() as conn:
            await conn.execute(
                "insert into matches (match_id, game, seats, options, players, version, state,"
                " to_move, status) values (%s, 'hanabi', 2, '{}', '[]', 1, '', '{}', %s)"
                " on conflict (match_id) do update set status = excluded.status",
                (match_id, status),
            )


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest_asyncio.fixture
async def lobby(
    database_url: str, redis_url: str, key_prefix: str, redis: redis_async.Redis
) -> AsyncIterator[Lobby]:
    """The lobby app and a rules worker, their streams under the test's Redis prefix, and an
    app of the test's own (its key in every request)."""
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        stream_prefix=key_prefix.rstrip(":"),
        instance_id="lobby-hosting-test",
        start_wait_s=0.2,
        rate_limits=False,
        secret_keys=SECRET_KEYS,
    )
    stop = asyncio.Event()
    rules_settings = msgspec.structs.replace(settings, instance_id="rules-hosting-test")
    rules = asyncio.create_task(serve_rules(rules_settings, stop))
    key = await fresh_key(settings, f"hosting-{uuid.uuid4().hex[:8]}", "tests")
    pool = await open_pool(database_url, min_size=1, max_size=4)
    app = create_app(settings)
    up, done = asyncio.Event(), asyncio.Event()
    # The app runs in this loop (not a test client's thread), so requests sent at once run at
    # once; its lifespan is one task's, entered and left there.
    running = asyncio.create_task(_lifespan(app, up, done))
    transport = httpx.ASGITransport(app=app)
    try:
        await asyncio.wait_for(up.wait(), 30)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://lobby", headers={API_KEY_HEADER: key}
        ) as client:
            yield Lobby(client=client, pool=pool, settings=settings)
    finally:
        done.set()
        await asyncio.wait_for(running, 30)
        await pool.close()
        stop.set()
        await asyncio.wait_for(rules, 10)


async def _lifespan(app: Litestar, up: asyncio.Event, done: asyncio.Event) -> None:
    async with app.lifespan():
        up.set()
        await done.wait()


# --- the catalogue ------------------------------------------------------------------------------


async def test_the_catalogue_lists_each_games_bots(lobby: Lobby) -> None:
    games = {game["name"]: game for game in (await lobby.client.get("/games")).json()}
    for name, bots in BOTS.items():
        assert games[name]["bots"] == [msgspec.to_builtins(bot) for bot in bots]
    one = (await lobby.client.get("/games/dingo")).json()
    assert [bot["name"] for bot in one["bots"]] == ["dingo-random", "dingo-heuristic"]


# --- creation -----------------------------------------------------------------------------------


async def test_a_table_is_created_with_its_bots_and_hosting(lobby: Lobby) -> None:
    bots = [{"bot": "hanabi-heuristic", "seat": 2}, {"bot": "hanabi-random"}]
    created = await lobby.create(game="hanabi", seats=3, hosting=HOSTING, bots=bots)
    table_id = created["table_id"]
    assert hosting(created["hosting"]) == hosting(HOSTING)
    assert created["rematch_of"] is None and created["rematch_table_id"] is None
    assert created["seats"] == [
        {"seat": 0, "player": "hanabi-random", "bot": "hanabi-random"},
        {"seat": 1, "player": None, "bot": None},
        {"seat": 2, "player": "hanabi-heuristic", "bot": "hanabi-heuristic"},
    ]
    assert created["status"] == "open" and created["version"] == 3
    created.pop("invitation_token")
    assert await lobby.table(table_id) == created

    events = await lobby.events(table_id)
    assert [kind for kind, _ in events] == ["TableCreated", "SeatTaken", "SeatTaken"]
    assert hosting(events[0][1]["hosting"]) == hosting(HOSTING)
    assert events[0][1]["rematch_of"] is None
    assert events[1][1] == {
        "type": "SeatTaken",
        "seat": 0,
        "player": "hanabi-random",
        "bot": "hanabi-random",
    }
    seats = await lobby.fetch(
        "select seat, player_name, bot, token_hash from lobby_seats where table_id = %s"
        " order by seat",
        table_id,
    )
    assert [(seat, name, bot) for seat, name, bot, _ in seats] == [
        (0, "hanabi-random", "hanabi-random"),
        (2, "hanabi-heuristic", "hanabi-heuristic"),
    ]
    assert len({hashed for *_, hashed in seats}) == 2 and all(hashed for *_, hashed in seats)
    stored = await lobby.fetch("select hosting from lobby_tables where table_id = %s", table_id)
    assert msgspec.json.decode(stored[0][0], type=Hosting) == hosting(HOSTING)

    ada = await lobby.join(table_id, "ada")
    assert ada["seat"] == 1 and ada["table"]["seats"][1] == {
        "seat": 1,
        "player": "ada",
        "bot": None,
    }
    started = await lobby.start(table_id, ada["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.bots == {0: "hanabi-random", 2: "hanabi-heuristic"}
    assert create.hosting == hosting(HOSTING)
    assert create.players == ["hanabi-random", "ada", "hanabi-heuristic"]
    assert create.seat_token_hashes == [seats[0][3], hash_token(ada["token"]), seats[1][3]]


async def test_a_table_without_hosting_or_bots_is_as_before(lobby: Lobby) -> None:
    created = await lobby.create(game="dingo", seats=2)
    assert hosting(created["hosting"]) == Hosting() and created["version"] == 1
    events = await lobby.events(created["table_id"])
    assert events == [("TableCreated", events[0][1])]
    assert hosting(events[0][1]["hosting"]) == Hosting()
    ada = await lobby.join(created["table_id"], "ada")
    bob = await lobby.join(created["table_id"], "bob")
    assert "bot" not in (await lobby.events(created["table_id"]))[-1][1]  # omitted when None
    started = await lobby.start(created["table_id"], bob["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.bots == {} and create.hosting == Hosting()
    assert create.seat_token_hashes == [hash_token(ada["token"]), hash_token(bob["token"])]


BAD_CREATIONS = [
    ({"bots": [{"bot": "chess-engine"}]}, 400, "invalid-request"),  # no game's bot
    ({"bots": [{"bot": "dingo-random"}]}, 422, "unknown-bot"),  # another game's
    ({"hosting": {"bot": "dingo-heuristic"}}, 422, "unknown-bot"),
    ({"bots": [{"bot": "hanabi-random", "seat": 3}]}, 422, "no-such-seat"),
    (
        {"bots": [{"bot": "hanabi-random", "seat": 1}, {"bot": "hanabi-heuristic", "seat": 1}]},
        422,
        "bad-bots",
    ),
    ({"bots": [{"bot": "hanabi-random"}] * 4}, 422, "bad-bots"),
    ({"hosting": {"clock": {}}}, 422, "bad-hosting"),
    ({"hosting": {"clock": {"per_move_s": 30, "bank_s": 300}}}, 422, "bad-hosting"),
    ({"hosting": {"clock": {"per_move_s": 30, "increment_s": 2}}}, 422, "bad-hosting"),
    ({"hosting": {"on_timeout": "nap"}}, 400, "invalid-request"),
    ({"hosting": {"on_timeout": "pass"}}, 422, "bad-hosting"),  # Hanabi has no pass
    ({"hosting": {"clock": {"per_move_s": 0}}}, 400, "invalid-request"),
    ({"hosting": {"referee": "me"}}, 400, "invalid-request"),
    ({"bots": [{"bot": "hanabi-random", "seat": -1}]}, 400, "invalid-request"),
]


async def test_bad_bots_or_hosting_create_nothing(lobby: Lobby) -> None:
    """(One test, not one per case: each lobby takes seconds to stop.)"""
    count = "select (select count(*) from lobby_tables), (select count(*) from lobby_seats)"
    before = await lobby.fetch(count)
    for body, status, code in BAD_CREATIONS:
        refused = await lobby.client.post(
            "/tables",
            json={"game": "hanabi", "seats": 3, **body},
            headers={"Idempotency-Key": uuid.uuid4().hex},
        )
        assert refused.status_code == status, (body, refused.text)
        assert refused.json()["type"].endswith(f"/{code}"), (body, refused.text)
    assert await lobby.fetch(count) == before


async def test_good_hosting_policies_are_taken(lobby: Lobby) -> None:
    for asked in (
        {"clock": {"per_move_s": 20}, "on_timeout": "pass"},
        {"on_timeout": "bot", "on_leave": "bot"},
        {"clock": {"bank_s": 60}, "on_timeout": "forfeit", "on_leave": "abandon"},
    ):
        created = await lobby.create(game="breaking_news", seats=3, hosting=asked)
        assert hosting(created["hosting"]) == hosting(asked)
        created.pop("invitation_token")
        assert await lobby.table(created["table_id"]) == created


# --- seating and unseating bots -----------------------------------------------------------------


async def test_bots_are_seated_and_unseated_while_the_table_is_open(lobby: Lobby) -> None:
    table_id = (await lobby.create(game="dingo", seats=3))["table_id"]
    bots = f"/tables/{table_id}/bots"

    first = await lobby.client.post(bots, json={"bot": "dingo-random"})
    assert first.status_code == 201, first.text
    assert first.json()["seats"][0] == {"seat": 0, "player": "dingo-random", "bot": "dingo-random"}
    assert first.json()["version"] == 2

    keyed = {"Idempotency-Key": "seat-heuristic"}
    second = await lobby.client.post(bots, json={"bot": "dingo-heuristic"}, headers=keyed)
    again = await lobby.client.post(bots, json={"bot": "dingo-heuristic"}, headers=keyed)
    assert second.status_code == again.status_code == 201
    assert second.json() == again.json()  # one seat taken
    assert second.json()["seats"][1]["bot"] == "dingo-heuristic"

    nowhere = f"/tables/{'0' * 32}/bots"
    refusals = [
        ("POST", bots, {"bot": "dingo-random", "seat": 0}, 409, "seat-taken"),
        ("POST", bots, {"bot": "dingo-random", "seat": 7}, 422, "no-such-seat"),
        ("POST", bots, {"bot": "hanabi-random"}, 422, "unknown-bot"),
        ("POST", bots, {"bot": "dingo-random", "x": 1}, 400, "invalid-request"),
        ("POST", nowhere, {"bot": "dingo-random"}, 404, "table-not-found"),
        ("DELETE", f"{bots}/2", None, 409, "not-a-bot"),  # an empty seat
        ("DELETE", f"{bots}/3", None, 422, "no-such-seat"),
        ("DELETE", f"{bots}/12", None, 400, "invalid-request"),  # no table has it
    ]
    for method, url, body, status, code in refusals:
        answer = await lobby.client.request(method, url, json=body)
        assert answer.status_code == status, (method, url, body, answer.text)
        assert answer.json()["type"].endswith(f"/{code}")
    assert (await lobby.table(table_id))["version"] == 3  # nothing changed

    ada = await lobby.join(table_id, "ada")
    assert ada["seat"] == 2
    person = await lobby.client.delete(f"{bots}/2")
    assert person.status_code == 409 and person.json()["type"].endswith("/not-a-bot")

    freed = await lobby.client.delete(f"{bots}/0")
    assert freed.status_code == 200, freed.text
    assert freed.json()["seats"][0] == {"seat": 0, "player": None, "bot": None}
    assert freed.json() == await lobby.table(table_id)
    kinds = [(kind, data.get("bot")) for kind, data in await lobby.events(table_id)]
    assert kinds[1:] == [
        ("SeatTaken", "dingo-random"),
        ("SeatTaken", "dingo-heuristic"),
        ("SeatTaken", None),
        ("SeatLeft", None),
    ]
    assert (await lobby.events(table_id))[-1][1] == {
        "type": "SeatLeft",
        "seat": 0,
        "player": "dingo-random",
    }
    seated = "select seat from lobby_seats where table_id = %s order by seat"
    assert await lobby.fetch(seated, table_id) == [(1,), (2,)]

    # A person and bots fill the table: it waits for the person to start it.
    full = await lobby.client.post(bots, json={"bot": "dingo-random"})
    assert full.status_code == 201 and full.json()["status"] == "open"
    more = await lobby.client.post(bots, json={"bot": "dingo-random"})
    assert more.status_code == 409 and more.json()["type"].endswith("/table-full")
    started = await lobby.start(table_id, ada["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.bots == {0: "dingo-random", 1: "dingo-heuristic"}
    late = await lobby.client.delete(f"{bots}/0")
    assert late.status_code == 409 and late.json()["type"].endswith("/table-started")


async def test_a_private_tables_bots_take_its_invitation(lobby: Lobby) -> None:
    created = await lobby.create(game="hanabi", seats=2, visibility="private")
    bots = f"/tables/{created['table_id']}/bots"
    stranger = await lobby.client.post(bots, json={"bot": "hanabi-random"})
    assert stranger.status_code == 403 and stranger.json()["type"].endswith("/private-table")
    invited = await lobby.client.post(
        bots, json={"bot": "hanabi-random"}, headers=auth(created["invitation_token"])
    )
    assert invited.status_code == 201, invited.text
    assert invited.json()["seats"][0]["bot"] == "hanabi-random"


async def test_another_apps_table_has_no_bots_for_it(lobby: Lobby) -> None:
    created = await lobby.create(game="hanabi", seats=2, bots=[{"bot": "hanabi-random"}])
    table_id = created["table_id"]
    other = await fresh_key(lobby.settings, f"other-{uuid.uuid4().hex[:8]}", "tests")
    headers = {API_KEY_HEADER: other}
    seated = await lobby.client.post(
        f"/tables/{table_id}/bots", json={"bot": "hanabi-random"}, headers=headers
    )
    freed = await lobby.client.delete(f"/tables/{table_id}/bots/0", headers=headers)
    for answer in (seated, freed):
        assert answer.status_code == 404 and answer.json()["type"].endswith("/table-not-found")
    assert (await lobby.table(table_id))["version"] == 2


# --- tables of bots only ------------------------------------------------------------------------


async def test_a_table_of_bots_starts_as_it_is_created(lobby: Lobby) -> None:
    bots = [{"bot": "dingo-heuristic"}, {"bot": "dingo-random"}, {"bot": "dingo-random"}]
    created = await lobby.create(game="dingo", seats=3, bots=bots, hosting={"on_leave": "bot"})
    assert created["status"] == "started" and created["match_id"]
    assert created["version"] == 5  # created, three seats taken, started
    created.pop("invitation_token")
    assert await lobby.table(created["table_id"]) == created
    events = await lobby.events(created["table_id"])
    assert [kind for kind, _ in events][-1] == "TableStarted"
    assert events[-1][1]["match_id"] == created["match_id"]
    create = await lobby.create_match(created["match_id"])
    assert create.bots == {0: "dingo-heuristic", 1: "dingo-random", 2: "dingo-random"}
    assert create.players == ["dingo-heuristic", "dingo-random", "dingo-random"]
    assert create.hosting == Hosting(on_leave="bot")


async def test_the_bot_that_fills_a_table_of_bots_starts_it(lobby: Lobby) -> None:
    created = await lobby.create(game="hanabi", seats=2, bots=[{"bot": "hanabi-random", "seat": 1}])
    assert created["status"] == "open"
    filled = await lobby.client.post(
        f"/tables/{created['table_id']}/bots", json={"bot": "hanabi-heuristic"}
    )
    assert filled.status_code == 201, filled.text
    table = filled.json()
    assert table["status"] == "started" and table["match_id"] and table["version"] == 4
    assert table == await lobby.table(created["table_id"])
    create = await lobby.create_match(table["match_id"])
    assert create.bots == {0: "hanabi-heuristic", 1: "hanabi-random"}


# --- rematches ----------------------------------------------------------------------------------


async def played(lobby: Lobby, **body: Any) -> tuple[dict[str, Any], list[str]]:
    """A two-seat hanabi table (``body`` added) whose players ada and bob started it; return
    the started table and their tokens."""
    table_id, tokens = await seated(lobby, **body)
    return await lobby.start(table_id, tokens[0]), tokens


async def seated(lobby: Lobby, **body: Any) -> tuple[str, list[str]]:
    """A full two-seat hanabi table (``body`` added), ada and bob seated (unless bots are):
    its id and their tokens."""
    created = await lobby.create(game="hanabi", seats=2, **body)
    table_id = created["table_id"]
    invitation = created["invitation_token"]
    people = ["ada", "bob"][: 2 - len(body.get("bots", []))]
    tokens = []
    for name in people:
        joined = await lobby.client.post(
            f"/tables/{table_id}/seats",
            json={"name": name},
            headers=auth(invitation) if invitation else {},
        )
        assert joined.status_code == 201, joined.text
        tokens.append(joined.json()["token"])
    return table_id, tokens


async def test_a_start_retried_while_the_first_is_in_flight_gets_the_first_answer(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that gave up waiting for its start (Postgres paused) sends it again under the
    same Idempotency-Key before the first has committed: the retry waits for the first and
    gets its answer, replayed, not 409 table-started (the first's change, without its
    record yet)."""
    table_id, (ada, _bob) = await seated(lobby)
    recorded, commit = asyncio.Event(), asyncio.Event()

    async def remember_then_wait(*args: Any) -> None:
        await remember(*args)
        recorded.set()
        await commit.wait()  # the first's transaction stays open, its answer stored

    monkeypatch.setattr(lobby_module, "remember", remember_then_wait)
    headers = {**auth(ada), "Idempotency-Key": "start-once"}
    path = f"/tables/{table_id}/start"
    first = asyncio.create_task(lobby.client.post(path, headers=headers))
    await asyncio.wait_for(recorded.wait(), 30)
    retry = asyncio.create_task(lobby.client.post(path, headers=headers))

    async def retry_waits() -> bool:
        blocked = await lobby.fetch(
            "select 1 from pg_stat_activity where datname = current_database()"
            " and wait_event_type = 'Lock' and state = 'active'"
        )
        return bool(blocked)

    await await_until(retry_waits, what="the retry waiting for the first's transaction")
    commit.set()
    answers = [await first, await retry]
    assert [answer.status_code in (201, 202) for answer in answers] == [True, True], [
        answer.text for answer in answers
    ]
    assert answers[0].json()["match_id"] == answers[1].json()["match_id"]
    assert "Idempotent-Replayed" not in answers[0].headers
    assert answers[1].headers["Idempotent-Replayed"] == "true"


async def test_players_take_their_seats_again_in_the_rematch(lobby: Lobby) -> None:
    table, (ada, bob) = await played(lobby, hosting=HOSTING, name="friday")
    old = table["table_id"]

    early = await lobby.rematch(old, ada)
    assert early.status_code == 409 and early.json()["type"].endswith("/match-running")
    await lobby.finish(table["match_id"], "running")
    running = await lobby.rematch(old, bob)
    assert running.status_code == 409 and running.json()["type"].endswith("/match-running")
    stranger = await lobby.rematch(old, "not-a-token")
    assert stranger.status_code == 403 and stranger.json()["type"].endswith("/not-seated")
    assert (await lobby.table(old))["rematch_table_id"] is None

    await lobby.finish(table["match_id"])
    first = await lobby.rematch(old, bob, key="bob-rematch")
    assert first.status_code == 201, first.text
    joined = first.json()
    rematch = joined["table"]
    new = rematch["table_id"]
    assert joined["seat"] == 1 and joined["token"] not in (ada, bob)
    assert rematch["rematch_of"] == old and rematch["rematch_table_id"] is None
    assert rematch["name"] == "friday" and rematch["game"] == "hanabi"
    assert hosting(rematch["hosting"]) == hosting(HOSTING) and rematch["status"] == "open"
    assert rematch["seats"] == [
        {"seat": 0, "player": None, "bot": None},
        {"seat": 1, "player": "bob", "bot": None},
    ]
    assert rematch == await lobby.table(new)
    assert (await lobby.table(old))["rematch_table_id"] == new

    repeated = await lobby.rematch(old, bob, key="bob-rematch")
    assert repeated.status_code == 201 and repeated.json() == joined
    twice = await lobby.rematch(old, bob)
    assert twice.status_code == 409 and twice.json()["type"].endswith("/seat-taken")

    second = await lobby.rematch(old, ada)
    assert second.status_code == 201, second.text
    assert second.json()["seat"] == 0 and second.json()["table"]["table_id"] == new
    assert [seat["player"] for seat in second.json()["table"]["seats"]] == ["ada", "bob"]

    old_events = await lobby.events(old)
    assert old_events[-1] == ("RematchOffered", {"type": "RematchOffered", "rematch_table_id": new})
    new_events = await lobby.events(new)
    assert [kind for kind, _ in new_events] == ["TableCreated", "SeatTaken", "SeatTaken"]
    assert new_events[0][1]["rematch_of"] == old
    assert hosting(new_events[0][1]["hosting"]) == hosting(HOSTING)

    stored = await lobby.fetch(
        "select options, seeded from lobby_tables where table_id = any(%s) order by rematch_of",
        [old, new],
    )
    (new_options, new_seeded), (old_options, _) = stored  # nulls (the old table's) last
    assert bytes(new_options) == bytes(old_options) and new_seeded is False

    started = await lobby.start(new, second.json()["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.players == ["ada", "bob"] and create.hosting == hosting(HOSTING)
    assert create.seat_token_hashes == [
        hash_token(second.json()["token"]),
        hash_token(joined["token"]),
    ]
    gone = await lobby.rematch(old, ada)
    assert gone.status_code == 409 and gone.json()["type"].endswith("/table-started")


async def test_a_rematch_closed_unplayed_gives_way_to_a_new_one(lobby: Lobby) -> None:
    table, (ada, bob) = await played(lobby)
    old = table["table_id"]
    await lobby.finish(table["match_id"])
    first = await lobby.rematch(old, ada)
    assert first.status_code == 201, first.text
    closed_id = first.json()["table"]["table_id"]
    closed = await lobby.client.delete(f"/tables/{closed_id}")
    assert closed.status_code == 200 and closed.json()["status"] == "closed", closed.text

    again = await lobby.rematch(old, bob)
    assert again.status_code == 201, again.text
    reopened = again.json()["table"]
    assert reopened["table_id"] != closed_id and reopened["status"] == "open"
    assert reopened["rematch_of"] == old
    assert (await lobby.table(old))["rematch_table_id"] == reopened["table_id"]
    back = await lobby.rematch(old, ada)
    assert back.status_code == 201 and back.json()["table"]["table_id"] == reopened["table_id"]
    offers = [data for kind, data in await lobby.events(old) if kind == "RematchOffered"]
    assert [offer["rematch_table_id"] for offer in offers] == [closed_id, reopened["table_id"]]


async def test_players_asking_at_once_open_one_rematch(lobby: Lobby) -> None:
    for _ in range(3):
        table, (ada, bob) = await played(lobby)
        await lobby.finish(table["match_id"])
        answers = await asyncio.gather(
            lobby.rematch(table["table_id"], ada), lobby.rematch(table["table_id"], bob)
        )
        assert [answer.status_code for answer in answers] == [201, 201], answers[0].text
        new = {answer.json()["table"]["table_id"] for answer in answers}
        assert len(new) == 1
        rematches = await lobby.fetch(
            "select table_id from lobby_tables where rematch_of = %s", table["table_id"]
        )
        assert [row[0] for row in rematches] == list(new)
        offered = [kind for kind, _ in await lobby.events(table["table_id"])]
        assert offered.count("RematchOffered") == 1
        assert sorted(answer.json()["seat"] for answer in answers) == [0, 1]
        seats = (await lobby.table(new.pop()))["seats"]
        assert [seat["player"] for seat in seats] == ["ada", "bob"]


async def test_the_rematch_keeps_the_bots_and_the_privacy(lobby: Lobby) -> None:
    bots = [{"bot": "hanabi-heuristic", "seat": 1}]
    table, (ada,) = await played(lobby, bots=bots, visibility="private")
    await lobby.finish(table["match_id"])
    joined = await lobby.rematch(table["table_id"], ada)
    assert joined.status_code == 201, joined.text
    rematch = joined.json()["table"]
    assert rematch["visibility"] == "private"
    assert rematch["seats"] == [
        {"seat": 0, "player": "ada", "bot": None},
        {"seat": 1, "player": "hanabi-heuristic", "bot": "hanabi-heuristic"},
    ]
    assert rematch == await lobby.table(rematch["table_id"], joined.json()["token"])
    hidden = await lobby.client.get(f"/tables/{rematch['table_id']}")
    assert hidden.status_code == 403
    started = await lobby.start(rematch["table_id"], joined.json()["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.bots == {1: "hanabi-heuristic"} and create.private


async def test_a_player_seated_again_in_the_match_asks_with_the_matchs_token(
    lobby: Lobby,
) -> None:
    """A player the match gave a new token (``PlayerReseated``) asks with it: the lobby finds
    their seat in the match's seats."""
    table, (ada, _bob) = await played(lobby)
    await lobby.finish(table["match_id"])
    reseated = "a-token-the-match-gave-bob"
    async with lobby.pool.connection() as conn:
        await conn.execute(
            "insert into match_seats (match_id, seat, token_hash) values (%s, 0, %s), (%s, 1, %s)",
            (table["match_id"], hash_token(ada), table["match_id"], hash_token(reseated)),
        )
    joined = await lobby.rematch(table["table_id"], reseated)
    assert joined.status_code == 201, joined.text
    assert joined.json()["seat"] == 1
    assert joined.json()["table"]["seats"][1]["player"] == "bob"
