"""The lobby over HTTP: catalogue, seats, leaving, starting, paging, secret options."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import httpx
import pytest

from services.rules.games.hanabi.options import standard_deck
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table, started_match

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


def test_the_catalogue_gives_titles_requirements_and_policies(stack: Stack) -> None:
    games = {game["name"]: game for game in stack.lobby.get("/games").json()}
    for game in games.values():
        assert all(option["title"] != option["name"] for option in game["options"])
        assert [policy["name"] for policy in game["leave_policies"]] == ["abandon", "bot"]
    options = {option["name"]: option for option in games["carcassonne"]["options"]}
    assert options["messengers_edition"]["requires"] == {"messengers": True}
    assert "requires" not in options["messengers"]
    timeouts = {game: [p["name"] for p in games[game]["timeout_policies"]] for game in games}
    assert "pass" in timeouts["breaking_news"] and "pass" not in timeouts["hanabi"]


def _refused_creating_nothing(stack: Stack, body: dict[str, Any], code: str) -> str:
    """Create a table the lobby must refuse: its problem's detail, once no such table is
    listed (the body's name is unique)."""
    refused = stack.lobby.post("/tables", json=body)
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["type"].endswith(f"/{code}"), refused.text
    listed = stack.lobby.get("/tables", params={"game": body["game"], "limit": 200}).json()
    assert body["name"] not in {table["name"] for table in listed["items"]}
    return str(refused.json()["detail"])


def test_a_dependent_option_without_its_requirement_creates_nothing(stack: Stack) -> None:
    name = f"edition-{uuid.uuid4().hex[:8]}"
    body = {"game": "carcassonne", "seats": 2, "name": name}
    detail = _refused_creating_nothing(
        stack, {**body, "options": {"messengers_edition": "C2"}}, "bad-option"
    )
    assert "'messengers_edition'" in detail and "'messengers' (The Messengers)" in detail
    detail = _refused_creating_nothing(
        stack, {**body, "options": {"messengers": True, "zmg_alone_rule": True}}, "bad-option"
    )
    assert "'messengers_edition' (Messengers edition) set to \"C2\"" in detail
    with_it = {"messengers": True, "messengers_edition": "C2", "zmg_alone_rule": True}
    created = stack.lobby.post("/tables", json={**body, "options": with_it})
    assert created.status_code == 201, created.text
    assert created.json()["options"]["zmg_alone_rule"] is True


def test_a_sixth_seat_without_a_sixth_colour_creates_nothing(stack: Stack) -> None:
    """The catalogue says which options a sixth Carcassonne seat needs, and the lobby's refusal
    names each of them; any one of them is enough."""
    games = {game["name"]: game for game in stack.lobby.get("/games").json()}
    (sixth,) = games["carcassonne"]["players_requirements"]
    assert sixth == {
        "players": 6,
        "requires_any": [{"messengers": True}, {"inns_cathedrals": True}],
    }
    assert all(games[name]["players_requirements"] == [] for name in games if name != "carcassonne")
    body = {"game": "carcassonne", "seats": 6, "name": f"six-{uuid.uuid4().hex[:8]}"}
    detail = _refused_creating_nothing(
        stack, {**body, "options": {"traders_builders": True}}, "bad-seat-count"
    )
    assert "6 players need" in detail
    assert "'messengers' (The Messengers) set to true" in detail
    assert "'inns_cathedrals' (Inns & Cathedrals) set to true" in detail
    for settings in sixth["requires_any"]:
        created = stack.lobby.post("/tables", json={**body, "options": settings})
        assert created.status_code == 201, created.text
        assert len(created.json()["seats"]) == 6


def test_pass_on_timeout_is_refused_for_a_game_without_a_pass(stack: Stack) -> None:
    hosting = {"clock": {"per_move_s": 30}, "on_timeout": "pass"}
    for game in ("hanabi", "carcassonne", "dingo"):
        name = f"pass-{uuid.uuid4().hex[:8]}"
        body = {"game": game, "seats": 2, "name": name, "hosting": hosting}
        detail = _refused_creating_nothing(stack, body, "bad-hosting")
        assert f"{game} has no pass" in detail and "'forfeit'" in detail
    breaking_news = {"game": "breaking_news", "seats": 2, "hosting": hosting}
    created = stack.lobby.post("/tables", json=breaking_news)
    assert created.status_code == 201, created.text
    title = stack.lobby.get("/games/breaking_news").json()["title"]
    assert created.json()["name"] == f"{title} table"  # unnamed: after the game's title


def test_running_matches_are_listed_to_watch(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "dingo", 2)
    waiting = stack.lobby.post("/tables", json={"game": "dingo", "seats": 2}).json()

    def listed(match_status: str) -> set[str | None]:
        params = {"status": "started", "match_status": match_status, "limit": 200}
        page = stack.lobby.get("/tables", params=params)
        assert page.status_code == 200, page.text
        items = page.json()["items"]
        assert all(table["status"] == "started" for table in items)
        return {table["match_id"] for table in items} | {table["table_id"] for table in items}

    running = listed("running")
    assert match_id in running and waiting["table_id"] not in running
    assert match_id not in listed("finished")
    left = stack.match.post(f"/matches/{match_id}/leave", headers=auth(tokens[0]))
    assert left.status_code == 200, left.text
    assert stack.match.get(f"/matches/{match_id}").json()["status"] == "finished"
    assert match_id in listed("finished") and match_id not in listed("running")
    bad = stack.lobby.get("/tables", params={"match_status": "paused"})
    assert bad.status_code == 400, bad.text
