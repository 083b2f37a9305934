"""Open tables that close: by their app's secret key before they start, or by themselves once
idle, so tables someone joined and left cannot hold an app's quota of open tables (issue 31,
hole 5: with the quota filled that way, every create got 429 until someone filled them)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest

from services.rules.games.hanabi.options import standard_deck
from shared.edge.apps import API_KEY_HEADER
from tests.conftest import new_app_key
from tests.e2e.conftest import Stack, free_port, wait_healthy
from tests.e2e.play import auth
from tests.e2e.test_feeds import Follower
from tests.e2e.test_private_tables import assert_problem
from tests.e2e.webhooks.service import Hooks, eventually, running_webhooks

pytestmark = pytest.mark.e2e

HANABI = {"game": "hanabi", "seats": 2}
FEED_WAIT_S = 30.0


@dataclass
class App:
    """A client app of its own, with its quota of open tables: its secret key's client and a
    browser's (publishable key)."""

    secret: httpx.Client
    publishable: httpx.Client


NewApp = Callable[..., App]


@pytest.fixture
def new_app(stack: Stack, database_url: str) -> Iterator[NewApp]:
    """Makes client apps of their own, ``new_app(quota)``; closes their clients after."""
    made: list[App] = []

    def make(quota: int = 1000) -> App:
        name = f"closing-{uuid.uuid4().hex[:8]}"
        keys = [
            new_app_key(database_url, name, app=name, kind=kind)
            for kind in ("secret", "publishable")
        ]
        with psycopg.connect(database_url) as conn:
            conn.execute("update apps set max_open_tables = %s where name = %s", (quota, name))
        base, headers = stack.lobby.base_url, [{API_KEY_HEADER: key} for key in keys]
        made.append(App(*(httpx.Client(base_url=base, headers=h, timeout=10) for h in headers)))
        return made[-1]

    yield make
    for app in made:
        app.secret.close()
        app.publishable.close()


def joined_and_left(client: httpx.Client) -> str:
    """A table someone joined and left: open, empty, and counted in the app's quota."""
    created = client.post("/tables", json=HANABI)
    assert created.status_code == 201, created.text
    table_id = created.json()["table_id"]
    joined = client.post(f"/tables/{table_id}/seats", json={"name": "passer-by"}).json()
    left = client.delete(
        f"/tables/{table_id}/seats/{joined['seat']}", headers=auth(joined["token"])
    )
    assert left.status_code == 200, left.text
    return table_id


def closed_events(database_url: str, table_id: str) -> list[bytes]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select data from events where stream_id = %s and type = 'TableClosed'",
            (f"table-{table_id}",),
        ).fetchall()
    return [bytes(row[0]) for row in rows]


def until_closed(events: list) -> bool:
    return any(event.type == "TableClosed" for event in events)


def test_the_apps_secret_key_closes_a_table_and_frees_its_quota(
    stack: Stack, database_url: str, new_app: NewApp
) -> None:
    app = new_app(quota=2)
    tables = [joined_and_left(app.secret) for _ in range(2)]
    assert_problem(app.secret.post("/tables", json=HANABI), 429, "table-quota-reached")

    url = f"/tables/{tables[0]}"
    browser = app.publishable.delete(url)  # a browser's key: anyone's
    assert_problem(browser, 403, "secret-key-required")
    stranger = new_app().secret.delete(url)
    assert_problem(stranger, 404, "table-not-found")
    assert app.secret.get(url).json()["status"] == "open"
    assert_problem(app.publishable.post("/tables", json=HANABI), 429, "table-quota-reached")

    closed = app.secret.delete(url)
    assert closed.status_code == 200, closed.text
    assert closed.json()["status"] == "closed" and closed.json()["table_id"] == tables[0]
    again = app.secret.delete(url)
    assert again.status_code == 200 and again.json() == closed.json() == app.secret.get(url).json()
    assert len(closed_events(database_url, tables[0])) == 1
    assert app.publishable.post("/tables", json=HANABI).status_code == 201
    assert_problem(app.secret.post("/tables", json=HANABI), 429, "table-quota-reached")
    listed = app.secret.get("/tables", params={"status": "closed"}).json()["items"]
    assert [table["table_id"] for table in listed] == [tables[0]]


def test_a_browser_closes_its_table_only_while_its_player_sits_there_alone(
    database_url: str, new_app: NewApp
) -> None:
    """A publishable key closes a table with the seat token of the one person seated there (its
    creator waiting alone; bots may sit too), never without a seat's token nor once someone
    else sat down."""
    app = new_app()
    browser = app.publishable
    table_id = browser.post("/tables", json={**HANABI, "seats": 3}).json()["table_id"]
    url = f"/tables/{table_id}"
    ada = browser.post(f"{url}/seats", json={"name": "ada", "seat": 1}).json()
    bob = browser.post(f"{url}/seats", json={"name": "bob"}).json()
    bot = browser.post(f"{url}/bots", json={"bot": "hanabi-random"}, headers=auth(ada["token"]))
    assert bot.status_code == 201, bot.text

    assert_problem(browser.delete(url), 403, "secret-key-required")
    assert_problem(browser.delete(url, headers=auth("not-a-seat")), 403, "secret-key-required")
    refused = browser.delete(url, headers=auth(ada["token"]))
    assert_problem(refused, 409, "players-seated")
    assert "bob" in refused.json()["detail"]
    assert browser.get(url).json()["status"] == "open"

    left = browser.delete(f"{url}/seats/{bob['seat']}", headers=auth(bob["token"]))
    assert left.status_code == 200, left.text
    closed = browser.delete(url, headers=auth(ada["token"]))
    assert closed.status_code == 200, closed.text
    assert closed.json()["status"] == "closed"
    assert [seat["player"] for seat in closed.json()["seats"]] == [None, None, None]
    assert len(closed_events(database_url, table_id)) == 1
    theirs = new_app().secret.post("/tables", json=HANABI).json()["table_id"]
    assert_problem(browser.delete(f"/tables/{theirs}"), 404, "table-not-found")


def test_a_closed_table_seats_and_starts_no_one(stack: Stack, new_app: NewApp) -> None:
    app = new_app()
    created = app.secret.post("/tables", json={**HANABI, "visibility": "private"}).json()
    url, invitation = f"/tables/{created['table_id']}", auth(created["invitation_token"])
    ada = app.secret.post(f"{url}/seats", json={"name": "ada"}, headers=invitation).json()
    assert app.secret.get(url, headers=auth(ada["token"])).status_code == 200

    closed = app.secret.delete(url)
    assert closed.status_code == 200, closed.text
    assert [seat["player"] for seat in closed.json()["seats"]] == [None, None]
    joined = app.secret.post(f"{url}/seats", json={"name": "bob"}, headers=invitation)
    assert_problem(joined, 409, "table-closed")
    bot = app.secret.post(f"{url}/bots", json={"bot": "hanabi-random"}, headers=invitation)
    assert_problem(bot, 409, "table-closed")
    # Ada's token holds no seat there any more: it neither starts, leaves nor shows the table.
    assert_problem(app.secret.post(f"{url}/start", headers=auth(ada["token"])), 403, "not-seated")
    left = app.secret.delete(f"{url}/seats/{ada['seat']}", headers=auth(ada["token"]))
    assert_problem(left, 403, "not-your-seat")
    assert_problem(app.secret.get(url, headers=auth(ada["token"])), 403, "private-table")
    assert app.secret.get(url, headers=invitation).json() == closed.json()


def test_a_started_table_is_not_closed(new_app: NewApp) -> None:
    app = new_app()
    url = f"/tables/{app.secret.post('/tables', json=HANABI).json()['table_id']}"
    tokens = [
        app.secret.post(f"{url}/seats", json={"name": name}).json()["token"]
        for name in ("ada", "bob")
    ]
    started = app.secret.post(f"{url}/start", headers=auth(tokens[0]))
    assert started.status_code == 201, started.text
    assert_problem(app.secret.delete(url), 409, "table-started")
    assert app.secret.get(url).json() == started.json()


def test_closing_shows_on_the_tables_feed_and_reaches_its_webhooks(stack: Stack) -> None:
    """A stacked table says so before anyone sits down (``secret_options_set``, and on the
    feed and in webhooks the commitment named after the option), then its closing is seen."""
    with running_webhooks(stack) as hooks:
        _closing_is_followed(stack, hooks)


def _closing_is_followed(stack: Stack, hooks: Hooks) -> None:
    hooks.subscribe("tables", event_types=["TableCreated", "TableClosed"])
    deck = list(reversed(standard_deck(5, False)))
    created = stack.lobby.post("/tables", json={**HANABI, "options": {"deck": deck}}).json()
    table_id = created["table_id"]
    shown = stack.lobby.get(f"/tables/{table_id}").json()
    listed = stack.lobby.get("/tables", params={"status": "open", "limit": 200}).json()["items"]
    assert created["secret_options_set"] == shown["secret_options_set"] == ["deck"]
    assert [t["secret_options_set"] for t in listed if t["table_id"] == table_id] == [["deck"]]
    follower = Follower(str(stack.lobby.base_url), f"/tables/{table_id}/feed", until=until_closed)
    follower.start()

    closed = stack.lobby.delete(f"/tables/{table_id}")
    assert closed.status_code == 200, closed.text
    follower.join(FEED_WAIT_S)
    assert [event.type for event in follower.events] == ["TableCreated", "TableClosed"]
    assert list(follower.events[0].data["data"]["commitments"]) == ["deck"]
    assert follower.events[1].data["data"] == {"type": "TableClosed", "reason": "by_app"}
    assert follower.events[1].data["version"] == closed.json()["version"] == 2

    stream = f"table-{table_id}"

    def delivered() -> list[dict]:
        bodies = [
            r.body for r in hooks.receiver.verified("tables") if r.body["stream_id"] == stream
        ]
        return bodies if len(bodies) == 2 else []

    created_hook, closed_hook = eventually(delivered, what="the table's webhooks")
    assert list(created_hook["data"]["commitments"]) == ["deck"]
    assert (closed_hook["type"], closed_hook["version"]) == ("TableClosed", 2)
    assert closed_hook["data"] == {"type": "TableClosed", "reason": "by_app"}


def test_idle_tables_close_by_themselves_once_however_many_lobbies_sweep(
    stack: Stack, database_url: str, new_app: NewApp
) -> None:
    """The quota filled by tables joined and left frees itself: two lobbies with a short idle
    time sweep at once, each table closes once (``TableClosed``, ``idle``), and the app
    creates again. (Last in this module: the sweep closes every idle open table.)"""
    app = new_app(quota=2)
    tables = [joined_and_left(app.secret) for _ in range(2)]
    assert_problem(app.secret.post("/tables", json=HANABI), 429, "table-quota-reached")
    followers = [
        Follower(str(stack.lobby.base_url), f"/tables/{table}/feed", until=until_closed).start()
        for table in tables
    ]
    sweepers = [f"idle-lobby-{n}" for n in range(2)]
    try:
        for name in sweepers:
            port = free_port()
            process = stack.start(
                "lobby", name, PLAYTABLE_LOBBY_PORT=str(port), PLAYTABLE_OPEN_TABLE_IDLE_S="0.2"
            )
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
                wait_healthy(client, process)
        for follower in followers:
            follower.join(FEED_WAIT_S)
    finally:
        for name in sweepers:
            stack.stop(name)

    for table, follower in zip(tables, followers, strict=True):
        closing = follower.events[-1].data
        assert closing["data"] == {"type": "TableClosed", "reason": "idle"}
        assert closing["seat"] is None
        assert len(closed_events(database_url, table)) == 1
        assert app.secret.get(f"/tables/{table}").json()["status"] == "closed"
    assert app.secret.post("/tables", json=HANABI).status_code == 201
