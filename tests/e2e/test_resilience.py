"""The platform under trouble: rules workers come and go, Redis forgets, events still flow."""

from __future__ import annotations

import random
import threading
import time

import httpx
import msgspec
import pytest
import redis

from shared.domain.messages import EventEnvelope
from shared.infra.settings import stream_key
from tests.e2e.conftest import Stack, free_port, wait_healthy
from tests.e2e.play import auth, open_table, play_to_end
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def move_once(stack: Stack, match_id: str, tokens: list[str], rng: random.Random) -> int:
    match = stack.match.get(f"/matches/{match_id}").json()
    seat = match["to_move"][0]
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[seat]))
    assert legal.status_code == 200, legal.text
    quiet = [a for a in legal.json()["actions"] if a["type"] != "PlayCard"]
    moved = stack.match.post(
        f"/matches/{match_id}/actions",
        json={
            "game": match["game"],
            "expected_version": match["version"],
            "action": rng.choice(quiet),
        },
        headers=auth(tokens[seat]),
    )
    assert moved.status_code == 201, moved.text
    return moved.json()["version"]


def serving_metrics(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def test_any_rules_worker_serves_and_losing_one_loses_nothing(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=99)
    rng = random.Random(1)
    metrics_port = free_port()  # it serves its metrics once it is about to read requests
    stack.start("rules", name="rules-2", PLAYTABLE_METRICS_PORT=str(metrics_port))
    wait_until(lambda: serving_metrics(metrics_port), what="the second rules worker started")
    move_once(stack, match_id, tokens, rng)
    stack.stop("rules")  # the first worker goes away; the second carries on alone
    for _ in range(3):
        move_once(stack, match_id, tokens, rng)
    stack.start("rules")
    stack.stop("rules-2")
    version = move_once(stack, match_id, tokens, rng)
    assert stack.match.get(f"/matches/{match_id}").json()["version"] == version


def test_redis_losing_everything_loses_no_move(stack: Stack, redis_url: str) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=5)
    rng = random.Random(2)
    before = move_once(stack, match_id, tokens, rng)
    client = redis.Redis.from_url(redis_url)
    prefix = stack.env["PLAYTABLE_STREAM_PREFIX"]
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)
    deadline = time.monotonic() + 30
    while True:  # consumer groups are recreated by the services themselves
        response = stack.match.get(f"/matches/{match_id}")
        if response.status_code == 200:
            break
        assert response.status_code == 503 and time.monotonic() < deadline, response.text
        time.sleep(0.2)
    assert response.json()["version"] == before
    after = move_once(stack, match_id, tokens, rng)
    assert after > before


def test_published_events_arrive_in_order_once_and_redacted(stack: Stack, redis_url: str) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=123)
    final = play_to_end(stack, match_id, tokens, random.Random(4))
    client = redis.Redis.from_url(redis_url)
    topic = stream_key(stack.env["PLAYTABLE_STREAM_PREFIX"], "match-events")
    decoder = msgspec.json.Decoder(EventEnvelope)
    deadline = time.monotonic() + 30
    while True:
        envelopes = [
            envelope
            for _, fields in client.xrange(topic)
            if (envelope := decoder.decode(fields[b"m"])).stream_id == f"match-{match_id}"
        ]
        if envelopes and envelopes[-1].type == "MatchFinished":
            break
        assert time.monotonic() < deadline, "the match's events were not all published"
        time.sleep(0.1)
    game_events = [envelope for envelope in envelopes if envelope.type != "MatchFinished"]
    assert [e.version for e in game_events] == list(range(1, final["version"] + 1))
    for envelope in game_events:
        data = msgspec.json.decode(envelope.data)
        assert "deck" not in data
        if data["type"] == "CardsDealt":
            assert all(card.get("suit") is None for hand in data["hands"] for card in hand)
        if data["type"] == "CardDrawn":
            assert data.get("suit") is None
    finished = msgspec.json.decode(envelopes[-1].data)
    assert finished["result"] == final["result"]


def test_two_match_processes_serve_one_match_without_stale_answers(stack: Stack) -> None:
    """Scale-out: moves alternate between two match processes; each read is current."""
    port = free_port()
    second = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    wait_healthy(second, stack.start("match", name="match-2", PLAYTABLE_MATCH_PORT=str(port)))
    try:
        match_id, tokens = open_table(stack, "hanabi", 2, seed=17)
        servers = [stack.match, second]
        rng = random.Random(5)
        for move in range(30):
            server = servers[move % 2]
            match = server.get(f"/matches/{match_id}").json()
            if match["status"] == "finished":
                break
            assert match["version"] >= move + 1
            seat = match["to_move"][0]
            legal = server.get(f"/matches/{match_id}/actions", headers=auth(tokens[seat])).json()
            assert legal["version"] == match["version"] and legal["actions"]
            quiet = [a for a in legal["actions"] if a["type"] != "PlayCard"] or legal["actions"]
            moved = server.post(
                f"/matches/{match_id}/actions",
                json={
                    "game": match["game"],
                    "expected_version": match["version"],
                    "action": rng.choice(quiet),
                },
                headers=auth(tokens[seat]),
            )
            assert moved.status_code == 201, moved.text
            other = servers[(move + 1) % 2].get(f"/matches/{match_id}").json()
            assert other["version"] == moved.json()["version"]
    finally:
        stack.stop("match-2")
        second.close()


def seated_table(stack: Stack, game: str = "hanabi", players: int = 2) -> tuple[str, list[str]]:
    table_id = stack.lobby.post("/tables", json={"game": game, "seats": players}).json()["table_id"]
    tokens = [
        stack.lobby.post(f"/tables/{table_id}/seats", json={"name": f"p{seat}"}).json()["token"]
        for seat in range(players)
    ]
    return table_id, tokens


def test_a_table_started_while_rules_are_down_gets_its_match_though_redis_forgets(
    stack: Stack, redis_url: str
) -> None:
    """The start answers 202 and the match shows ``creating``; Redis then loses the command,
    and the rules come back after longer than a rules call waits: the match exists within 5 s
    of their return, and nothing was dead-lettered."""
    table_id, tokens = seated_table(stack)
    stack.stop("rules")
    try:
        started = stack.lobby.post(f"/tables/{table_id}/start", headers=auth(tokens[1]))
        assert started.status_code == 202, started.text
        match_id = started.json()["match_id"]
        assert started.headers["Location"] == f"/matches/{match_id}"
        creating = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[1]))
        assert creating.status_code == 200, creating.text
        assert creating.json()["status"] == "creating" and creating.json()["you"] == 1
        assert creating.json()["view"] is None and creating.json()["players"] == ["p0", "p1"]
        early = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[0]))
        assert early.status_code == 409 and early.json()["type"].endswith("/match-creating")
        assert early.headers["Retry-After"] == "1"
        stranger = stack.match.get(f"/matches/{match_id}", headers=auth("not-a-seat"))
        assert stranger.status_code == 403

        client = redis.Redis.from_url(redis_url)
        prefix = stack.env["PLAYTABLE_STREAM_PREFIX"]
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)
        time.sleep(6)  # longer than a rules call waits: every attempt so far has failed
    finally:
        stack.start("rules")

    def created() -> str | None:
        status = stack.match.get(f"/matches/{match_id}").json()["status"]
        return None if status == "creating" else status

    # the rules back, the creation's next attempt succeeds
    status = wait_until(created, what="the match created once the rules were back")
    assert status == "running"
    again = stack.lobby.post(f"/tables/{table_id}/start", headers=auth(tokens[1]))
    assert again.status_code == 409  # started once: no second match
    dead = stream_key(stack.env["PLAYTABLE_STREAM_PREFIX"], "commands:match") + ":dead"
    assert redis.Redis.from_url(redis_url).xlen(dead) == 0


def test_start_retried_with_its_key_answers_the_same_match(stack: Stack) -> None:
    table_id, tokens = seated_table(stack)
    headers = {**auth(tokens[0]), "Idempotency-Key": "start-1"}
    first = stack.lobby.post(f"/tables/{table_id}/start", headers=headers)
    second = stack.lobby.post(f"/tables/{table_id}/start", headers=headers)
    assert first.status_code == second.status_code == 201
    assert first.json()["match_id"] == second.json()["match_id"]


def test_a_match_read_while_its_table_starts_is_creating_or_there_never_missing(
    stack: Stack,
) -> None:
    """A client that sees the table's ``match_id`` reads the match at once, as the web client
    does: each read shows it ``creating`` or running, never 404, across many starts (a read
    that found no row and then the done command once said the match did not exist)."""
    statuses: list[int] = []
    for _ in range(30):
        table_id, tokens = seated_table(stack)
        starting = threading.Thread(
            target=stack.lobby.post,
            args=(f"/tables/{table_id}/start",),
            kwargs={"headers": auth(tokens[0])},
        )
        starting.start()
        while (match_id := stack.lobby.get(f"/tables/{table_id}").json()["match_id"]) is None:
            pass
        while True:
            read = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[1]))
            statuses.append(read.status_code)
            assert read.status_code == 200, read.text
            if read.json()["status"] == "running":
                break
        starting.join()
    assert len(statuses) > 30
