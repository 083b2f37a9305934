"""Carcassonne through the running services: a whole 3-player match, replayed from its log."""

from __future__ import annotations

import random

import msgspec
import psycopg
import pytest

from services.rules.games.carcassonne import GAME as CARCASSONNE
from tests.e2e.conftest import Stack
from tests.e2e.play import open_table, play_to_end

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


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

    exported = stack.match.get(f"/matches/{match_id}/export").json()
    assert exported["players"] == ["player0", "player1", "player2"]
    assert exported["turns"][0] == {"kind": "start", "tile": "D", "x": 0, "y": 0, "rotation": 0}
    imported = stack.match.post(
        "/matches/import", json={"game": "carcassonne", "document": exported}
    )
    assert imported.status_code == 201, imported.text
    assert imported.json()["match"]["result"] == final["result"]


def test_match_with_the_messengers_plays_to_the_end(stack: Stack, database_url: str) -> None:
    match_id, tokens = open_table(stack, "carcassonne", 3, {"messengers": True}, seed=77)
    public_setup = stack.match.get(f"/matches/{match_id}/events").json()["items"]
    assert all(item["data"].get("stack") is None for item in public_setup)
    shuffled = [item["data"] for item in public_setup if item["type"] == "MessagesShuffled"]
    assert shuffled and shuffled[0]["order"] is None and shuffled[0]["size"] == 8

    final = play_to_end(stack, match_id, tokens, random.Random(6))

    assert final["status"] == "finished"
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select type, data from events where stream_id = %s order by version",
            (f"match-{match_id}",),
        ).fetchall()
    assert "FiguresSummed" in {row[0] for row in rows}
    decoder = msgspec.json.Decoder(CARCASSONNE.event_type)
    replayed = CARCASSONNE.fold([decoder.decode(bytes(row[1])) for row in rows])
    assert CARCASSONNE.result(replayed).scores == final["result"]["scores"]
    exported = stack.match.get(f"/matches/{match_id}/export").json()
    assert exported["messengers"] is True and exported["format_version"] == 2
    imported = stack.match.post(
        "/matches/import", json={"game": "carcassonne", "document": exported}
    )
    assert imported.status_code == 201, imported.text
    copy = imported.json()["match"]
    assert copy["result"] == final["result"]
    again = stack.match.get(f"/matches/{imported.json()['match_id']}/export").json()
    assert again["turns"] == exported["turns"]


def test_match_with_both_expansions_and_six_players_plays_to_the_end(
    stack: Stack, database_url: str
) -> None:
    """Inns & Cathedrals, Traders & Builders and The Messengers through the API: their
    options, pieces (PlaceTile.piece) and view, the log folding to the result, and the turn
    list round trip."""
    options = {"inns_cathedrals": True, "traders_builders": True, "messengers": True}
    match_id, tokens = open_table(stack, "carcassonne", 6, options, seed=36)
    view = stack.match.get(f"/matches/{match_id}").json()["view"]
    assert view["pieces"]["supply"][5] == {"large_follower": 1, "builder": 1, "pig": 1}

    final = play_to_end(stack, match_id, tokens, random.Random(36))

    assert final["status"] == "finished" and len(final["result"]["scores"]) == 6
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select type, data from events where stream_id = %s order by version",
            (f"match-{match_id}",),
        ).fetchall()
    assert {"ExpansionsInPlay", "TilePlaced", "FiguresSummed"} <= {row[0] for row in rows}
    decoder = msgspec.json.Decoder(CARCASSONNE.event_type)
    replayed = CARCASSONNE.fold([decoder.decode(bytes(row[1])) for row in rows])
    assert CARCASSONNE.result(replayed).scores == final["result"]["scores"]
    exported = stack.match.get(f"/matches/{match_id}/export").json()
    assert exported["inns_cathedrals"] is True and exported["traders_builders"] is True
    imported = stack.match.post(
        "/matches/import", json={"game": "carcassonne", "document": exported}
    )
    assert imported.status_code == 201, imported.text
    assert imported.json()["match"]["result"] == final["result"]
