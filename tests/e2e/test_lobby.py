"""The lobby over HTTP: catalogue, seats, leaving, starting, paging, secret options."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial

import httpx
import pytest

from services.rules.games.hanabi.options import standard_deck
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, started_match

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


def test_catalogue_lists_every_game_with_options(stack: Stack) -> None:
    games = {game["name"]: game for game in stack.lobby.get("/games").json()}
    assert {"hanabi", "carcassonne", "dingo", "breaking_news"} <= set(games)
    for game in games.values():
        assert game["min_players"] <= game["max_players"]
        for option in game["options"]:
            assert {"name", "type", "default", "description"} <= set(option)
    assert stack.lobby.get("/games/hanabi").json()["title"] == "Hanabi"
    assert stack.lobby.get("/games/chess").status_code == 404


def test_seats_leave_and_start_rules(stack: Stack) -> None:
    table = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 3}).json()
    url = f"/tables/{table['table_id']}"
    ada = stack.lobby.post(f"{url}/seats", json={"name": "ada", "seat": 2}).json()
    assert ada["seat"] == 2
    taken = stack.lobby.post(f"{url}/seats", json={"name": "bob", "seat": 2})
    assert taken.status_code == 409 and taken.json()["type"].endswith("/seat-taken")
    bob = stack.lobby.post(f"{url}/seats", json={"name": "bob"}).json()
    assert bob["seat"] == 0

    early = stack.lobby.post(f"{url}/start", headers=auth(bob["token"]))
    assert early.status_code == 409 and early.json()["type"].endswith("/table-not-full")
    wrong = stack.lobby.delete(f"{url}/seats/0", headers=auth(ada["token"]))
    assert wrong.status_code == 403
    left = stack.lobby.delete(f"{url}/seats/0", headers=auth(bob["token"]))
    assert left.status_code == 200 and left.json()["seats"][0]["player"] is None

    cleo = stack.lobby.post(
        f"{url}/seats", json={"name": "cleo"}, headers={"Idempotency-Key": "c1"}
    )
    again = stack.lobby.post(
        f"{url}/seats", json={"name": "cleo"}, headers={"Idempotency-Key": "c1"}
    )
    assert cleo.json() == again.json()  # one seat taken, the same token returned
    dan = stack.lobby.post(f"{url}/seats", json={"name": "dan"}).json()
    full = stack.lobby.post(f"{url}/seats", json={"name": "eve"})
    assert full.status_code == 409 and full.json()["type"].endswith("/table-full")
    assert stack.lobby.post(f"{url}/start", headers=auth("nobody")).status_code == 403

    started = stack.lobby.post(f"{url}/start", headers=auth(dan["token"]))
    info = started.json()
    assert info["status"] == "started" and info["match_id"]
    match = started_match(stack, started)  # exists the moment the start answers
    assert match["players"] == ["cleo", "dan", "ada"]
    assert stack.lobby.post(f"{url}/seats", json={"name": "late"}).status_code == 409


def test_listing_pages_with_a_cursor(stack: Stack) -> None:
    created = [
        stack.lobby.post("/tables", json={"game": "dingo", "seats": 2, "name": f"t{i}"}).json()
        for i in range(5)
    ]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"game": "dingo", "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = stack.lobby.get("/tables", params=params).json()
        seen += [item["table_id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [t["table_id"] for t in created] == [
        t for t in seen if t in {c["table_id"] for c in created}
    ]
    assert len(seen) == len(set(seen))
    assert stack.lobby.get("/tables", params={"cursor": "garbage"}).status_code == 400


def test_secret_options_never_show(stack: Stack) -> None:
    deck = list(reversed(standard_deck(5, False)))
    table = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2, "options": {"deck": deck}, "seed": 3}
    ).json()
    assert table["options"]["deck"] is None and table["seeded"] is True
    listed = stack.lobby.get(f"/tables/{table['table_id']}").json()
    assert listed["options"]["deck"] is None
    assert "seed" not in listed


def test_a_stacked_deck_shows_as_set_though_not_its_order(stack: Stack) -> None:
    """Joiners see that the creator chose the deck order (its value stays hidden)."""
    deck = list(reversed(standard_deck(5, False)))
    stacked = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2, "options": {"deck": deck}}
    ).json()
    shuffled = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()
    for table, expected in ((stacked, ["deck"]), (shuffled, [])):
        seen = stack.lobby.get(f"/tables/{table['table_id']}").json()
        assert seen["secret_options_set"] == expected == table["secret_options_set"]
        assert seen["options"]["deck"] is None
        listed = stack.lobby.get("/tables", params={"game": "hanabi", "limit": 200}).json()
        assert all("secret_options_set" in item for item in listed["items"])


def test_each_change_answers_the_table_as_it_then_reads(stack: Stack) -> None:
    """Creating, joining, leaving and starting answer the table built from what they wrote
    (not read back): it is exactly what GET /tables/{id} shows right after."""
    deck = list(reversed(standard_deck(5, False)))
    body = {"game": "hanabi", "seats": 2, "options": {"deck": deck}, "visibility": "private"}
    created = stack.lobby.post("/tables", json=body).json()
    invitation = created.pop("invitation_token")
    url = f"/tables/{created['table_id']}"

    def read() -> dict[str, object]:
        return stack.lobby.get(url, headers=auth(invitation)).json()

    assert created == read() and created["version"] == 1
    ada = stack.lobby.post(f"{url}/seats", json={"name": "ada"}, headers=auth(invitation))
    assert ada.json()["table"] == read() and ada.json()["table"]["version"] == 2
    bob = stack.lobby.post(f"{url}/seats", json={"name": "bob"}, headers=auth(invitation)).json()
    assert bob["table"] == read()
    left = stack.lobby.delete(f"{url}/seats/{bob['seat']}", headers=auth(bob["token"]))
    assert left.json() == read() and left.json()["version"] == 4
    cleo = stack.lobby.post(f"{url}/seats", json={"name": "cleo"}, headers=auth(invitation))
    assert cleo.json()["table"] == read()
    started = stack.lobby.post(f"{url}/start", headers=auth(ada.json()["token"]))
    assert started.status_code == 201 and started.json() == read()
    assert started.json()["status"] == "started" and started.json()["version"] == 6


def join_as(stack: Stack, url: str, name: str) -> httpx.Response:
    return stack.lobby.post(url, json={"name": name})


def test_concurrent_joins_fill_each_seat_once(stack: Stack) -> None:
    """Joins racing for one table wait for each other's lock: each sees the seats taken before
    it (read with the row in one statement, read again when the lock was waited for)."""
    for _ in range(3):
        table = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 3}).json()
        join = partial(join_as, stack, f"/tables/{table['table_id']}/seats")
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(join, [f"p{n}" for n in range(8)]))
        joined = [answer.json() for answer in answers if answer.status_code == 201]
        refused = [answer.json()["type"] for answer in answers if answer.status_code != 201]
        assert sorted(j["seat"] for j in joined) == [0, 1, 2]
        assert len(refused) == 5 and all(kind.endswith("/table-full") for kind in refused)
        final = stack.lobby.get(f"/tables/{table['table_id']}").json()
        assert final["version"] == 4 and all(seat["player"] for seat in final["seats"])
        for answer in joined:  # each answer shows the seats taken up to its own
            shown = answer["table"]
            taken = sum(seat["player"] is not None for seat in shown["seats"])
            assert taken == shown["version"] - 1
