"""Bots at a hosted table, against the real Postgres and Redis: seated and unseated while the
table is open, taking a private table's invitation, and a table of bots starting itself."""

from __future__ import annotations

import uuid

import pytest

from services.operator.keys import fresh_key
from shared.domain.hosting import Hosting
from shared.edge.apps import API_KEY_HEADER
from tests.integration.lobby_hosting.lobby_client import Lobby, auth

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


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
