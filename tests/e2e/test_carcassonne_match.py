"""Carcassonne through the running services: a whole 3-player match, replayed from its log."""

from __future__ import annotations

import random

import msgspec
import psycopg
import pytest

from services.rules.games.carcassonne import GAME as CARCASSONNE
from tests.e2e.conftest import Stack
from tests.e2e.play import open_table, play_to_end

pytestmark = pytest.mark.e2e


def test_whole_three_player_match_and_replay(stack: Stack, database_url: str) -> None:
    match_id, tokens = open_table(stack, "carcassonne", 3, seed=2024)
    running = stack.match.get(f"/matches/{match_id}").json()
    assert running["status"] == "running"
    assert "stack" not in running["view"]
    first = stack.match.get(f"/matches/{match_id}/events", params={"limit": 1}).json()["items"][0]
    assert first["data"]["type"] == "StackShuffled" and first["data"]["stack"] is None

    final = play_to_end(stack, match_id, tokens, random.Random(3))

    assert final["status"] == "finished"
    scores = final["result"]["scores"]
    assert len(scores) == 3 and max(scores) > 0
    assert final["result"]["winners"] == [s for s in range(3) if scores[s] == max(scores)]
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select data from events where stream_id = %s order by version", (f"match-{match_id}",)
        ).fetchall()
    decoder = msgspec.json.Decoder(CARCASSONNE.event_type)
    replayed = CARCASSONNE.fold([decoder.decode(bytes(row[0])) for row in rows])
    assert CARCASSONNE.result(replayed).scores == scores
