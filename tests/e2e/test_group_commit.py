"""Moves sent at once to one match process: they commit together (group commit), and each
keeps its own guard, answer and idempotency."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


def move_of(stack: Stack, match_id: str, token: str, choice: int) -> dict[str, Any]:
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(token)).json()
    action = legal["actions"][choice]
    return {"game": "hanabi", "expected_version": legal["version"], "action": action}


def test_moves_sent_together_each_keep_their_guard_and_key(stack: Stack) -> None:
    matches = [open_table(stack, "hanabi", 2, seed=seed) for seed in range(8)]
    moves = [move_of(stack, match_id, tokens[0], 0) for match_id, tokens in matches]
    contested = matches[0]
    racer = move_of(stack, contested[0], contested[1][0], -1)
    sends: list[tuple[str, dict[str, Any], dict[str, str]]] = [
        (match_id, move, {**auth(tokens[0]), "Idempotency-Key": uuid.uuid4().hex})
        for (match_id, tokens), move in zip(matches, moves, strict=True)
    ]
    sends.append((contested[0], racer, {**auth(contested[1][0]), "Idempotency-Key": "racer"}))
    sends.append(sends[1])  # the same request twice at once, under one key

    async def send_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=str(stack.match.base_url), headers=stack.match.headers, timeout=10
        ) as client:
            return await asyncio.gather(
                *(
                    client.post(f"/matches/{match_id}/actions", json=move, headers=headers)
                    for match_id, move, headers in sends
                )
            )

    answers = asyncio.run(send_all())

    assert [a.status_code for a in answers[2:8]] == [201] * 6, [a.text for a in answers]
    assert sorted(a.status_code for a in (answers[0], answers[8])) == [201, 409]
    assert answers[1].status_code == answers[9].status_code == 201
    assert answers[1].json() == answers[9].json()
    winner = answers[0] if answers[0].status_code == 201 else answers[8]
    for (match_id, _), answer in zip(matches, [winner, *answers[1:8]], strict=True):
        assert stack.match.get(f"/matches/{match_id}").json()["version"] == answer.json()["version"]
