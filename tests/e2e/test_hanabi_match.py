"""Hanabi through the running services: whole matches, retries, conflicts, hidden information."""

from __future__ import annotations

import random
import uuid
from typing import Any

import msgspec
import psycopg
import pytest

from services.rules.games.hanabi import GAME as HANABI
from services.rules.games.hanabi.rules import final_score
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table, play_to_end

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


def stored_events(database_url: str, match_id: str) -> list[Any]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select data from events where stream_id = %s order by version", (f"match-{match_id}",)
        ).fetchall()
    decoder = msgspec.json.Decoder(HANABI.event_type)
    return [decoder.decode(bytes(row[0])) for row in rows]


def all_events(stack: Stack, match_id: str, token: str | None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    after = 0
    while True:
        page = stack.match.get(
            f"/matches/{match_id}/events",
            params={"after": after, "limit": 7},
            headers=auth(token) if token else {},
        )
        assert page.status_code == 200, page.text
        body = page.json()
        items += body["items"]
        if body["next_after"] is None:
            return items
        after = body["next_after"]


@pytest.mark.parametrize("players", [2, 5])
def test_whole_match_from_table_to_score_and_replay(
    stack: Stack, database_url: str, players: int
) -> None:
    match_id, tokens = open_table(stack, "hanabi", players)
    final = play_to_end(stack, match_id, tokens, random.Random(players))

    assert final["status"] == "finished" and final["to_move"] == []
    score = final["result"]["scores"][0]
    assert final["result"]["scores"] == [score] * players
    assert final["view"]["score"] == (0 if final["result"]["reason"] == "strike_out" else score)

    replayed = HANABI.fold(stored_events(database_url, match_id))
    assert HANABI.result(replayed) is not None
    assert final_score(replayed) == score
    assert replayed.end_reason == final["result"]["reason"]

    log = all_events(stack, match_id, None)
    assert [item["version"] for item in log] == list(range(1, final["version"] + 1))


def test_retry_with_same_key_moves_once_and_stale_version_conflicts(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=7)
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[0])).json()
    move = {"game": "hanabi", "expected_version": legal["version"], "action": legal["actions"][0]}
    headers = {**auth(tokens[0]), "Idempotency-Key": "retry-me"}

    first = stack.match.post(f"/matches/{match_id}/actions", json=move, headers=headers)
    again = stack.match.post(f"/matches/{match_id}/actions", json=move, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    after = stack.match.get(f"/matches/{match_id}").json()
    assert after["version"] == first.json()["version"]
    assert after["to_move"] == [1]

    other = {**move, "action": legal["actions"][-1]}
    reused = stack.match.post(f"/matches/{match_id}/actions", json=other, headers=headers)
    assert reused.status_code == 422
    assert reused.json()["type"].endswith("/idempotency-key-reused")

    stale = stack.match.post(
        f"/matches/{match_id}/actions",
        json=move,
        headers={**auth(tokens[1]), "Idempotency-Key": uuid.uuid4().hex},
    )
    assert stale.status_code == 409
    assert stale.headers["content-type"].startswith("application/problem+json")
    assert stale.json()["type"].endswith("/stale-version")
    assert stack.match.get(f"/matches/{match_id}").json()["version"] == after["version"]


def test_bad_requests_get_problems_and_change_nothing(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2)
    version = stack.match.get(f"/matches/{match_id}").json()["version"]
    url = f"/matches/{match_id}/actions"
    cases = [
        (
            stack.match.post(
                url,
                json={
                    "game": "hanabi",
                    "expected_version": version,
                    "action": {"type": "PlayCard", "card": 0},
                },
            ),
            401,
        ),
        (
            stack.match.post(
                url,
                json={
                    "game": "hanabi",
                    "expected_version": version,
                    "action": {"type": "PlayCard", "card": 0},
                },
                headers=auth("not-a-token"),
            ),
            403,
        ),
        (
            stack.match.post(
                url,
                content=b"{not json",
                headers={**auth(tokens[0]), "content-type": "application/json"},
            ),
            400,
        ),
        (
            stack.match.post(
                url, json={"game": "hanabi", "expected_version": version}, headers=auth(tokens[0])
            ),
            400,
        ),
        (
            stack.match.post(
                url,
                json={
                    "game": "hanabi",
                    "expected_version": version,
                    "action": {"type": "PlayCard", "card": 0},
                },
                headers=auth(tokens[1]),
            ),
            422,
        ),
        (
            stack.match.post(
                url,
                json={"game": "hanabi", "expected_version": version, "action": {"type": "Fly"}},
                headers=auth(tokens[0]),
            ),
            400,  # not one of Hanabi's actions: the move's schema refuses it
        ),
        (stack.match.get("/matches/nope"), 404),
        (stack.lobby.post("/tables", json={"game": "hanabi", "seats": 9}), 422),
        (stack.lobby.post("/tables", json={"game": "chess", "seats": 2}), 404),
        (
            stack.lobby.post(
                "/tables", json={"game": "hanabi", "seats": 2, "options": {"suits": 7}}
            ),
            422,
        ),
    ]
    for response, status in cases:
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert (
            problem["status"] == status
            and problem["type"].startswith("https://")
            and problem["title"]
        )
    assert stack.match.get(f"/matches/{match_id}").json()["version"] == version


def test_no_seat_ever_sees_its_own_cards_and_nobody_the_deck(
    stack: Stack, database_url: str
) -> None:
    match_id, tokens = open_table(stack, "hanabi", 3, seed=11)
    rng = random.Random(3)
    for _ in range(25):
        match = stack.match.get(f"/matches/{match_id}").json()
        if match["status"] == "finished":
            break
        seat = match["to_move"][0]
        legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[seat]))
        safe = [a for a in legal.json()["actions"] if a["type"] != "PlayCard"]
        action = rng.choice(safe)  # no misplays: the match must still run when we look
        stack.match.post(
            f"/matches/{match_id}/actions",
            json={"game": "hanabi", "expected_version": match["version"], "action": action},
            headers=auth(tokens[seat]),
        )
    deck = stored_events(database_url, match_id)[0].deck

    for seat, token in enumerate(tokens):
        view = stack.match.get(f"/matches/{match_id}", headers=auth(token)).json()["view"]
        assert view["undrawn"] is None and "deck" not in view
        for holder, hand in enumerate(view["hands"]):
            for card in hand:
                hidden = holder == seat
                assert (card["suit"] is None) == hidden and (card["rank"] is None) == hidden
        for item in all_events(stack, match_id, token):
            data = item["data"]
            assert "deck" not in data
            if data["type"] == "CardsDealt":
                assert all(card.get("suit") is None for card in data["hands"][seat])
            if data["type"] == "CardDrawn" and data["seat"] == seat:
                assert data.get("suit") is None and data.get("rank") is None
    spectator = stack.match.get(f"/matches/{match_id}").json()["view"]
    assert all(card["suit"] is None for hand in spectator["hands"] for card in hand)
    assert len(deck) == 50


def test_same_seed_same_deal(stack: Stack, database_url: str) -> None:
    first, _ = open_table(stack, "hanabi", 2, seed=424242)
    second, _ = open_table(stack, "hanabi", 2, seed=424242)
    third, _ = open_table(stack, "hanabi", 2, seed=424243)
    deal = [stored_events(database_url, match_id)[0].deck for match_id in (first, second, third)]
    assert deal[0] == deal[1] != deal[2]


def test_export_then_import_replays_the_same_game(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=5)
    running = stack.match.get(f"/matches/{match_id}/export")
    assert running.status_code == 409
    final = play_to_end(stack, match_id, tokens, random.Random(9))
    exported = stack.match.get(f"/matches/{match_id}/export")
    assert exported.status_code == 200, exported.text
    document = exported.json()
    assert {"players", "deck", "actions"} <= set(document)
    assert len(document["deck"]) == 50

    imported = stack.match.post("/matches/import", json={"game": "hanabi", "document": document})
    assert imported.status_code == 201, imported.text
    copy = imported.json()["match"]
    assert copy["status"] == "finished"
    assert copy["result"] == final["result"]
    assert copy["version"] == final["version"]


def test_the_answer_to_a_move_carries_the_movers_view_and_the_next_actions_by_version(
    stack: Stack,
) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=5)
    start = stack.match.get(f"/matches/{match_id}").json()
    mover = start["to_move"][0]
    url = f"/matches/{match_id}/actions"
    legal = stack.match.get(url, headers=auth(tokens[mover])).json()["actions"]
    quiet = next(action for action in legal if action["type"] != "PlayCard")
    move = {"game": "hanabi", "expected_version": start["version"], "action": quiet}
    answer = stack.match.post(url, json=move, headers=auth(tokens[mover])).json()

    views_asked = _views_asked(stack)
    shown = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[mover])).json()
    assert answer["view"] == shown["view"], "the mover's view, as getMatch shows it"
    assert _views_asked(stack) == views_asked, "the view at that version came from memory"
    theirs = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[1 - mover])).json()
    assert all(card["suit"] is None for card in theirs["view"]["hands"][1 - mover])
    assert all(card["suit"] is not None for card in theirs["view"]["hands"][mover])
    assert _views_asked(stack) == views_asked + 1, "another seat's view is its own"
    assert all(card["suit"] is None for card in answer["view"]["hands"][mover])
    assert all(card["suit"] is not None for card in answer["view"]["hands"][1 - mover])
    assert answer["to_move"] == [1 - mover] and answer["legal_actions"] == []

    other = auth(tokens[1 - mover])
    now = stack.match.get(url, headers=other).json()
    at_version = stack.match.get(url, params={"version": answer["version"]}, headers=other)
    assert at_version.json() == now and now["version"] == answer["version"]
    earlier = stack.match.get(url, params={"version": start["version"]}, headers=other).json()
    assert earlier == now, "a version the server no longer holds gets the actions now"
    mine = stack.match.get(url, params={"version": answer["version"]}, headers=auth(tokens[mover]))
    assert mine.json()["actions"] == [], "not to move at that version: nothing to do"


def _views_asked(stack: Stack) -> float:
    """How many views the match service has asked the rules service for so far."""
    metrics = stack.match.get("/metrics").text
    prefix = 'playtable_rules_request_duration_seconds_count{request="ShowView"}'
    counts = [line.split()[-1] for line in metrics.splitlines() if line.startswith(prefix)]
    return float(counts[0]) if counts else 0.0
