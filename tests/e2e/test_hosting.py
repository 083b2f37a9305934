"""Hosted play through the API, each service its own process: clocks that run out (and the
policy that follows), players who leave, and seats given back; all recorded in the log."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from shared.domain.hosting import Hosting
from tests.e2e.conftest import Stack, running_stack
from tests.e2e.play import auth
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(database_url: str, redis_url: str) -> Iterator[Stack]:
    """Lobby, match, rules and the clocks service."""
    with running_stack(database_url, redis_url) as running:
        running.start("clocks")
        yield running


def hosted_table(
    stack: Stack, hosting: dict[str, Any], game: str = "hanabi"
) -> tuple[str, list[str]]:
    """A started 2-seat table with ``hosting``: its match id and the seat tokens."""
    created = stack.lobby.post("/tables", json={"game": game, "seats": 2, "hosting": hosting})
    assert created.status_code == 201, created.text
    assert created.json()["hosting"] == complete(hosting)
    table_id = created.json()["table_id"]
    tokens = []
    for seat in range(2):
        joined = stack.lobby.post(f"/tables/{table_id}/seats", json={"name": f"player{seat}"})
        assert joined.status_code == 201, joined.text
        tokens.append(joined.json()["token"])
    started = stack.lobby.post(f"/tables/{table_id}/start", headers=auth(tokens[0]))
    assert started.status_code == 201, started.text
    return started.json()["match_id"], tokens


def complete(hosting: dict[str, Any]) -> dict[str, Any]:
    """``hosting`` as the API shows it back: every field, defaults filled in."""
    return msgspec.to_builtins(msgspec.convert(hosting, Hosting))


def events(stack: Stack, match_id: str, token: str | None = None) -> list[dict[str, Any]]:
    page = stack.match.get(
        f"/matches/{match_id}/events", params={"limit": 500}, headers=auth(token) if token else {}
    )
    assert page.status_code == 200, page.text
    return page.json()["items"]


def wait_finished(stack: Stack, match_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        match = stack.match.get(f"/matches/{match_id}").json()
        return match if match["status"] == "finished" else None

    return wait_until(finished, timeout=timeout_s, what=f"match {match_id} finished")


def move(stack: Stack, match_id: str, token: str) -> dict[str, Any]:
    """The seat's first legal action at the version it is shown."""
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(token)).json()
    moved = stack.match.post(
        f"/matches/{match_id}/actions",
        json={
            "game": legal["game"],
            "expected_version": legal["version"],
            "action": legal["actions"][0],
        },
        headers={**auth(token), "Idempotency-Key": uuid.uuid4().hex},
    )
    assert moved.status_code == 201, moved.text
    return moved.json()


def test_every_view_shows_the_clocks_and_a_move_hands_them_on(stack: Stack) -> None:
    hosting = {"clock": {"bank_s": 60, "increment_s": 2}, "on_timeout": "forfeit"}
    began_ms = time.time() * 1000  # the services share this machine's clock
    match_id, tokens = hosted_table(stack, hosting)
    match = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[0])).json()
    looked_ms = time.time() * 1000
    clock = match["clock"]
    assert match["hosting"] == complete(hosting)
    assert clock["control"] == complete(hosting)["clock"] and clock["on_clock"] == match["to_move"]
    # bounds of what was measured here, not of how fast this machine is (1 ms: rounding)
    assert began_ms - 1 <= clock["server_time_ms"] <= looked_ms + 1
    running_s = clock["server_time_ms"] - began_ms  # the clock started after ``began_ms``
    assert 60_000 - running_s - 1 <= clock["remaining_ms"][clock["on_clock"][0]] <= 60_000
    mover = match["to_move"][0]
    time.sleep(0.3)  # the time to charge the mover (the point of the test)
    accepted = move(stack, match_id, tokens[mover])
    moved_ms = time.time() * 1000
    after = accepted["clock"]
    assert after["on_clock"] == [1 - mover]
    spent = 60_000 + 2_000 - after["remaining_ms"][mover]
    # charged the time it took (at least the pause, at most since the table was made),
    # credited the increment
    assert 300 <= spent <= moved_ms - began_ms + 1, (spent, moved_ms - began_ms)
    recorded = [e for e in accepted["events"] if e["type"] == "ClockUpdated"]
    assert recorded and recorded[-1]["moved"] == mover
    replay = stack.match.get(
        f"/matches/{match_id}/replay", params={"version": accepted["version"]}
    ).json()
    assert replay["clock"]["remaining_ms"] == after["remaining_ms"]


def test_a_clock_that_runs_out_forfeits_the_match_once(stack: Stack) -> None:
    match_id, tokens = hosted_table(stack, {"clock": {"per_move_s": 1}})
    match = stack.match.get(f"/matches/{match_id}").json()
    late = match["to_move"][0]
    finished = wait_finished(stack, match_id)
    assert finished["result"]["reason"] == "forfeit"
    assert finished["result"]["forfeited"] == [late]
    assert finished["result"]["winners"] == []  # Hanabi: the team loses together
    types = [event["type"] for event in events(stack, match_id)]
    assert types.count("TurnTimedOut") == 1 and types.count("MatchForfeited") == 1
    timed_out = next(e for e in events(stack, match_id) if e["type"] == "TurnTimedOut")
    assert timed_out["data"]["seat"] == late
    refused = stack.match.post(
        f"/matches/{match_id}/actions",
        json={
            "game": finished["game"],
            "expected_version": finished["version"],
            "action": {"type": "DiscardCard", "slot": 0},
        },
        headers=auth(tokens[late]),
    )
    assert refused.status_code == 409
    time.sleep(1.5)  # a second look of the clocks finds nothing more to fire
    assert [event["type"] for event in events(stack, match_id)] == types


def test_a_move_in_time_wins_and_the_clock_moves_on(stack: Stack) -> None:
    match_id, tokens = hosted_table(stack, {"clock": {"per_move_s": 2}})
    first = stack.match.get(f"/matches/{match_id}").json()["to_move"][0]
    accepted = move(stack, match_id, tokens[first])
    finished = wait_finished(stack, match_id)
    assert finished["result"]["forfeited"] == [1 - first]
    timed_out = [e for e in events(stack, match_id) if e["type"] == "TurnTimedOut"]
    assert [e["data"]["seat"] for e in timed_out] == [1 - first]
    assert timed_out[0]["version"] > accepted["version"]


def test_a_timeout_can_hand_the_seat_to_a_bot(stack: Stack) -> None:
    match_id, tokens = hosted_table(stack, {"clock": {"per_move_s": 1}, "on_timeout": "bot"})
    late = stack.match.get(f"/matches/{match_id}").json()["to_move"][0]

    def with_a_bot() -> dict[str, Any] | None:
        match = stack.match.get(f"/matches/{match_id}").json()
        return match if match["bots"] else None

    match = wait_until(with_a_bot, what="a bot on the late seat")
    assert match["bots"] == {str(late): "hanabi-heuristic"}
    assert match["status"] == "running"
    assert late not in match["clock"]["on_clock"]  # a bot's seat runs no clock
    gone = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[late]))
    assert gone.status_code == 403
    took_over = [e for e in events(stack, match_id) if e["type"] == "BotTookOver"]
    assert [e["data"] for e in took_over] == [
        {"type": "BotTookOver", "seat": late, "bot": "hanabi-heuristic", "reason": "timeout"}
    ]


def test_a_timeout_passes_where_the_rules_allow_it(stack: Stack) -> None:
    match_id, _ = hosted_table(
        stack, {"clock": {"per_move_s": 2}, "on_timeout": "pass"}, game="breaking_news"
    )
    late = stack.match.get(f"/matches/{match_id}").json()["to_move"][0]

    def timed_out() -> list[str] | None:
        types = [e["type"] for e in events(stack, match_id)]
        return types if "TurnTimedOut" in types else None

    types = wait_until(timed_out, what="the turn timed out")
    log = events(stack, match_id)
    at = types.index("TurnTimedOut")
    assert log[at]["data"] == {**log[at]["data"], "seat": late, "policy": "pass"}
    # the seat's pass (its hand under the deck, three cards drawn), then the clocks
    clocked = next(n for n in range(at + 1, len(log)) if log[n]["type"] == "ClockUpdated")
    passed = log[at + 1 : clocked]
    assert passed and all(event["seat"] == late for event in passed)
    assert late not in log[clocked]["data"]["on_clock"]
    assert log[clocked]["data"]["on_clock"] == [1 - late]
    assert stack.match.get(f"/matches/{match_id}").json()["status"] == "running"


def test_leaving_abandons_the_match_by_default(stack: Stack) -> None:
    match_id, tokens = hosted_table(stack, {})
    left = stack.match.post(f"/matches/{match_id}/leave", headers=auth(tokens[1]))
    assert left.status_code == 200, left.text
    assert left.json()["status"] == "finished"
    assert left.json()["result"]["reason"] == "abandoned"
    assert left.json()["result"]["forfeited"] == [1]
    types = [event["type"] for event in events(stack, match_id)][-2:]
    assert types == ["PlayerLeft", "MatchForfeited"]
    again = stack.match.post(f"/matches/{match_id}/leave", headers=auth(tokens[0]))
    assert again.status_code == 409


def test_a_bot_takes_the_seat_of_a_player_who_leaves_and_gives_it_back(stack: Stack) -> None:
    match_id, tokens = hosted_table(stack, {"on_leave": "bot", "bot": "hanabi-random"})
    key = uuid.uuid4().hex
    left = stack.match.post(
        f"/matches/{match_id}/leave", headers={**auth(tokens[1]), "Idempotency-Key": key}
    )
    assert left.status_code == 200, left.text
    assert left.json()["bots"] == {"1": "hanabi-random"} and left.json()["status"] == "running"
    retried = stack.match.post(
        f"/matches/{match_id}/leave", headers={**auth(tokens[1]), "Idempotency-Key": key}
    )
    assert retried.status_code == 200 and retried.json() == left.json()
    assert stack.match.get(f"/matches/{match_id}", headers=auth(tokens[1])).status_code == 403
    # the app gives the seat back to a person, with a new token
    reseated = stack.match.post(f"/matches/{match_id}/seats/1/token", json={"name": "Bob"})
    assert reseated.status_code == 201, reseated.text
    token = reseated.json()["token"]
    assert reseated.json()["match"]["bots"] == {} and reseated.json()["match"]["you"] == 1
    assert reseated.json()["match"]["players"][1] == "Bob"
    mine = stack.match.get(f"/matches/{match_id}", headers=auth(token))
    assert mine.status_code == 200 and mine.json()["you"] == 1
    assert stack.match.get(f"/matches/{match_id}", headers=auth(tokens[1])).status_code == 403
    types = [event["type"] for event in events(stack, match_id)][-3:]
    assert types == ["PlayerLeft", "BotTookOver", "PlayerReseated"]
    for event in events(stack, match_id):
        assert token not in str(event) and tokens[1] not in str(event)
