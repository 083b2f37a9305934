"""Keys that browsers hold are no secrets: a publishable key creates, lists, reads and joins
tables, and its players start, play, leave and rematch with their seat tokens, and seat or
remove bots at their own table; everything else only the app's secret key may do (403
``secret-key-required``, and nothing changes). Each service its own process."""

from __future__ import annotations

import random
from collections.abc import Iterator

import httpx
import pytest

from shared.edge.apps import API_KEY_HEADER
from tests.conftest import new_app_key
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table, random_move
from tests.e2e.webhooks.service import Hooks, running_webhooks

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


@pytest.fixture(scope="module")
def browser(stack: Stack, database_url: str) -> Iterator[Stack]:
    """The stack as a browser of the tests' app reaches it: with a publishable key."""
    key = new_app_key(database_url, "a browser", kind="publishable")
    headers = {API_KEY_HEADER: key}
    with (
        httpx.Client(base_url=stack.lobby.base_url, headers=headers, timeout=10) as lobby,
        httpx.Client(base_url=stack.match.base_url, headers=headers, timeout=10) as match,
    ):
        yield Stack(lobby=lobby, match=match, env=stack.env, processes={}, app_key=key)


@pytest.fixture(scope="module")
def hooks(stack: Stack) -> Iterator[Hooks]:
    with running_webhooks(stack) as running:
        yield running


def secret_key_required(answer: httpx.Response) -> None:
    assert answer.status_code == 403, answer.text
    assert answer.json()["type"].endswith("/secret-key-required"), answer.text


def test_a_publishable_key_plays_a_table_through(browser: Stack) -> None:
    match_id, tokens = open_table(browser, "hanabi", 2, seed=5)  # create, join, start
    listed = browser.lobby.get("/tables", params={"status": "started", "limit": 200})
    assert listed.status_code == 200, listed.text
    match = browser.match.get(f"/matches/{match_id}").json()
    random_move(browser, match, tokens, random.Random(5))
    left = browser.match.post(f"/matches/{match_id}/leave", headers=auth(tokens[0]))
    assert left.status_code == 200 and left.json()["status"] == "finished", left.text
    table_id = left.json()["table_id"]
    assert browser.lobby.get(f"/tables/{table_id}").status_code == 200
    rematch = browser.lobby.post(f"/tables/{table_id}/rematch", headers=auth(tokens[1]))
    assert rematch.status_code == 201, rematch.text
    again = rematch.json()["table"]["table_id"]
    seat = rematch.json()["seat"]
    gone = browser.lobby.delete(
        f"/tables/{again}/seats/{seat}", headers=auth(rematch.json()["token"])
    )
    assert gone.status_code == 200, gone.text


def test_a_seated_player_seats_and_removes_bots_with_a_publishable_key(
    stack: Stack, browser: Stack
) -> None:
    created = browser.lobby.post("/tables", json={"game": "hanabi", "seats": 3})
    table_id = created.json()["table_id"]
    joined = browser.lobby.post(f"/tables/{table_id}/seats", json={"name": "ada"}).json()
    seated = auth(joined["token"])
    bot = {"bot": "hanabi-random", "seat": 1}
    added = browser.lobby.post(f"/tables/{table_id}/bots", json=bot, headers=seated)
    assert added.status_code == 201, added.text
    removed = browser.lobby.delete(f"/tables/{table_id}/bots/1", headers=seated)
    assert removed.status_code == 200 and removed.json()["seats"][1]["bot"] is None
    # without a seat's token at this table, only the secret key may
    other = browser.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()
    elsewhere = browser.lobby.post(f"/tables/{other['table_id']}/seats", json={"name": "bob"})
    stranger = auth(elsewhere.json()["token"])
    for headers in ({}, stranger):
        secret_key_required(
            browser.lobby.post(f"/tables/{table_id}/bots", json=bot, headers=headers)
        )
    assert stack.lobby.post(f"/tables/{table_id}/bots", json=bot).status_code == 201
    for headers in ({}, stranger):
        secret_key_required(browser.lobby.delete(f"/tables/{table_id}/bots/1", headers=headers))
    assert browser.lobby.get(f"/tables/{table_id}").json()["seats"][1]["bot"] == "hanabi-random"
    assert stack.lobby.delete(f"/tables/{table_id}/bots/1").status_code == 200


def test_at_a_private_table_the_seat_token_not_the_invitation_lets_a_browser_seat_a_bot(
    stack: Stack, browser: Stack
) -> None:
    created = browser.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 3, "visibility": "private"}
    )
    assert created.status_code == 201, created.text
    table_id, invitation = created.json()["table_id"], created.json()["invitation_token"]
    bot = {"bot": "hanabi-random"}
    invited = auth(invitation)
    secret_key_required(browser.lobby.post(f"/tables/{table_id}/bots", json=bot, headers=invited))
    joined = browser.lobby.post(f"/tables/{table_id}/seats", json={"name": "ada"}, headers=invited)
    seated = auth(joined.json()["token"])
    added = browser.lobby.post(f"/tables/{table_id}/bots", json=bot, headers=seated)
    assert added.status_code == 201, added.text
    by_app = stack.lobby.post(f"/tables/{table_id}/bots", json=bot, headers=invited)
    assert by_app.status_code == 201, by_app.text  # the secret key, with the invitation


def test_a_publishable_key_is_refused_what_only_the_app_may_do(
    stack: Stack, browser: Stack, hooks: Hooks
) -> None:
    bots_only = {"game": "hanabi", "seats": 2, "bots": [{"bot": "hanabi-random"}] * 2}
    secret_key_required(browser.lobby.post("/tables", json=bots_only))
    one_bot = {**bots_only, "bots": [{"bot": "hanabi-random"}]}
    assert browser.lobby.post("/tables", json=one_bot).status_code == 201  # a seat for a person
    assert stack.lobby.post("/tables", json=bots_only).status_code == 201
    private = browser.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2, "visibility": "private"}
    )
    table_id, invitation = private.json()["table_id"], private.json()["invitation_token"]
    secret_key_required(browser.lobby.post(f"/tables/{table_id}/invitation"))
    secret_key_required(browser.lobby.delete(f"/tables/{table_id}/invitation"))
    still = browser.lobby.get(f"/tables/{table_id}", headers=auth(invitation))
    assert still.status_code == 200  # the invitation still works
    imported = {"game": "hanabi", "document": {"players": ["a", "b"], "deck": [], "actions": []}}
    secret_key_required(browser.match.post("/matches/import", json=imported))
    browser_hooks = {API_KEY_HEADER: browser.app_key}
    for method, path in (
        ("GET", "/webhooks/subscriptions"),
        ("POST", "/webhooks/subscriptions"),
        ("GET", "/webhooks/event-types"),
    ):
        body = {"url": f"{hooks.receiver.url}/browser"} if method == "POST" else None
        secret_key_required(hooks.api.request(method, path, json=body, headers=browser_hooks))
    assert hooks.api.get("/webhooks/subscriptions").status_code == 200  # the secret key
    assert stack.lobby.post(f"/tables/{table_id}/invitation").status_code == 200
