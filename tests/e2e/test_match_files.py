"""Match files through the running services and the ``playtable`` command: export a match,
import it back, replay it in the terminal, without leaking a running match's hands."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.e2e.conftest import Stack
from tests.e2e.play import open_table, random_move
from tests.unit.shared.domain.test_match_file import FORGED_DEALS, played_file

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]

SNAPSHOT_EVERY = 32  # the default ``snapshot_every`` setting


@dataclass
class Played:
    match_id: str
    tokens: list[str]
    moves: int
    final: dict[str, Any]


def play(stack: Stack, game: str, players: int, seed: int, max_moves: int | None = None) -> Played:
    """Random legal moves until the match ends (or ``max_moves`` were made), counting them."""
    match_id, tokens = open_table(stack, game, players, seed=seed)
    rng = random.Random(seed)
    moves = 0
    while True:
        match = stack.match.get(f"/matches/{match_id}").json()
        if match["status"] == "finished" or moves == max_moves:
            return Played(match_id, tokens, moves, match)
        random_move(stack, match, tokens, rng)
        moves += 1


def playtable(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``playtable`` command as the stack's app (an import is that app's match, which
    another app's key may not read)."""
    return subprocess.run(
        [sys.executable, "-m", "services.operator.cli", *args],
        env={**stack.env, "PLAYTABLE_APP_KEY": stack.app_key},
        capture_output=True,
        text=True,
        timeout=180,
    )


def import_cli(stack: Stack, path: Path, *extra: str) -> str:
    """``playtable import`` one file into the stack; the new match's id."""
    done = playtable(stack, "import", str(path), "--match-url", str(stack.match.base_url), *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"match (\S+) \(", done.stdout)
    assert found, done.stdout
    assert done.stdout.count(" token ") >= 2
    return found.group(1)


def stored_log(database_url: str, match_id: str) -> list[tuple[str, bytes]]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select type, data from events where stream_id = %s order by version",
            (f"match-{match_id}",),
        ).fetchall()
    return [(kind, bytes(data)) for kind, data in rows]


def event_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("  ")]


@pytest.fixture(scope="module")
def dingo(stack: Stack) -> Played:
    return play(stack, "dingo", 3, seed=31)


def test_an_exported_match_imports_back_the_same(
    stack: Stack, database_url: str, dingo: Played, tmp_path: Path
) -> None:
    exported = playtable(stack, "export", dingo.match_id, "--out", str(tmp_path))
    assert exported.returncode == 0, exported.stderr
    path = tmp_path / f"{dingo.match_id}.json"
    document = json.loads(path.read_text())
    assert document["format"] == "playtable-match" and document["format_version"] == 1
    assert document["result"] == dingo.final["result"]
    to_stdout = playtable(stack, "export", dingo.match_id, "--out", "-")
    assert json.loads(to_stdout.stdout) == document

    new_id = import_cli(stack, path)
    assert new_id != dingo.match_id
    imported = stack.match.get(f"/matches/{new_id}").json()
    assert imported["status"] == "finished" and imported["result"] == dingo.final["result"]
    assert imported["players"] == dingo.final["players"]
    assert stored_log(database_url, new_id) == stored_log(database_url, dingo.match_id)

    original = playtable(stack, "replay", dingo.match_id, "--full")
    again = playtable(stack, "replay", new_id, "--full")
    assert original.returncode == again.returncode == 0, original.stderr + again.stderr
    assert event_lines(again.stdout) == event_lines(original.stdout)
    assert again.stdout.splitlines()[-1] == original.stdout.splitlines()[-1]
    assert original.stdout.splitlines()[-1].startswith("result: ")


def test_replay_lists_every_move(stack: Stack, dingo: Played) -> None:
    shown = playtable(stack, "replay", dingo.match_id)
    assert shown.returncode == 0, shown.stderr
    turns = [line for line in shown.stdout.splitlines() if line.startswith("turn ")]
    assert len(turns) == dingo.moves
    assert turns[0].startswith("turn 1 · seat ") and "(player" in turns[0]
    assert "viewed as: spectator" in shown.stdout


def test_a_tampered_file_is_refused_and_nothing_stored(
    stack: Stack, dingo: Played, tmp_path: Path
) -> None:
    document = stack.match.get(f"/matches/{dingo.match_id}/export").json()
    assert document["format"] == "playtable-match"  # Dingo has no community format
    document["result"]["winners"] = [seat + 1 for seat in document["result"]["winners"]]
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(document))
    refused = playtable(stack, "import", str(path), "--match-url", str(stack.match.base_url))
    assert refused.returncode == 1
    assert "result" in refused.stderr and "422" in refused.stderr


def test_running_matches_are_not_exported_in_full(stack: Stack, tmp_path: Path) -> None:
    running = play(stack, "dingo", 3, seed=32, max_moves=2)
    assert running.final["status"] == "running"
    exported = playtable(stack, "export", running.match_id, "--out", str(tmp_path))
    assert "skipped" in exported.stderr and not list(tmp_path.iterdir())
    api = stack.match.get(f"/matches/{running.match_id}/export", params={"format": "playtable"})
    assert api.status_code == 409


def test_hanab_live_files_import_back(stack: Stack, database_url: str, tmp_path: Path) -> None:
    hanabi = play(stack, "hanabi", 2, seed=33)
    exported = playtable(
        stack, "export", hanabi.match_id, "--format", "hanab.live", "--out", str(tmp_path)
    )
    assert exported.returncode == 0, exported.stderr
    path = tmp_path / f"{hanabi.match_id}.json"
    document = json.loads(path.read_text())
    assert "deck" in document and "actions" in document
    assert stack.match.get(f"/matches/{hanabi.match_id}/export").json() == document
    new_id = import_cli(stack, path, "--game", "hanabi")
    imported = stack.match.get(f"/matches/{new_id}").json()
    assert imported["result"] == hanabi.final["result"]
    original = stored_log(database_url, hanabi.match_id)
    assert [kind for kind, _ in stored_log(database_url, new_id)] == [kind for kind, _ in original]


@pytest.mark.parametrize("game", ["hanabi", "dingo"])
def test_a_forfeited_match_exports_and_imports_back(
    stack: Stack, database_url: str, game: str
) -> None:
    """A player who leaves ends the match (``MatchForfeited``): its file carries the forfeit,
    and imports back to the same result, which ``playtable verify`` finds consistent."""
    played = play(stack, game, 2, seed=36, max_moves=3)
    left = stack.match.post(
        f"/matches/{played.match_id}/leave", headers={"Authorization": f"Bearer {played.tokens[1]}"}
    )
    assert left.status_code == 200, left.text
    result = left.json()["result"]
    assert result["forfeited"] == [1]
    exported = stack.match.get(f"/matches/{played.match_id}/export", params={"format": "playtable"})
    assert exported.status_code == 200, exported.text
    document = exported.json()
    assert document["result"] == result
    assert document["events"][-1]["type"] == "MatchForfeited"
    imported = stack.match.post("/matches/import", json={"document": document})
    assert imported.status_code == 201, imported.text
    new_id = imported.json()["match_id"]
    match = stack.match.get(f"/matches/{new_id}").json()
    assert match["status"] == "finished" and match["result"] == result
    assert stored_log(database_url, new_id) == stored_log(database_url, played.match_id)
    again = stack.match.get(f"/matches/{new_id}/export", params={"format": "playtable"}).json()
    assert again["events"] == [
        {**event, "recorded_at": mine["recorded_at"]}
        for event, mine in zip(document["events"], again["events"], strict=True)
    ]
    verified = playtable(stack, "verify")
    assert not [
        line for line in verified.stdout.splitlines() if line.startswith((played.match_id, new_id))
    ], verified.stdout[-3000:]


@pytest.mark.parametrize("case", sorted(FORGED_DEALS))
def test_a_forged_deal_is_a_422_problem_and_the_rules_worker_carries_on(
    stack: Stack, case: str
) -> None:
    make, detail = FORGED_DEALS[case]
    refused = stack.match.post("/matches/import", json={"document": make()})
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert detail in refused.json()["detail"]
    imported = stack.match.post("/matches/import", json={"document": played_file("hanabi", 8)})
    assert imported.status_code == 201, imported.text


def test_imported_long_matches_get_snapshots_and_replay(stack: Stack, database_url: str) -> None:
    played = play(stack, "carcassonne", 2, seed=34)
    assert played.final["version"] > 2 * SNAPSHOT_EVERY
    document = stack.match.get(
        f"/matches/{played.match_id}/export", params={"format": "playtable"}
    ).json()
    imported = stack.match.post("/matches/import", json={"document": document})
    assert imported.status_code == 201, imported.text
    new_id = imported.json()["match_id"]
    last = played.final["version"]
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select version from match_snapshots where match_id = %s order by version", (new_id,)
        ).fetchall()
        (first,) = conn.execute(
            "select min(version) from match_snapshots where match_id = %s", (played.match_id,)
        ).fetchone()
    versions = [version for (version,) in rows]
    assert versions == sorted({first, *range(SNAPSHOT_EVERY, last + 1, SNAPSHOT_EVERY), last})
    for version in (first, last // 2, last // 2 + 1, last):
        then = stack.match.get(
            f"/matches/{played.match_id}/replay", params={"version": version}
        ).json()
        now = stack.match.get(f"/matches/{new_id}/replay", params={"version": version}).json()
        assert now["view"] == then["view"] and now["to_move"] == then["to_move"], version


def test_a_spectator_replay_of_a_running_hanabi_match_shows_no_hand(stack: Stack) -> None:
    running = play(stack, "hanabi", 3, seed=35, max_moves=6)
    assert running.final["status"] == "running"
    full = playtable(stack, "replay", running.match_id, "--full")
    assert full.returncode == 2 and "still running" in full.stderr

    spectator = playtable(stack, "replay", running.match_id)
    seat = playtable(stack, "replay", running.match_id, "--seat", "0")
    assert spectator.returncode == seat.returncode == 0, spectator.stderr + seat.stderr
    turns = [line for line in spectator.stdout.splitlines() if line.startswith("turn ")]
    assert len(turns) == running.moves
    for output, hidden_everywhere in ((spectator.stdout, True), (seat.stdout, False)):
        assert "GameStarted" not in output and "deck=[" not in output
        hand_lines = [
            line
            for line in event_lines(output)
            if line.lstrip().startswith(("CardsDealt", "CardDrawn"))
        ]
        assert hand_lines
        shows_a_card = any('"suit":"' in line or 'suit="' in line for line in hand_lines)
        assert shows_a_card is not hidden_everywhere  # seat 0 sees the others' cards
