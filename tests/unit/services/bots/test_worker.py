"""The bots service's pure parts: which turns a row gives the bots, the name that makes every
attempt at a turn send the same move, and how turns are played against a fake match API (one
seat's, and those of bot seats that may move at once)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from typing import Any

import aiohttp
import msgspec
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from services.bots.arena import play_match
from services.bots.policies import Policy, load_policies
from services.bots.policies.registry import HEURISTICS
from services.bots.worker import BotPlayer, Turn, Turns, due_turns
from services.rules.games import load_games
from shared.domain.hosting import bot_token
from shared.edge.idempotency import REPLAYED_HEADER

SECRET = b"k" * 32
BOTS = msgspec.json.encode({"1": "hanabi-heuristic", "2": "hanabi-random"})


def test_a_bot_plays_when_it_is_first_to_move() -> None:
    assert due_turns(("m1", "hanabi", 7, [1], BOTS)) == [
        Turn("m1", 7, 1, "hanabi", "hanabi-heuristic")
    ]
    assert due_turns(("m1", "hanabi", 8, [2, 0], BOTS)) == [
        Turn("m1", 8, 2, "hanabi", "hanabi-random")
    ]


def test_every_bot_seat_that_may_move_has_its_turn_whatever_its_place() -> None:
    """A Breaking News tie's voters vote at once, and anyone may interrupt a story: each bot seat
    among the seats to move plays (its policy says whether it wants to), not only the first."""
    assert due_turns(("m1", "breaking_news", 7, [0, 2, 1], BOTS)) == [
        Turn("m1", 7, 2, "breaking_news", "hanabi-random"),
        Turn("m1", 7, 1, "breaking_news", "hanabi-heuristic"),
    ]
    assert due_turns(("m1", "breaking_news", 7, [0, 3], BOTS)) == []
    assert due_turns(("m1", "hanabi", 9, [], BOTS)) == []


def test_bot_seats_moving_at_one_version_send_moves_of_their_own() -> None:
    one, other = due_turns(("m1", "breaking_news", 7, [1, 2], BOTS))
    assert (one.idempotency_key, other.idempotency_key) == ("bot:m1:1:7", "bot:m1:2:7")
    assert one.rng().random() != other.rng().random()


def test_a_turn_is_named_by_its_match_seat_and_version() -> None:
    turn = Turn("m1", 7, 1, "hanabi", "hanabi-heuristic")
    assert turn.idempotency_key == "bot:m1:1:7"
    again = Turn("m1", 7, 1, "hanabi", "hanabi-heuristic")
    assert [turn.rng().random() for _ in range(3)] == [again.rng().random() for _ in range(3)]
    later = Turn("m1", 8, 1, "hanabi", "hanabi-heuristic")
    assert turn.rng().random() != later.rng().random()


def _positions(game: str, moves: int = 40) -> list[dict[str, Any]]:
    """What each seat of a seeded heuristic match was shown, move by move."""
    shown: list[dict[str, Any]] = []
    heuristic = load_policies()[f"{game}-heuristic"]

    def recording(view: dict[str, Any], actions: list[dict[str, Any]], rng: Any) -> Any:
        shown.append({"view": view, "actions": actions})
        return heuristic(view, actions, rng)

    rules = load_games()[game]
    play_match(rules, [recording] * max(2, rules.min_players), seed=3)
    return shown[:: max(1, len(shown) // moves)]


_CHOOSE = """
import json, sys
from services.bots.policies import load_policies
from services.bots.worker import Turn
policies, positions = load_policies(), json.load(sys.stdin)
print(json.dumps([
    policies[p["bot"]](p["view"], p["actions"], Turn("m", n, 0, "", p["bot"]).rng())
    for n, p in enumerate(positions)
]))
"""


def test_every_copy_chooses_the_same_move_for_a_turn() -> None:
    """Copies playing one turn must send the same body under its Idempotency-Key, whatever
    their string hashing (a set of strings iterates in another order in another process)."""
    positions = [
        {**position, "bot": f"{game}-heuristic"}
        for game in HEURISTICS
        for position in _positions(game)
    ]
    policies = load_policies()
    here = [
        policies[p["bot"]](p["view"], p["actions"], Turn("m", n, 0, "", p["bot"]).rng())
        for n, p in enumerate(positions)
    ]
    for seed in ("1", "2"):
        chosen = subprocess.run(
            [sys.executable, "-c", _CHOOSE],
            input=json.dumps(positions),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(chosen.stdout) == json.loads(json.dumps(here))


# --- a turn against a fake match API ------------------------------------------------------------

TURN = Turn("m1", 7, 1, "hanabi", "first")


class FakeMatch:
    """Answers a seat's view and actions at ``version``, and the move with ``move_status``
    (``None``: drops the connection instead of answering), marked as a repeated answer when
    ``replayed``."""

    def __init__(
        self, version: int = 7, move_status: int | None = 201, *, replayed: bool = False
    ) -> None:
        self.version = version
        self.move_status = move_status
        self.replayed = replayed
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []

    async def answer(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append((request.method, request.path_qs, dict(request.headers), body))
        if request.method == "POST":
            if self.move_status is None:
                assert request.transport is not None
                request.transport.close()
            headers = {REPLAYED_HEADER: "true"} if self.replayed else None
            return web.json_response({"type": "x"}, status=self.move_status or 500, headers=headers)
        if request.path.endswith("/actions"):
            return web.json_response({"version": self.version, "actions": [{"n": 1}]})
        return web.json_response({"version": self.version, "view": {}, "to_move": [1]})


def first(_view: dict[str, Any], actions: list[dict[str, Any]], _rng: Any) -> dict[str, Any]:
    return actions[0]


async def _play(match: FakeMatch, policies: dict[str, Policy] | None = None) -> str:
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", match.answer)
    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        player = BotPlayer(session, str(server.make_url("/")), SECRET, policies or {"first": first})
        return await player.play(TURN)


@pytest.mark.asyncio
async def test_a_turn_reads_as_its_seat_and_moves_at_its_version_under_its_key() -> None:
    match = FakeMatch()
    assert await _play(match) == "moved"
    reads, move = match.requests[:2], match.requests[2]
    assert sorted((method, path) for method, path, _, _ in reads) == [
        ("GET", "/matches/m1"),
        ("GET", "/matches/m1/actions?version=7"),
    ]
    token = bot_token(SECRET, "m1", 1)
    assert all(headers["Authorization"] == f"Bearer {token}" for _, _, headers, _ in match.requests)
    method, path, headers, body = move
    assert (method, path) == ("POST", "/matches/m1/actions")
    assert headers["Idempotency-Key"] == "bot:m1:1:7"
    assert json.loads(body) == {"game": "hanabi", "expected_version": 7, "action": {"n": 1}}


@pytest.mark.asyncio
async def test_a_match_that_moved_on_is_not_played() -> None:
    match = FakeMatch(version=8)
    assert await _play(match) == "stale"
    assert [method for method, *_ in match.requests] == ["GET", "GET"]


@pytest.mark.asyncio
async def test_a_move_another_copy_made_first_under_the_same_key_is_not_counted_twice() -> None:
    """Two copies playing one turn send the same Idempotency-Key: the second gets the first's
    answer again, marked replayed, and counts it stale, not moved."""
    assert await _play(FakeMatch(replayed=True)) == "stale"


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(409, "stale"), (422, "refused"), (403, "denied"), (503, "failed"), (429, "failed")],
)
@pytest.mark.asyncio
async def test_each_answer_to_a_move_has_its_outcome(status: int, outcome: str) -> None:
    assert await _play(FakeMatch(move_status=status)) == outcome


@pytest.mark.asyncio
async def test_a_refused_move_is_logged_as_an_error(caplog: pytest.LogCaptureFixture) -> None:
    await _play(FakeMatch(move_status=422))
    assert [r.levelno for r in caplog.records if r.name == "services.bots.worker"] == [
        logging.ERROR
    ]


@pytest.mark.asyncio
async def test_a_dropped_connection_fails_the_turn_for_later() -> None:
    assert await _play(FakeMatch(move_status=None)) == "failed"


@pytest.mark.asyncio
async def test_a_policy_that_fails_refuses_its_turn() -> None:
    def broken(*_args: Any) -> dict[str, Any]:
        raise ValueError("a bug")

    assert await _play(FakeMatch(), {"first": broken}) == "refused"


@pytest.mark.asyncio
async def test_a_bot_that_lets_its_turn_pass_sends_nothing() -> None:
    match = FakeMatch()
    assert await _play(match, {"first": lambda *_args: None}) == "waited"
    assert [method for method, *_ in match.requests] == ["GET", "GET"]


class SimultaneousMatch:
    """A match where the seats in ``to_move`` may all move at ``version``: a move at the current
    version records the seat's move and makes the next version, where the others may still
    move; a move at another version is refused (409), as the match service refuses it."""

    def __init__(self, version: int, to_move: list[int]) -> None:
        self.version = version
        self.to_move = to_move
        self.moved: list[tuple[int, int, str]] = []
        """(seat, version, Idempotency-Key) of each move recorded."""

    async def answer(self, request: web.Request) -> web.StreamResponse:
        if request.method == "POST":
            move = json.loads(await request.read())
            seat = int(request.headers["Authorization"].removeprefix("Bearer bot-"))
            if move["expected_version"] != self.version or seat not in self.to_move:
                return web.json_response({"status": 409}, status=409)
            self.moved.append((seat, self.version, request.headers["Idempotency-Key"]))
            self.version += 1
            self.to_move.remove(seat)
            return web.json_response({"type": "x"}, status=201)
        if request.path.endswith("/actions"):
            return web.json_response({"version": self.version, "actions": [{"n": 1}]})
        return web.json_response({"version": self.version, "view": {}})


@pytest.mark.asyncio
async def test_bot_seats_that_may_move_at_once_each_move_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two bot seats may move at version 7. Both play it; the first move made makes version 8,
    so the other's move at 7 is stale (409) and sent nowhere else: its seat, still to move,
    plays its turn at 8 (published or swept then). Each seat moves once, under a key of its
    own, and playing the turns again moves no one twice."""
    monkeypatch.setattr("services.bots.worker.bot_token", lambda _s, _m, seat: f"bot-{seat}")
    match = SimultaneousMatch(7, [1, 2])
    bots = msgspec.json.encode({"1": "first", "2": "first"})
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", match.answer)
    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        player = BotPlayer(session, str(server.make_url("/")), SECRET, {"first": first})

        async def play_due() -> list[str]:
            due = due_turns(("m1", "breaking_news", match.version, list(match.to_move), bots))
            return list(await asyncio.gather(*(player.play(turn) for turn in due)))

        at_7 = await play_due()
        assert sorted(at_7) == ["moved", "stale"]
        assert await play_due() == ["moved"]
        assert await play_due() == []  # no one left to move
        for version in (7, 8):  # the turns played again: a new version moves on, so 409
            for seat in (1, 2):
                turn = Turn("m1", version, seat, "breaking_news", "first")
                assert await player.play(turn) == "stale"
    first_seat, second_seat = match.moved[0][0], match.moved[1][0]
    assert {first_seat, second_seat} == {1, 2}
    assert match.moved == [
        (first_seat, 7, f"bot:m1:{first_seat}:7"),
        (second_seat, 8, f"bot:m1:{second_seat}:8"),
    ]


# --- turns in flight ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_turn_plays_once_at_a_time_and_at_most_concurrency_at_once() -> None:
    release = asyncio.Event()
    started: list[Turn] = []

    async def play(turn: Turn) -> None:
        started.append(turn)
        await release.wait()

    turns = Turns(play, concurrency=2)
    many = [Turn(f"m{n}", 1, 0, "hanabi", "first") for n in range(3)]
    for turn in [many[0], many[0], *many[1:]]:
        turns.start(turn)
    await asyncio.sleep(0.01)
    assert started == many[:2]  # the same turn once; the third waits for a slot
    release.set()
    await asyncio.sleep(0.01)
    assert started == many
    turns.start(many[0])  # over: it may be played again (its move failed, say)
    await asyncio.sleep(0.01)
    assert started == [*many, many[0]]
    await turns.finish(1.0)


@pytest.mark.asyncio
async def test_a_turn_its_bot_let_pass_is_not_played_again() -> None:
    """A bot that lets another's story run would choose the same at that version: the sweep
    finds the turn again and again while the story runs, and it is not asked again."""
    played: list[Turn] = []

    async def wait(turn: Turn) -> str:
        played.append(turn)
        return "waited"

    turns = Turns(wait, concurrency=2)
    turns.start(TURN)
    await turns.finish(1.0)
    turns.start(TURN)
    later = Turn("m1", 8, 1, "hanabi", "first")
    turns.start(later)
    await turns.finish(1.0)
    assert played == [TURN, later]


@pytest.mark.asyncio
async def test_finishing_cuts_the_turns_still_going_after_the_grace() -> None:
    async def endless(_turn: Turn) -> None:
        await asyncio.Event().wait()

    turns = Turns(endless, concurrency=4)
    turns.start(TURN)
    await asyncio.sleep(0)
    await asyncio.wait_for(turns.finish(0.05), 2)
