"""Credentials and the headers answers carry, as sent and as the contract declares them: a 401
names what its route takes in ``WWW-Authenticate``; credentials are checked before the body;
a key acts only on its own app's tables and matches, whatever token rides with it; a stale
move's ETag is the one the mover's read carries; rate-limit headers on every answer; every
list pages by cursor."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from services.operator.cli import CONTRACT_PATH
from shared.edge.apps import API_KEY_HEADER
from shared.edge.errors import API_KEY_CHALLENGE, BEARER_CHALLENGE
from tests.conftest import new_app_key
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]

CONTRACT = json.loads(CONTRACT_PATH.read_text())
PLAY_FIRST = {"type": "PlayCard", "card": 0}


def declared(path: str, method: str, status: int) -> dict[str, Any]:
    return CONTRACT["paths"][path][method]["responses"][str(status)]


def problem_code(response: httpx.Response) -> str:
    assert response.headers["content-type"] == "application/problem+json", response.text
    return response.json()["type"].rsplit("/", 1)[-1]


@pytest.fixture(scope="module")
def match(stack: Stack) -> tuple[str, list[str]]:
    return open_table(stack, "hanabi", 2, seed=7)


@pytest.fixture(scope="module")
def stranger(stack: Stack) -> Iterator[httpx.Client]:
    """A client with no credentials at all."""
    with httpx.Client(base_url=stack.lobby.base_url, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def intruder_key(database_url: str) -> str:
    """Another app's secret key."""
    return new_app_key(database_url, "auth-intruder", app="auth-intruder")


def test_every_401_challenges_for_what_its_route_takes(
    stack: Stack, match: tuple[str, list[str]], stranger: httpx.Client
) -> None:
    match_id, _ = match
    lobby, match_url = stack.lobby.base_url, stack.match.base_url
    for method, url, template, challenges in [
        ("POST", f"{lobby}/tables", "/tables", [API_KEY_CHALLENGE]),
        ("GET", f"{lobby}/tables", "/tables", [API_KEY_CHALLENGE]),
        ("POST", f"{match_url}/matches/import", "/matches/import", [API_KEY_CHALLENGE]),
        (
            "GET",
            f"{match_url}/matches/{match_id}/actions",
            "/matches/{match_id}/actions",
            [BEARER_CHALLENGE],
        ),
        (
            "POST",
            f"{match_url}/matches/{match_id}/leave",
            "/matches/{match_id}/leave",
            [BEARER_CHALLENGE],
        ),
        (
            "POST",
            f"{match_url}/matches/{match_id}/seats/0/token",
            "/matches/{match_id}/seats/{seat}/token",
            [API_KEY_CHALLENGE, BEARER_CHALLENGE],
        ),
    ]:
        refused = stranger.request(method, url, json={})
        assert refused.status_code == 401, (url, refused.text)
        sent = {challenge.strip() for challenge in refused.headers["www-authenticate"].split(", ")}
        assert sent == set(challenges), url
        response = declared(template, method.lower(), 401)
        assert response["headers"]["WWW-Authenticate"]["required"] is True
        described = response["description"]
        if API_KEY_CHALLENGE in challenges:
            assert "API key" in described, template
        if BEARER_CHALLENGE in challenges:
            assert "token" in described or "invitation" in described, template
    bad = stranger.get(f"{match_url}/matches/{match_id}", headers={"Authorization": "Basic x"})
    assert bad.status_code == 401
    assert bad.headers["www-authenticate"] == BEARER_CHALLENGE


def test_credentials_are_checked_before_the_body(
    stack: Stack, match: tuple[str, list[str]], stranger: httpx.Client
) -> None:
    """A stranger's malformed request learns nothing about the body: 401, not 400."""
    match_id, _ = match
    before = stack.lobby.get("/tables").json()
    for headers in ({}, {API_KEY_HEADER: "pt_sk_not-a-key"}):
        refused = stranger.post(f"{stack.lobby.base_url}/tables", json={"game": 7}, headers=headers)
        assert refused.status_code == 401, refused.text
        assert problem_code(refused) in {"api-key-required", "unknown-api-key"}
    move = stranger.post(f"{stack.match.base_url}/matches/{match_id}/actions", json={"x": 1})
    assert move.status_code == 401, move.text
    assert problem_code(move) == "token-required"
    assert stack.lobby.get("/tables").json() == before
    # with its key, the same body is the caller's to fix
    assert stack.lobby.post("/tables", json={"game": 7}).status_code == 400


def test_a_seat_token_with_another_apps_key_is_refused(
    stack: Stack, match: tuple[str, list[str]], intruder_key: str
) -> None:
    match_id, tokens = match
    seat0 = auth(tokens[0])
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=seat0).json()
    move = {"game": "hanabi", "expected_version": legal["version"], "action": legal["actions"][0]}
    theirs = {**seat0, API_KEY_HEADER: intruder_key}
    for method, path, body in [
        ("GET", f"/matches/{match_id}", None),
        ("GET", f"/matches/{match_id}/actions", None),
        ("GET", f"/matches/{match_id}/events", None),
        ("POST", f"/matches/{match_id}/actions", move),
    ]:
        refused = stack.match.request(method, path, json=body, headers=theirs)
        assert refused.status_code == 404, (path, refused.text)
        assert problem_code(refused) == "match-not-found"
    assert stack.match.get(f"/matches/{match_id}").json()["version"] == legal["version"]
    # the match's own app's key rides along with its seat token
    moved = stack.match.post(f"/matches/{match_id}/actions", json=move, headers=seat0)
    assert moved.status_code == 201, moved.text

    table = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()
    joined = stack.lobby.post(f"/tables/{table['table_id']}/seats", json={"name": "p0"}).json()
    for method, path in [
        ("GET", f"/tables/{table['table_id']}"),
        ("POST", f"/tables/{table['table_id']}/start"),
        ("DELETE", f"/tables/{table['table_id']}/seats/{joined['seat']}"),
    ]:
        refused = stack.lobby.request(
            method, path, headers={**auth(joined["token"]), API_KEY_HEADER: intruder_key}
        )
        assert refused.status_code == 404, (path, refused.text)
        assert problem_code(refused) == "table-not-found"
    seats = stack.lobby.get(f"/tables/{table['table_id']}").json()["seats"]
    assert [seat["player"] for seat in seats if seat["player"]] == ["p0"]


def test_a_stale_moves_etag_is_the_one_the_movers_read_carries(
    stack: Stack, match: tuple[str, list[str]]
) -> None:
    match_id, tokens = match
    for token in tokens:
        seat = auth(token)
        read = stack.match.get(f"/matches/{match_id}", headers=seat)
        stale = stack.match.post(
            f"/matches/{match_id}/actions",
            headers=seat,
            json={
                "game": "hanabi",
                "expected_version": 1,
                "action": {"type": "PlayCard", "card": 0},
            },
        )
        assert stale.status_code == 409, stale.text
        assert problem_code(stale) == "stale-version"
        assert stale.headers["etag"] == read.headers["etag"]
        again = stack.match.get(
            f"/matches/{match_id}", headers={**seat, "If-None-Match": stale.headers["etag"]}
        )
        assert again.status_code == 304
    assert "ETag" in declared("/matches/{match_id}/actions", "post", 409)["headers"]


def test_rate_limit_headers_come_with_every_answer_and_are_declared(
    stack: Stack, match: tuple[str, list[str]], stranger: httpx.Client
) -> None:
    match_id, tokens = match
    read = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[0]))
    for response, template, method in [
        (read, "/matches/{match_id}", "get"),
        (
            stack.match.get(
                f"/matches/{match_id}",
                headers={**auth(tokens[0]), "If-None-Match": read.headers["etag"]},
            ),
            "/matches/{match_id}",
            "get",
        ),
        (stack.match.get("/matches/no-such-match"), "/matches/{match_id}", "get"),
        (stranger.get(f"{stack.lobby.base_url}/tables"), "/tables", "get"),
        (stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}), "/tables", "post"),
        (stack.lobby.post("/tables", json={"game": 7}), "/tables", "post"),
    ]:
        assert "ratelimit" in response.headers and "ratelimit-policy" in response.headers
        headers = declared(template, method, response.status_code)["headers"]
        assert {"RateLimit", "RateLimit-Policy"} <= set(headers), (template, response.status_code)
        if response.status_code == 304:
            assert {"ETag", "Cache-Control", "Vary"} <= set(headers)
            assert {"etag", "cache-control", "vary"} <= set(response.headers)


def test_a_matchs_events_page_by_cursor_to_a_null_end(
    stack: Stack, match: tuple[str, list[str]]
) -> None:
    match_id, _ = match
    pages, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = stack.match.get(f"/matches/{match_id}/events", params=params).json()
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    versions = [item["version"] for page in pages for item in page["items"]]
    whole = stack.match.get(f"/matches/{match_id}/events").json()
    assert versions == [item["version"] for item in whole["items"]]
    assert len(pages) > 1
    answer = stack.match.get(f"/matches/{match_id}/events", params={"cursor": "nope"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"].endswith("/bad-cursor")
    # given both, the later position counts (no schema can say they exclude each other)
    for after in (1, versions[-1]):
        both = {"cursor": pages[0]["next_cursor"], "after": after}
        answer = stack.match.get(f"/matches/{match_id}/events", params=both)
        assert answer.status_code == 200, answer.text
        start = max(int(pages[0]["next_cursor"]), after)
        assert [item["version"] for item in answer.json()["items"]] == [
            version for version in versions if version > start
        ]
