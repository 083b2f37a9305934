"""The Dingo Ate the Baby and Breaking News through the running services, start to score."""

from __future__ import annotations

import random

import msgspec
import psycopg
import pytest

from services.rules.games import load_games
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table, play_to_end

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


@pytest.mark.parametrize("game_name", ["dingo", "breaking_news"])
def test_whole_three_player_match_hides_hands_and_replays(
    stack: Stack, database_url: str, game_name: str
) -> None:
    game = load_games()[game_name]
    match_id, tokens = open_table(stack, game_name, 3, seed=31)

    spectator_log = stack.match.get(f"/matches/{match_id}/events").json()["items"]
    seat_log = stack.match.get(f"/matches/{match_id}/events", headers=auth(tokens[0])).json()
    with psycopg.connect(database_url) as conn:
        stored = conn.execute(
            "select data from events where stream_id = %s order by version", (f"match-{match_id}",)
        ).fetchall()
    full_setup = msgspec.json.decode(bytes(stored[0][0]))
    assert msgspec.json.encode(spectator_log[0]["data"]) != msgspec.json.encode(full_setup)
    assert msgspec.json.encode(seat_log["items"][0]["data"]) != msgspec.json.encode(full_setup)

    final = play_to_end(stack, match_id, tokens, random.Random(8), max_moves=20_000)

    assert final["status"] == "finished"
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select data from events where stream_id = %s order by version", (f"match-{match_id}",)
        ).fetchall()
    decoder = msgspec.json.Decoder(game.event_type)
    replayed = game.fold([decoder.decode(bytes(row[0])) for row in rows])
    assert msgspec.to_builtins(game.result(replayed)) == final["result"]
