"""Drive matches over HTTP like a client app would: tables, seats, then moves to the end."""

from __future__ import annotations

import random
import uuid
from typing import Any

import httpx

from tests.e2e.conftest import Stack


def open_table(
    stack: Stack,
    game: str,
    players: int,
    options: dict[str, Any] | None = None,
    seed: int | None = None,
    hosting: dict[str, Any] | None = None,
) -> tuple[str, list[str]]:
    """Create a table (with ``hosting``, if given: clocks, bots, what a leave does), seat
    everyone, start it; return the match id and the seat tokens."""
    body: dict[str, Any] = {"game": game, "seats": players, "options": options or {}}
    if seed is not None:
        body["seed"] = seed
    if hosting is not None:
        body["hosting"] = hosting
    created = stack.lobby.post("/tables", json=body)
    assert created.status_code == 201, created.text
    table_id = created.json()["table_id"]
    tokens = []
    for seat in range(players):
        joined = stack.lobby.post(f"/tables/{table_id}/seats", json={"name": f"player{seat}"})
        assert joined.status_code == 201, joined.text
        assert joined.json()["seat"] == seat
        tokens.append(joined.json()["token"])
    started = stack.lobby.post(
        f"/tables/{table_id}/start", headers={"Authorization": f"Bearer {tokens[0]}"}
    )
    match_id = started.json()["match_id"]
    started_match(stack, started, token=tokens[0])
    return match_id, tokens


def started_match(
    stack: Stack, started: httpx.Response, token: str | None = None
) -> dict[str, Any]:
    """The match a start answered 201 for: it exists already (a private one: pass a token)."""
    assert started.status_code == 201, started.text
    match_id = started.json()["match_id"]
    assert started.headers["Location"] == f"/matches/{match_id}"
    response = stack.match.get(f"/matches/{match_id}", headers=auth(token) if token else {})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "running"
    return response.json()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def play_to_end(
    stack: Stack, match_id: str, tokens: list[str], rng: random.Random, max_moves: int = 5000
) -> dict[str, Any]:
    """Each seat to move picks a random legal action until the match ends; returns the match."""
    for _ in range(max_moves):
        match = stack.match.get(f"/matches/{match_id}").json()
        if match["status"] == "finished":
            return match
        random_move(stack, match, tokens, rng)
    raise AssertionError(f"match {match_id} did not end in {max_moves} moves")


def random_move(
    stack: Stack, match: dict[str, Any], tokens: list[str], rng: random.Random
) -> dict[str, Any]:
    """A random seat to move makes a random legal move on ``match``; returns the acceptance."""
    match_id = match["match_id"]
    seat = rng.choice(match["to_move"])
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[seat]))
    assert legal.status_code == 200, legal.text
    assert legal.json()["version"] == match["version"]
    action = rng.choice(legal.json()["actions"])
    moved = stack.match.post(
        f"/matches/{match_id}/actions",
        json={"game": match["game"], "expected_version": match["version"], "action": action},
        headers={**auth(tokens[seat]), "Idempotency-Key": uuid.uuid4().hex},
    )
    assert moved.status_code == 201, moved.text
    assert moved.json()["version"] > match["version"]
    return moved.json()
