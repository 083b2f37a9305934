"""Replays through the running services: every version as it was seen, and ``verify``."""

from __future__ import annotations

import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from tests.conftest import fresh_database
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table

pytestmark = pytest.mark.e2e

SNAPSHOT_EVERY = 32  # the default ``snapshot_every`` setting


@pytest.fixture(scope="module")
def database_url(postgres_server_url: str) -> Iterator[str]:
    """This module's own database: ``verify`` checks every match of it, and other modules'
    tests leave matches that are not whole on purpose (a match row without its events)."""
    with fresh_database(postgres_server_url) as url:
        yield url


@dataclass
class PlayedMatch:
    match_id: str
    tokens: list[str]
    seen: dict[int, dict[int | None, dict[str, Any]]]
    """At each version reached by a move: GET /matches/{id} as the spectator and every seat."""
    final: dict[str, Any]


def look(stack: Stack, match_id: str, tokens: list[str]) -> dict[int | None, dict[str, Any]]:
    seen: dict[int | None, dict[str, Any]] = {None: stack.match.get(f"/matches/{match_id}").json()}
    for seat, token in enumerate(tokens):
        seen[seat] = stack.match.get(f"/matches/{match_id}", headers=auth(token)).json()
    return seen


def replay(
    stack: Stack, match_id: str, version: int, token: str | None = None, full: bool = False
) -> Any:
    params: dict[str, Any] = {"version": version}
    if full:
        params["full"] = "true"
    return stack.match.get(
        f"/matches/{match_id}/replay", params=params, headers=auth(token) if token else {}
    )


def own_cards_hidden(view: dict[str, Any], seat: int) -> bool:
    return all(card["suit"] is None and card["rank"] is None for card in view["hands"][seat])


def pick(rng: random.Random, legal: dict[str, Any]) -> dict[str, Any]:
    """A random legal action, rarely a Hanabi card play, so matches last till the deck ends."""
    actions = legal["actions"]
    cautious = [action for action in actions if action["type"] != "PlayCard"]
    return rng.choice(cautious if cautious and rng.random() < 0.9 else actions)


def play_and_record(
    stack: Stack, game: str, players: int, seed: int, options: dict[str, Any] | None = None
) -> PlayedMatch:
    """Play a random match to the end, recording every view after every move; while it runs,
    check that full replays are refused and that seats never see their own Hanabi cards."""
    match_id, tokens = open_table(stack, game, players, options, seed=seed)
    rng = random.Random(seed)
    seen: dict[int, dict[int | None, dict[str, Any]]] = {}
    while True:
        views = look(stack, match_id, tokens)
        match = views[None]
        seen[match["version"]] = views
        if match["status"] == "finished":
            return PlayedMatch(match_id, tokens, seen, match)
        refused = replay(stack, match_id, match["version"], full=True)
        assert refused.status_code == 409, refused.text
        assert refused.json()["type"].endswith("/match-running")
        if game == "hanabi":
            for seat, token in enumerate(tokens):
                now = replay(stack, match_id, match["version"], token)
                assert now.status_code == 200, now.text
                assert own_cards_hidden(now.json()["view"], seat)
        seat = rng.choice(match["to_move"])
        legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[seat]))
        moved = stack.match.post(
            f"/matches/{match_id}/actions",
            json={
                "game": match["game"],
                "expected_version": match["version"],
                "action": pick(rng, legal.json()),
            },
            headers={**auth(tokens[seat]), "Idempotency-Key": uuid.uuid4().hex},
        )
        assert moved.status_code == 201, moved.text


@pytest.fixture(scope="module")
def hanabi(stack: Stack) -> PlayedMatch:
    return play_and_record(stack, "hanabi", 2, seed=21)


@pytest.fixture(scope="module")
def carcassonne(stack: Stack) -> PlayedMatch:
    return play_and_record(stack, "carcassonne", 2, seed=22)


@pytest.fixture(scope="module")
def messengers(stack: Stack) -> PlayedMatch:
    return play_and_record(stack, "carcassonne", 2, seed=25, options={"messengers": True})


@pytest.fixture(scope="module")
def dingo(stack: Stack) -> PlayedMatch:
    return play_and_record(stack, "dingo", 3, seed=23)


@pytest.fixture(scope="module")
def breaking_news(stack: Stack) -> PlayedMatch:
    return play_and_record(stack, "breaking_news", 3, seed=24)


@pytest.mark.parametrize("game", ["hanabi", "carcassonne", "messengers", "dingo", "breaking_news"])
def test_every_version_replays_as_it_was_seen(
    stack: Stack, request: pytest.FixtureRequest, game: str
) -> None:
    """Every version, asked in a random order (stepping back and forth across snapshot spans,
    so some answers are computed and others come from memory), shows what was seen then."""
    played: PlayedMatch = request.getfixturevalue(game)
    first = min(played.seen)
    last = played.final["version"]
    assert last > 2 * SNAPSHOT_EVERY
    order = list(range(1, last + 1))
    random.Random(game).shuffle(order)
    for version in order:
        as_spectator = replay(stack, played.match_id, version)
        as_seat = replay(stack, played.match_id, version, played.tokens[1])
        if version < first:  # still being set up: never shown to anyone
            assert as_spectator.status_code == as_seat.status_code == 404
            continue
        assert as_spectator.status_code == as_seat.status_code == 200, as_spectator.text
        assert as_spectator.json()["version"] == as_seat.json()["version"] == version
        assert as_spectator.json()["state"] is None and as_seat.json()["you"] == 1
        if version not in played.seen:  # between the events of one move
            continue
        for seat, replayed in ((None, as_spectator.json()), (1, as_seat.json())):
            then = played.seen[version][seat]
            assert replayed["view"] == then["view"], (version, seat)
            assert replayed["to_move"] == then["to_move"]
            assert replayed["status"] == then["status"]
            assert replayed["result"] == then["result"]
    for version in (0, last + 1):
        assert replay(stack, played.match_id, version).status_code in {400, 404}


def test_a_finished_match_replays_in_full(stack: Stack, hanabi: PlayedMatch) -> None:
    middle = sorted(hanabi.seen)[len(hanabi.seen) // 2]
    shown = replay(stack, hanabi.match_id, middle, full=True)
    assert shown.status_code == 200, shown.text
    body = shown.json()
    assert body["view"] == hanabi.seen[middle][None]["view"] and body["status"] == "running"
    state = body["state"]
    assert len(state["deck"]) == 50
    assert [len(hand) for hand in state["hands"]] == [
        len(hand) for hand in hanabi.seen[middle][None]["view"]["hands"]
    ]
    without = replay(stack, hanabi.match_id, middle, hanabi.tokens[0])
    assert without.json()["state"] is None
    assert own_cards_hidden(without.json()["view"], 0)


def test_snapshots_are_stored_at_creation_and_every_interval(
    database_url: str, carcassonne: PlayedMatch
) -> None:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select version from match_snapshots where match_id = %s order by version",
            (carcassonne.match_id,),
        ).fetchall()
    versions = [version for (version,) in rows]
    assert versions[0] == min(carcassonne.seen)
    intervals = [version // SNAPSHOT_EVERY for version in versions[1:]]
    assert intervals == list(range(1, carcassonne.final["version"] // SNAPSHOT_EVERY + 1))


def verify(stack: Stack) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.operator.cli", "verify"],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_verify_finds_altered_snapshots(
    stack: Stack, database_url: str, hanabi: PlayedMatch, carcassonne: PlayedMatch
) -> None:
    clean = verify(stack)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert " 0 with differences" in clean.stdout

    with psycopg.connect(database_url, autocommit=True) as conn:
        (other_state,) = conn.execute(
            "select state from matches where match_id = %s", (carcassonne.match_id,)
        ).fetchone()
        (version, own_state) = conn.execute(
            "select version, state from match_snapshots where match_id = %s"
            " order by version desc limit 1",
            (hanabi.match_id,),
        ).fetchone()
        set_snapshot = (
            "update match_snapshots set state = %(state)s"
            " where match_id = %(match)s and version = %(version)s"
        )
        conn.execute("update matches set to_move = '{1}' where match_id = %s", (hanabi.match_id,))
        conn.execute(
            set_snapshot, {"state": other_state, "match": hanabi.match_id, "version": version}
        )
        try:
            altered = verify(stack)
        finally:
            conn.execute(
                "update matches set to_move = '{}' where match_id = %s", (hanabi.match_id,)
            )
            conn.execute(
                set_snapshot, {"state": own_state, "match": hanabi.match_id, "version": version}
            )
    assert altered.returncode == 1
    lines = altered.stdout.splitlines()
    assert f"{hanabi.match_id}: to_move [1], but the fold says []" in lines
    assert f"{hanabi.match_id}: snapshot at version {version} differs from the fold" in lines
    assert not any(line.startswith(carcassonne.match_id) for line in lines)
    assert "1 with differences" in lines[-1]
