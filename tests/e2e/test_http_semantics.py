"""What HTTP promises beyond the happy path, on the running services: HEAD wherever GET, 405
naming the allowed methods, conditional reads with If-None-Match, bounded idempotency keys."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table

pytestmark = pytest.mark.e2e


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
