"""Private tables: unlisted, seen and joined with an invitation; their matches watched with it.

A spectator, invited or not, never sees a hand's cards while the match runs; the invitation
never shows in a table's answer, an event log or a published stream.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import psycopg
import pytest
import redis

from shared.edge.tokens import hash_token
from shared.infra.settings import stream_key
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table, started_match

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


def create_private_table(stack: Stack, seats: int = 2) -> dict[str, Any]:
    created = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": seats, "visibility": "private"}
    )
    assert created.status_code == 201, created.text
    table = created.json()
    assert table["visibility"] == "private" and table["invitation_token"]
    return table


def listed_table_ids(stack: Stack) -> set[str]:
    seen: set[str] = set()
    cursor = None
    while True:
        params = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = stack.lobby.get("/tables", params=params).json()
        seen |= {item["table_id"] for item in page["items"]}
        cursor = page["next_cursor"]
        if cursor is None:
            return seen


def assert_problem(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["type"].endswith(f"/{code}"), response.text


def start_private_match(stack: Stack) -> tuple[dict[str, Any], str, list[str]]:
    """A started private Hanabi table for two: the table, its match id and the seat tokens."""
    table = create_private_table(stack)
    url = f"/tables/{table['table_id']}"
    invitation = auth(table["invitation_token"])
    tokens = [
        stack.lobby.post(f"{url}/seats", json={"name": name}, headers=invitation).json()["token"]
        for name in ("ada", "bob")
    ]
    started = stack.lobby.post(f"{url}/start", headers=auth(tokens[0]))
    match_id = started_match(stack, started, token=tokens[0])["match_id"]
    return table, match_id, tokens


def test_a_private_table_is_unlisted_and_needs_its_invitation(stack: Stack) -> None:
    public = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()
    assert public["visibility"] == "public" and public["invitation_token"] is None
    table = create_private_table(stack)
    invitation = table["invitation_token"]
    url = f"/tables/{table['table_id']}"

    listed = listed_table_ids(stack)
    assert public["table_id"] in listed and table["table_id"] not in listed

    assert_problem(stack.lobby.get(url), 403, "private-table")
    assert_problem(stack.lobby.get(url, headers=auth("guess")), 403, "private-table")
    before = stack.lobby.get(url, headers=auth(invitation))
    assert before.status_code == 200
    assert invitation not in before.text and "invitation_token" not in before.json()

    refused = stack.lobby.post(f"{url}/seats", json={"name": "eve"})
    assert_problem(refused, 403, "private-table")
    wrong = stack.lobby.post(f"{url}/seats", json={"name": "eve"}, headers=auth("guess"))
    assert_problem(wrong, 403, "private-table")
    unchanged = stack.lobby.get(url, headers=auth(invitation)).json()
    assert unchanged == before.json()
    assert all(seat["player"] is None for seat in unchanged["seats"])

    joined = stack.lobby.post(f"{url}/seats", json={"name": "ada"}, headers=auth(invitation))
    assert joined.status_code == 201, joined.text
    assert invitation not in joined.text
    seat_view = stack.lobby.get(url, headers=auth(joined.json()["token"]))
    assert seat_view.status_code == 200
    assert seat_view.json()["seats"][0]["player"] == "ada"
    assert invitation not in seat_view.text

    # The public table ignores invitations: anyone sees and joins it.
    assert stack.lobby.get(f"/tables/{public['table_id']}").status_code == 200
    public_seat = stack.lobby.post(f"/tables/{public['table_id']}/seats", json={"name": "cleo"})
    assert public_seat.status_code == 201


def test_a_private_match_is_watched_only_with_its_invitation(stack: Stack) -> None:
    table, match_id, tokens = start_private_match(stack)
    invitation = table["invitation_token"]
    table_url = f"/tables/{table['table_id']}"
    assert stack.lobby.get(table_url, headers=auth(invitation)).json()["match_id"] == match_id
    assert_problem(stack.lobby.get(table_url), 403, "private-table")
    assert_problem(stack.lobby.post(f"{table_url}/start", headers=auth("guess")), 403, "not-seated")
    url = f"/matches/{match_id}"
    reads = [url, f"{url}/events", f"{url}/replay?version=1", f"{url}/export"]

    for path in reads:
        assert_problem(stack.match.get(path), 403, "private-match")
        assert_problem(stack.match.get(path, headers=auth("guess")), 403, "private-match")

    spectator = stack.match.get(url, headers=auth(invitation))
    assert spectator.status_code == 200
    watched = spectator.json()
    assert watched["you"] is None and watched["status"] == "running"
    assert all(card["suit"] is None for hand in watched["view"]["hands"] for card in hand)
    assert all(card["rank"] is None for hand in watched["view"]["hands"] for card in hand)

    events = stack.match.get(f"{url}/events", headers=auth(invitation))
    assert events.status_code == 200
    dealt = next(
        item["data"] for item in events.json()["items"] if item["data"]["type"] == "CardsDealt"
    )
    assert all(card.get("suit") is None for hand in dealt["hands"] for card in hand)
    replayed = stack.match.get(
        f"{url}/replay", params={"version": watched["version"]}, headers=auth(invitation)
    )
    assert replayed.status_code == 200
    assert all(card["suit"] is None for hand in replayed.json()["view"]["hands"] for card in hand)
    # Past the privacy check, an export still waits for the end.
    assert_problem(stack.match.get(f"{url}/export", headers=auth(invitation)), 409, "match-running")

    # An invited spectator is no player.
    assert_problem(stack.match.get(f"{url}/actions", headers=auth(invitation)), 403, "not-seated")
    move = stack.match.post(
        f"{url}/actions",
        json={
            "game": "hanabi",
            "expected_version": watched["version"],
            "action": {"type": "DiscardCard", "card": 0},
        },
        headers=auth(invitation),
    )
    assert_problem(move, 403, "not-seated")

    seat = stack.match.get(url, headers=auth(tokens[0])).json()
    assert seat["you"] == 0
    own, other = seat["view"]["hands"]
    assert all(card["suit"] is None for card in own)
    assert all(card["suit"] is not None for card in other)
    assert stack.match.get(f"{url}/actions", headers=auth(tokens[1])).status_code == 200


def test_a_public_match_is_watched_without_a_token(stack: Stack) -> None:
    match_id, _ = open_table(stack, "hanabi", 2)
    url = f"/matches/{match_id}"
    watched = stack.match.get(url)
    assert watched.status_code == 200 and watched.json()["you"] is None
    assert all(card["suit"] is None for hand in watched.json()["view"]["hands"] for card in hand)
    assert stack.match.get(f"{url}/events").status_code == 200
    version = watched.json()["version"]
    assert stack.match.get(f"{url}/replay", params={"version": version}).status_code == 200
    assert_problem(stack.match.get(f"{url}/export"), 409, "match-running")
    assert_problem(stack.match.get(url, headers=auth("guess")), 403, "unknown-token")


def test_the_invitation_is_in_no_log_and_no_stream(stack: Stack) -> None:
    table, match_id, tokens = start_private_match(stack)
    secrets = [table["invitation_token"].encode(), hash_token(table["invitation_token"]).encode()]

    with psycopg.connect(stack.env["DATABASE_URL"]) as conn:
        rows = conn.execute(
            "select data, metadata from events where stream_id = any(%s)",
            ([f"table-{table['table_id']}", f"match-{match_id}"],),
        ).fetchall()
    assert len(rows) > 3
    stored = b"".join(bytes(data) + bytes(meta) for data, meta in rows)
    assert not any(secret in stored for secret in secrets)

    for token in (table["invitation_token"], tokens[0]):
        log = stack.match.get(f"/matches/{match_id}/events", headers=auth(token)).text
        assert not any(secret.decode() in log for secret in secrets)

    published = published_mentions(stack, [table["table_id"], match_id])
    assert not any(secret in published for secret in secrets)


def published_mentions(stack: Stack, ids: list[str], timeout_s: float = 30.0) -> bytes:
    """Every published lobby and match event about these ids, once each id has shown up."""
    prefix = stack.env["PLAYTABLE_STREAM_PREFIX"]
    client = redis.Redis.from_url(stack.env["REDIS_URL"])
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            entries = [
                value
                for name in ("lobby-events", "match-events")
                for _, fields in client.xrange(stream_key(prefix, name))
                for value in fields.values()
            ]
            mentions = b"".join(e for e in entries if any(i.encode() in e for i in ids))
            if all(i.encode() in mentions for i in ids) or time.monotonic() > deadline:
                assert all(i.encode() in mentions for i in ids), "events were not published"
                return mentions
            time.sleep(0.1)
    finally:
        client.close()
