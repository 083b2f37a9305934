"""What HTTP promises beyond the happy path, on the running services: HEAD wherever GET, 405
naming the allowed methods, conditional reads with If-None-Match, bounded idempotency keys."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table
from tools.hostile.barrage import send_hostile
from tools.hostile.malformed import HostileRequest
from tools.traffic import Endpoints

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


@pytest.fixture(scope="module")
def match(stack: Stack) -> tuple[str, list[str]]:
    return open_table(stack, "hanabi", 2, seed=5)


def test_head_answers_what_get_answers_without_a_body(
    stack: Stack, match: tuple[str, list[str]]
) -> None:
    match_id, tokens = match
    for client, path in [
        (stack.lobby, "/games"),
        (stack.lobby, "/tables"),
        (stack.match, f"/matches/{match_id}"),
        (stack.match, f"/matches/{match_id}/events"),
        (stack.match, "/matches/no-such-match"),
    ]:
        got = client.get(path, headers=auth(tokens[0]))
        head = client.head(path, headers=auth(tokens[0]))
        assert head.status_code == got.status_code, path
        assert head.content == b"", path
        assert head.headers["content-type"] == got.headers["content-type"], path
        assert head.headers.get("etag") == got.headers.get("etag"), path


def test_head_on_a_live_feed_ends_after_its_headers(
    stack: Stack, match: tuple[str, list[str]]
) -> None:
    match_id, _ = match
    head = stack.match.head(f"/matches/{match_id}/feed", timeout=5)
    assert head.status_code == 200
    assert head.headers["content-type"].startswith("text/event-stream")


def test_a_method_not_allowed_names_the_allowed_ones(
    stack: Stack, match: tuple[str, list[str]]
) -> None:
    match_id, _ = match
    for client, method, path, allowed in [
        (stack.match, "DELETE", f"/matches/{match_id}", {"GET", "HEAD", "OPTIONS"}),
        (stack.match, "PUT", f"/matches/{match_id}/actions", {"GET", "HEAD", "OPTIONS", "POST"}),
        (stack.lobby, "PATCH", "/tables", {"GET", "HEAD", "OPTIONS", "POST"}),
    ]:
        refused = client.request(method, path)
        assert refused.status_code == 405, path
        assert refused.headers["content-type"] == "application/problem+json"
        assert {m.strip() for m in refused.headers["allow"].split(",")} == allowed, path


def test_if_none_match_answers_304_until_the_match_moves(
    stack: Stack, match: tuple[str, list[str]]
) -> None:
    match_id, tokens = match
    first = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[0]))
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "private, no-cache"
    assert first.headers["vary"] == "Authorization"
    for sent in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
        again = stack.match.get(
            f"/matches/{match_id}", headers={**auth(tokens[0]), "If-None-Match": sent}
        )
        assert again.status_code == 304, sent
        assert again.content == b""
        assert again.headers["etag"] == etag
    stale = stack.match.get(f"/matches/{match_id}", headers={"If-None-Match": '"0"'})
    assert stale.status_code == 200
    assert stale.json()["version"] == first.json()["version"]
    for other in ({}, auth(tokens[1])):  # the seat's copy is not another caller's
        theirs = stack.match.get(f"/matches/{match_id}", headers={**other, "If-None-Match": etag})
        assert theirs.status_code == 200, other
        assert theirs.json()["you"] == (1 if other else None)
        assert theirs.headers["etag"] != etag


@pytest.mark.parametrize("key", ["", "k" * 256])
def test_an_idempotency_key_outside_1_to_255_characters_is_refused(stack: Stack, key: str) -> None:
    before = stack.lobby.get("/tables").json()
    refused = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2}, headers={"Idempotency-Key": key}
    )
    assert refused.status_code == 400, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert "Idempotency-Key" in refused.text or "idempotency" in refused.text.lower()
    assert stack.lobby.get("/tables").json() == before


def test_an_empty_body_is_refused_saying_so(stack: Stack) -> None:
    refused = stack.lobby.post("/tables", content=b"")
    assert refused.status_code == 400
    assert refused.json()["detail"] == "the request needs a JSON body"
    assert refused.json()["errors"] == [{"message": "the body is empty", "source": "body"}]


def test_whole_numbers_written_as_floats_are_integers(stack: Stack) -> None:
    """JSON Schema's ``integer`` admits ``2.0``: so does the API, and the game gets an int."""
    created = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2.0, "seed": 3.0})
    assert created.status_code == 201, created.text
    table_id = created.json()["table_id"]
    tokens = []
    for seat in (0.0, 1.0):
        joined = stack.lobby.post(f"/tables/{table_id}/seats", json={"name": "p", "seat": seat})
        assert joined.status_code == 201, joined.text
        tokens.append(joined.json()["token"])
    started = stack.lobby.post(f"/tables/{table_id}/start", headers=auth(tokens[0]))
    match_id = started.json()["match_id"]
    match = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[0])).json()
    moved = stack.match.post(
        f"/matches/{match_id}/actions",
        headers=auth(tokens[0]),
        json={
            "game": "hanabi",
            "expected_version": float(match["version"]),
            "action": {"type": "PlayCard", "card": 0.0},
        },
    )
    assert moved.status_code == 201, moved.text
    assert stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2.5}).status_code == 400
    assert stack.lobby.post("/tables", json={"game": "hanabi", "seats": "2"}).status_code == 400


def test_a_query_parameter_outside_its_enum_or_repeated_is_refused(stack: Stack) -> None:
    for params in (
        {"status": "null"},
        {"status": "bogus"},
        [("status", "open"), ("status", "open")],
    ):
        refused = stack.lobby.get("/tables", params=params)
        assert refused.status_code == 400, (params, refused.text)
    assert stack.lobby.get("/tables", params={"status": "open"}).status_code == 200


def test_options_names_every_method_of_the_path(stack: Stack, match: tuple[str, list[str]]) -> None:
    match_id, _ = match
    for client, path, allowed in [
        (stack.lobby, "/tables", {"GET", "HEAD", "OPTIONS", "POST"}),
        (stack.match, f"/matches/{match_id}/actions", {"GET", "HEAD", "OPTIONS", "POST"}),
        (stack.lobby, "/tables/some-table/seats/0", {"DELETE", "OPTIONS"}),
    ]:
        answered = client.options(path)
        assert answered.status_code == 204, path
        assert {m.strip() for m in answered.headers["allow"].split(",")} == allowed, path


def test_a_repeated_answer_says_it_is_one(stack: Stack) -> None:
    """A retry under the same Idempotency-Key gets the first answer with
    ``Idempotent-Replayed: true``; the first answer, and one under a new key, carry none."""
    table_id = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()["table_id"]
    joins = [
        stack.lobby.post(
            f"/tables/{table_id}/seats", json={"name": "p0"}, headers={"Idempotency-Key": "j0"}
        )
        for _ in range(2)
    ]
    assert [join.status_code for join in joins] == [201, 201]
    assert "idempotent-replayed" not in joins[0].headers
    assert joins[1].headers["idempotent-replayed"] == "true"
    assert joins[1].json() == joins[0].json()
    other = stack.lobby.post(f"/tables/{table_id}/seats", json={"name": "p1"})
    assert other.status_code == 201 and "idempotent-replayed" not in other.headers

    match_id, tokens = open_table(stack, "hanabi", 2, seed=6)
    seat0 = auth(tokens[0])
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=seat0).json()
    move = {"game": "hanabi", "expected_version": legal["version"], "action": legal["actions"][0]}
    moves = [
        stack.match.post(
            f"/matches/{match_id}/actions", json=move, headers={**seat0, "Idempotency-Key": "m0"}
        )
        for _ in range(2)
    ]
    assert [answer.status_code for answer in moves] == [201, 201]
    assert "idempotent-replayed" not in moves[0].headers
    assert moves[1].headers["idempotent-replayed"] == "true"
    assert moves[1].json()["version"] == moves[0].json()["version"]


def test_a_refusal_before_the_body_is_read_still_reaches_the_client(stack: Stack) -> None:
    """A refusal to a large body, decided by the headers alone: the service reads the body
    before it answers and closes, so the answer is not lost to a reset (two times in three it
    was, when the service closed with the body unread). The barrage's sender writes the body
    as the connection takes it, so the server may answer before the last of it arrives."""
    endpoints = Endpoints(str(stack.lobby.base_url), [str(stack.match.base_url)])
    body = json.dumps({"name": "x" * 100_000}).encode()
    json_type = (("Content-Type", b"application/json"),)
    for service, path in [
        ("lobby", "/tables/no-such-table/seats"),
        ("match", "/matches/no-such-match/actions"),
    ]:
        refused = HostileRequest(service, "POST", path, "large body, no key", json_type, body)
        for _ in range(20):
            answer = asyncio.run(send_hostile(endpoints, refused))
            got = (answer.status, answer.content_type, answer.body)  # not the 100 kB request
            assert answer.status in (401, 404), got
            assert answer.acceptable, got
            assert json.loads(answer.body)["type"].startswith("https://"), got
