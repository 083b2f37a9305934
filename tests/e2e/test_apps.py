"""Client apps sharing one playtable: each sees and changes only its own tables, matches and
webhook subscriptions; the operator manages apps and keys; idempotency records belong to their
caller and hold no readable secret. Each test attacks one finding of the security audit."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from shared.edge.apps import API_KEY_HEADER
from tests.conftest import new_app_key
from tests.e2e.conftest import Stack, wait_healthy
from tests.e2e.play import auth, open_table
from tests.e2e.webhooks.service import Hooks, eventually, running_webhooks
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

OPERATOR_KEY = "pt_e2e-operator-key-of-the-environment"


def problem_code(response: httpx.Response) -> str:
    assert response.headers["content-type"] == "application/problem+json", response.text
    return response.json()["type"].rsplit("/", 1)[-1]


@pytest.fixture(scope="module")
def intruder(stack: Stack, database_url: str) -> Iterator[httpx.Client]:
    """Another app's client, on the same lobby."""
    key = new_app_key(database_url, "intruder", app="intruder")
    with httpx.Client(
        base_url=stack.lobby.base_url, headers={API_KEY_HEADER: key}, timeout=10
    ) as client:
        yield client


@pytest.fixture(scope="module")
def hooks(stack: Stack) -> Iterator[Hooks]:
    with running_webhooks(stack) as running:
        yield running


@pytest.fixture(scope="module")
def operated(stack: Stack) -> Iterator[None]:
    """The lobby restarted with an operator key in its environment."""
    stack.stop("lobby")
    wait_healthy(stack.lobby, stack.start("lobby", PLAYTABLE_OPERATOR_KEY=OPERATOR_KEY))
    yield


def operator_client(stack: Stack) -> httpx.Client:
    return httpx.Client(base_url=stack.lobby.base_url, headers={API_KEY_HEADER: OPERATOR_KEY})


def test_routes_of_an_app_refuse_requests_without_a_valid_key(stack: Stack) -> None:
    base = stack.lobby.base_url
    for headers, code in (
        ({}, "api-key-required"),
        ({API_KEY_HEADER: "pt_not-a-key"}, "unknown-api-key"),
        ({API_KEY_HEADER: OPERATOR_KEY}, "unknown-api-key"),  # not this stack's operator key
    ):
        refused = httpx.post(f"{base}/tables", json={"game": "hanabi", "seats": 2}, headers=headers)
        assert refused.status_code == 401 and problem_code(refused) == code
        listed = httpx.get(f"{base}/tables", headers=headers)
        assert listed.status_code == 401 and problem_code(listed) == code


def test_an_app_lists_and_seats_only_its_own_tables(stack: Stack, intruder: httpx.Client) -> None:
    created = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2})
    table_id = created.json()["table_id"]
    mine = stack.lobby.get("/tables", params={"limit": 200}).json()["items"]
    assert table_id in {table["table_id"] for table in mine}
    theirs = intruder.get("/tables", params={"limit": 200}).json()["items"]
    assert table_id not in {table["table_id"] for table in theirs}

    joined = intruder.post(f"/tables/{table_id}/seats", json={"name": "mallory"})
    assert joined.status_code == 404 and problem_code(joined) == "table-not-found"
    assert stack.lobby.get(f"/tables/{table_id}").json()["seats"][0]["player"] is None


def test_a_replayed_idempotency_key_never_hands_over_another_callers_seat(
    stack: Stack, database_url: str, intruder: httpx.Client
) -> None:
    """Finding 2: the victim joins under ``join-1``; the same key under another key of the
    same app, or another app, never answers the victim's token, and no record holds it."""
    table_id = stack.lobby.post("/tables", json={"game": "dingo", "seats": 3}).json()["table_id"]
    key = {"Idempotency-Key": "join-1"}
    victim = stack.lobby.post(f"/tables/{table_id}/seats", json={"name": "eve"}, headers=key)
    assert victim.status_code == 201
    again = stack.lobby.post(f"/tables/{table_id}/seats", json={"name": "eve"}, headers=key)
    assert again.json() == victim.json()  # the victim's own retry: the same answer

    colleague = new_app_key(database_url, "same app, another key")
    replayed = httpx.post(
        f"{stack.lobby.base_url}/tables/{table_id}/seats",
        json={"name": "eve"},
        headers={**key, API_KEY_HEADER: colleague},
    )
    assert replayed.status_code == 201 and replayed.json()["token"] != victim.json()["token"]
    stranger = intruder.post(f"/tables/{table_id}/seats", json={"name": "eve"}, headers=key)
    assert stranger.status_code == 404

    private = stack.lobby.post(
        "/tables",
        json={"game": "hanabi", "seats": 2, "visibility": "private"},
        headers={"Idempotency-Key": "private-1"},
    )
    invitation = private.json()["invitation_token"]
    with psycopg.connect(database_url) as conn:
        bodies = [bytes(row[0]) for row in conn.execute("select body from idempotency")]
    secrets = [victim.json()["token"], replayed.json()["token"], invitation]
    assert bodies and not [s for s in secrets if any(s.encode() in body for body in bodies)]


def test_a_moves_idempotency_key_is_its_seats_own(stack: Stack) -> None:
    """Under one Idempotency-Key, another seat's move is its own request, not a replay."""
    match_id, tokens = open_table(stack, "breaking_news", 3, seed=11)
    match = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[0])).json()
    mover = match["to_move"][0]
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[mover])).json()
    body = {
        "game": legal["game"],
        "expected_version": legal["version"],
        "action": legal["actions"][0],
    }
    key = {"Idempotency-Key": "move-1"}
    moved = stack.match.post(
        f"/matches/{match_id}/actions", json=body, headers={**auth(tokens[mover]), **key}
    )
    assert moved.status_code == 201, moved.text
    other = next(seat for seat in range(3) if seat != mover)
    replayed = stack.match.post(
        f"/matches/{match_id}/actions", json=body, headers={**auth(tokens[other]), **key}
    )
    # its own answer (not its turn, or a stale version), not the other seat's, nor "reused"
    assert replayed.status_code in (409, 422), replayed.text
    assert problem_code(replayed) != "idempotency-key-reused"


@pytest.mark.usefixtures("operated")
def test_an_apps_open_tables_are_bounded_by_its_quota(stack: Stack) -> None:
    operator = operator_client(stack)
    created = operator.post("/apps", json={"name": "small app", "max_open_tables": 2})
    assert created.status_code == 201, created.text
    small = httpx.Client(
        base_url=stack.lobby.base_url, headers={API_KEY_HEADER: created.json()["key"]["api_key"]}
    )
    body = {"game": "hanabi", "seats": 2}
    assert [small.post("/tables", json=body).status_code for _ in range(2)] == [201, 201]
    refused = small.post("/tables", json=body)
    assert refused.status_code == 429 and problem_code(refused) == "table-quota-reached"
    app_id = created.json()["app"]["app_id"]
    raised = operator.patch(f"/apps/{app_id}", json={"max_open_tables": 3})
    assert raised.status_code == 200 and raised.json()["max_open_tables"] == 3
    assert small.post("/tables", json=body).status_code == 201


@pytest.mark.usefixtures("operated")
def test_the_operator_manages_apps_and_their_keys(stack: Stack) -> None:
    operator = operator_client(stack)
    assert stack.lobby.get("/apps").status_code == 403  # an app's key is not the operator's
    created = operator.post("/apps", json={"name": "partner"}).json()
    app_id, first = created["app"]["app_id"], created["key"]["api_key"]
    assert created["key"]["key"]["scopes"] == ["tables", "webhooks"]
    partner = httpx.Client(base_url=stack.lobby.base_url, headers={API_KEY_HEADER: first})
    assert partner.post("/tables", json={"game": "hanabi", "seats": 2}).status_code == 201

    narrow = operator.post(f"/apps/{app_id}/keys", json={"scopes": ["webhooks"]}).json()
    only_hooks = partner.post(
        "/tables", json={"game": "hanabi", "seats": 2}, headers={API_KEY_HEADER: narrow["api_key"]}
    )
    assert only_hooks.status_code == 403 and problem_code(only_hooks) == "scope-missing"

    listed = operator.get(f"/apps/{app_id}/keys").json()
    assert len(listed) == 2 and not [k for k in listed if first in str(k)]  # never the key
    on_match = {API_KEY_HEADER: first}  # another process, which keeps the keys it read
    for _ in range(2):
        known = stack.match.get("/matches/no-such-match", headers=on_match)
        assert known.status_code == 404 and problem_code(known) == "match-not-found"
    revoked = operator.delete(f"/apps/{app_id}/keys/{created['key']['key']['key_id']}")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    refused = partner.post("/tables", json={"game": "hanabi", "seats": 2})  # the very next
    assert refused.status_code == 401 and problem_code(refused) == "unknown-api-key"

    # another process refuses it once its listener delivered Postgres' notification: at once
    # on an idle machine, but that process and its listening backend wait their turn on a busy one
    def refused_elsewhere() -> httpx.Response | None:
        answer = stack.match.get("/matches/no-such-match", headers=on_match)
        return answer if answer.status_code != 404 else None

    elsewhere = wait_until(refused_elsewhere, what="the match service refusing the revoked key")
    assert elsewhere.status_code == 401 and problem_code(elsewhere) == "unknown-api-key"
    assert operator.get(f"/apps/{app_id}").json()["name"] == "partner"
    assert operator.get("/apps/0000").status_code == 404


def test_webhooks_of_one_app_never_see_or_touch_anothers(
    stack: Stack, hooks: Hooks, database_url: str
) -> None:
    """Finding 1: an app's unfiltered subscription gets none of another app's events, and its
    key reads and changes none of the other's subscriptions."""
    victim = hooks.subscribe("victim", event_types=["TableCreated", "SeatTaken"])
    intruder_key = new_app_key(database_url, "webhook intruder", app="webhook intruder")
    intruder = httpx.Client(
        base_url=hooks.api.base_url, headers={API_KEY_HEADER: intruder_key}, timeout=10
    )
    spy = intruder.post("/webhooks/subscriptions", json={"url": f"{hooks.receiver.url}/spy"})
    assert spy.status_code == 201, spy.text
    hooks.receiver.secrets["spy"] = [spy.json()["secret"]]

    table_id = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()["table_id"]
    stack.lobby.post(f"/tables/{table_id}/seats", json={"name": "ada"})
    eventually(lambda: len(hooks.receiver.verified("victim")) >= 2, what="the victim's events")
    time.sleep(1)  # time enough for any wrongly made delivery to arrive too
    assert hooks.receiver.requests.get("spy", []) == []

    path = f"/webhooks/subscriptions/{victim['id']}"
    assert {name for name in (s["id"] for s in intruder.get("/webhooks/subscriptions").json())} == {
        spy.json()["subscription"]["id"]
    }
    for response in (
        intruder.get(path),
        intruder.get(f"{path}/deliveries"),
        intruder.patch(path, json={"url": f"{hooks.receiver.url}/spy"}),
        intruder.post(f"{path}/rotate-secret"),
        intruder.delete(path),
    ):
        assert response.status_code == 404, response.text
    delivery = hooks.deliveries(victim["id"])[0]["id"]
    redelivered = intruder.post(f"/webhooks/deliveries/{delivery}/redeliver")
    assert redelivered.status_code == 404
    unchanged = hooks.api.get(path).json()
    assert unchanged["url"] == victim["url"] and unchanged["previous_secret_until"] is None
    assert hooks.api.get("/webhooks/subscriptions", headers={API_KEY_HEADER: ""}).status_code == 401
