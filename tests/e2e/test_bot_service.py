"""The bots service through the API, each service its own process: bots play their seats of
running matches beside people and against each other, every turn once, through a bots process
killed mid-match, a Redis that forgets everything and wake-ups that never come; and in a
simultaneous phase (a Breaking News tie's vote), every bot seat that may move plays, not only
the first, each once."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator
from itertools import groupby
from typing import Any

import httpx
import msgspec
import pytest
import redis

from services.bots.policies import load_policies
from services.rules.games import load_games
from tests.conftest import fresh_database
from tests.e2e.conftest import Stack, free_port, running_stack
from tests.e2e.play import auth
from tests.waiting import wait_until
from tools.bench.bot_service import bot_outcomes

pytestmark = pytest.mark.e2e

HEURISTIC = "hanabi-heuristic"
HEURISTIC_POLICY = load_policies()[HEURISTIC]


class Bots:
    """The stack's bots processes, each serving its metrics on a port of its own."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.metrics_ports: dict[str, int] = {}

    def start(self, name: str, **env: str) -> None:
        self.metrics_ports[name] = free_port()
        port = str(self.metrics_ports[name])
        self.stack.start("bots", name=name, PLAYTABLE_METRICS_PORT=port, **env)

    def kill(self, name: str) -> None:
        process = self.stack.processes.pop(name)
        process.kill()
        process.wait(timeout=10)

    def outcomes(self, name: str) -> dict[str, float]:
        """The process's bot turns by outcome (``playtable_bot_moves``), all games together."""
        url = f"http://127.0.0.1:{self.metrics_ports[name]}/metrics"
        deadline = time.monotonic() + 10
        while True:
            try:
                text = httpx.get(url, timeout=2).text
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"{name} serves no metrics"
                time.sleep(0.1)
        outcomes: dict[str, float] = {}
        for outcome, count in bot_outcomes(text):
            outcomes[outcome] = outcomes.get(outcome, 0.0) + count
        return outcomes


@pytest.fixture(scope="module")
def database_url(postgres_server_url: str) -> Iterator[str]:
    """This module's own database: the bots' sweep plays every match of its database where a
    bot waits, and matches other modules left there would add to the moves counted here."""
    with fresh_database(postgres_server_url) as url:
        yield url


@pytest.fixture(scope="module")
def stack(database_url: str, redis_url: str) -> Iterator[Stack]:
    with running_stack(database_url, redis_url) as running:
        yield running


@pytest.fixture(scope="module")
def bots(stack: Stack) -> Bots:
    """Lobby, match and rules, and a bots process named ``bots``."""
    running = Bots(stack)
    running.start("bots")
    return running


def answered(stack: Stack, method: str, url: str, **request: Any) -> httpx.Response:
    """The match service's answer once it is no 503: the services come back by themselves
    within seconds after Redis forgets everything."""
    deadline = time.monotonic() + 30
    while (response := stack.match.request(method, url, **request)).status_code == 503:
        assert time.monotonic() < deadline, response.text
        time.sleep(0.1)
    return response


def bot_table(stack: Stack, bots: dict[int, str]) -> dict[str, Any]:
    """A new two-seat Hanabi table with ``bots`` seated (by seat)."""
    created = stack.lobby.post(
        "/tables",
        json={
            "game": "hanabi",
            "seats": 2,
            "bots": [{"bot": bot, "seat": seat} for seat, bot in bots.items()],
        },
    )
    assert created.status_code == 201, created.text
    return created.json()


def with_a_bot(stack: Stack) -> tuple[str, str]:
    """A started Hanabi match, seat 0 a person's, seat 1 the heuristic bot's: its id and the
    person's token."""
    table = bot_table(stack, {1: HEURISTIC})
    joined = stack.lobby.post(f"/tables/{table['table_id']}/seats", json={"name": "ada"})
    assert joined.status_code == 201 and joined.json()["seat"] == 0, joined.text
    token = joined.json()["token"]
    started = stack.lobby.post(f"/tables/{table['table_id']}/start", headers=auth(token))
    assert started.status_code == 201, started.text
    return started.json()["match_id"], token


def of_bots_only(stack: Stack) -> str:
    table = bot_table(stack, {0: HEURISTIC, 1: HEURISTIC})
    assert table["status"] == "started" and table["match_id"], table  # no one to start it
    return table["match_id"]


def play_person(
    stack: Stack,
    match_id: str,
    token: str,
    *,
    after_move: Callable[[int], None] = lambda _moves: None,
    timeout_s: float = 90.0,
) -> dict[str, Any]:
    """Seat 0's player, who plays as the heuristic bot would (a person's random clues mislead
    the bot into misplays: three end the match early), whenever it is first to move;
    ``after_move(moves so far)`` after each."""
    rng = random.Random(match_id)
    url = f"/matches/{match_id}"
    deadline = time.monotonic() + timeout_s
    moves = 0
    while True:
        assert time.monotonic() < deadline, f"match {match_id} did not end"
        match = answered(stack, "GET", url, headers=auth(token)).json()
        if match["status"] == "finished":
            return match
        if match["to_move"][:1] != [0]:
            time.sleep(0.01)  # the bot's turn
            continue
        version = {"version": match["version"]}
        listed = answered(stack, "GET", f"{url}/actions", params=version, headers=auth(token))
        action = HEURISTIC_POLICY(match["view"], listed.json()["actions"], rng)
        move = {"game": match["game"], "expected_version": match["version"], "action": action}
        headers = {**auth(token), "Idempotency-Key": uuid.uuid4().hex}
        moved = answered(stack, "POST", f"{url}/actions", json=move, headers=headers)
        assert moved.status_code == 201, moved.text
        moves += 1
        after_move(moves)


def wait_finished(stack: Stack, match_id: str, timeout_s: float = 90.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while (match := stack.match.get(f"/matches/{match_id}").json())["status"] != "finished":
        assert time.monotonic() < deadline, f"match {match_id} did not end: {match}"
        time.sleep(0.05)
    return match


def logged(stack: Stack, match_id: str) -> list[dict[str, Any]]:
    """The match's events as a spectator sees them. Checks that no version is missing."""
    items: list[dict[str, Any]] = []
    after = 0
    while after is not None:
        page = stack.match.get(f"/matches/{match_id}/events", params={"after": after})
        assert page.status_code == 200, page.text
        items += page.json()["items"]
        after = page.json()["next_after"]
    assert [item["version"] for item in items] == list(range(1, len(items) + 1))
    return items


def movers(stack: Stack, match_id: str) -> list[int]:
    """The seat of each move, in order, from the log: a move's events share its seat and the
    moment its transaction recorded them."""
    moves = [item for item in logged(stack, match_id) if item["seat"] is not None]
    return [seat for (seat, _), _ in groupby(moves, lambda i: (i["seat"], i["recorded_at"]))]


def assert_turns_alternate(seats: list[int]) -> None:
    """Two-player Hanabi: the seats take turns, so a turn played twice shows as a seat moving
    twice in a row (the version guard would refuse the second anyway: the log shows none)."""
    assert len(seats) > 10
    assert seats == [(seats[0] + n) % 2 for n in range(len(seats))], seats


def test_a_bot_plays_its_seat_beside_a_person_every_turn_once(stack: Stack, bots: Bots) -> None:
    match_id, token = with_a_bot(stack)
    shown = stack.match.get(f"/matches/{match_id}", headers=auth(token)).json()
    assert shown["players"][1] == HEURISTIC and shown["you"] == 0

    final = play_person(stack, match_id, token)

    assert final["result"] is not None
    seats = movers(stack, match_id)
    assert_turns_alternate(seats)
    assert seats.count(1) in (seats.count(0), seats.count(0) - 1)
    assert_each_move_sent_once(moved_since(bots, {}, seats.count(1)), seats.count(1))


def test_a_table_of_bots_plays_to_the_end_by_itself(stack: Stack, bots: Bots) -> None:
    match_id = of_bots_only(stack)
    final = wait_finished(stack, match_id)
    assert final["players"] == [HEURISTIC, HEURISTIC]
    assert_turns_alternate(movers(stack, match_id))


def test_a_bots_process_killed_mid_match_leaves_no_turn_unplayed_or_played_twice(
    stack: Stack, bots: Bots
) -> None:
    """Two copies share the matches; one is killed (SIGKILL) while it plays, and a new one
    starts: every match ends, each turn played once (a move cut short by the kill is sent again
    under its Idempotency-Key, and recorded once)."""
    bots.start("bots-2")
    match_id, token = with_a_bot(stack)
    of_bots = []

    def kill_and_replace(moves: int) -> None:
        if moves == 3:
            of_bots.extend(of_bots_only(stack) for _ in range(6))
        if moves == 5:
            bots.kill("bots")
        if moves == 8:
            bots.start("bots")

    try:
        play_person(stack, match_id, token, after_move=kill_and_replace)
        assert len(of_bots) == 6
        for match in [match_id, *of_bots]:
            wait_finished(stack, match)
            assert_turns_alternate(movers(stack, match))
        assert bots.outcomes("bots-2").keys() <= {"moved", "stale"}
    finally:
        stack.stop("bots-2")
        if "bots" not in stack.processes:
            bots.start("bots")


def test_bots_finish_a_match_although_redis_forgets_everything(
    stack: Stack, bots: Bots, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    prefix = stack.env["PLAYTABLE_STREAM_PREFIX"]
    match_id, token = with_a_bot(stack)

    wiped = []

    def wipe(moves: int) -> None:
        if moves in (2, 6):
            for key in client.scan_iter(f"{prefix}:*"):
                client.delete(key)
            wiped.append(moves)

    play_person(stack, match_id, token, after_move=wipe)

    assert wiped == [2, 6]
    seats = movers(stack, match_id)
    assert_turns_alternate(seats)  # the bot moved after each wipe: the person moved again


def test_a_bots_process_that_is_never_woken_plays_by_its_sweep(
    stack: Stack, bots: Bots, redis_url: str
) -> None:
    """A bots process reading another deployment's events (none of these matches') still plays
    every turn: Postgres says which bots are to move, the events only say it sooner."""
    stack.stop("bots")
    elsewhere = f"{stack.env['PLAYTABLE_STREAM_PREFIX']}-elsewhere"
    bots.start("deaf", PLAYTABLE_STREAM_PREFIX=elsewhere, PLAYTABLE_BOTS_SWEEP_S="0.1")
    try:
        match_id, token = with_a_bot(stack)
        play_person(stack, match_id, token)
        assert_turns_alternate(movers(stack, match_id))
        assert bots.outcomes("deaf").keys() <= {"moved", "stale"}
    finally:
        stack.stop("deaf")
        bots.start("bots")
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(f"{elsewhere}:*"):
            client.delete(key)


# --- Breaking News: the tie's voters vote at once ------------------------------------------------

NEWS = "breaking_news"
NEWS_HEURISTIC = load_policies()[f"{NEWS}-heuristic"]
NEWS_SEATS = 4


def a_tie_two_vote_on() -> tuple[int, list[int]]:
    """A deal (seed) after which four players who each play as the heuristic bot, with the
    seed's random generator, end tied, the two others voting: the seed and the two voters. Found
    by playing the rules here, so that the match played through the API goes the same way."""
    game = load_games()[NEWS]
    decoder = msgspec.json.Decoder(game.action_type)
    for seed in range(200):
        state = game.fold(
            game.setup(game.resolve_options({}, NEWS_SEATS), NEWS_SEATS, random.Random(seed))
        )
        rng = random.Random(seed)
        while game.result(state) is None:
            to_move = game.to_move(state)
            view = msgspec.to_builtins(game.view(state, to_move[0]))
            if view["phase"] == "vote":
                if len(to_move) == 2:
                    return seed, to_move
                break
            actions = msgspec.to_builtins(game.legal_actions(state, to_move[0]))
            chosen = NEWS_HEURISTIC(view, actions, rng)
            state = game.fold(
                game.decide(state, to_move[0], decoder.decode(msgspec.json.encode(chosen))), state
            )
    raise AssertionError("no deal of 200 ends in a tie two players vote on")


def news_match(stack: Stack, seed: int, hosting: dict[str, Any]) -> tuple[str, list[str]]:
    """A started four-seat Breaking News match of people, dealt by ``seed``: its id and the
    seats' tokens."""
    created = stack.lobby.post(
        "/tables", json={"game": NEWS, "seats": NEWS_SEATS, "seed": seed, "hosting": hosting}
    )
    assert created.status_code == 201, created.text
    table_id = created.json()["table_id"]
    tokens = []
    for seat in range(NEWS_SEATS):
        joined = stack.lobby.post(f"/tables/{table_id}/seats", json={"name": f"player{seat}"})
        assert joined.status_code == 201 and joined.json()["seat"] == seat, joined.text
        tokens.append(joined.json()["token"])
    started = stack.lobby.post(f"/tables/{table_id}/start", headers=auth(tokens[0]))
    assert started.status_code == 201, started.text
    return started.json()["match_id"], tokens


def play_to_the_vote(stack: Stack, match_id: str, tokens: list[str], seed: int) -> list[int]:
    """The people play as ``a_tie_two_vote_on`` played them, the first seat to move moving,
    until the tie's vote: the seats to vote."""
    rng = random.Random(seed)
    url = f"/matches/{match_id}"
    while True:
        seat = stack.match.get(url).json()["to_move"][0]
        token = auth(tokens[seat])
        match = stack.match.get(url, headers=token).json()
        if match["view"]["phase"] == "vote":
            return match["to_move"]
        assert match["status"] == "running", match
        version = {"version": match["version"]}
        listed = stack.match.get(f"{url}/actions", params=version, headers=token)
        action = NEWS_HEURISTIC(match["view"], listed.json()["actions"], rng)
        move = {"game": NEWS, "expected_version": match["version"], "action": action}
        headers = {**token, "Idempotency-Key": uuid.uuid4().hex}
        moved = stack.match.post(f"{url}/actions", json=move, headers=headers)
        assert moved.status_code == 201, moved.text


def votes(stack: Stack, match_id: str) -> list[int]:
    """The seat of each vote cast, in the log's order."""
    return [item["seat"] for item in logged(stack, match_id) if item["type"] == "VoteCast"]


def assert_each_move_sent_once(played: dict[str, float], moves: int) -> None:
    """Each of the ``moves`` bot moves in the log was one turn's: answered 201 (``moved``) or,
    when the answer was lost (a timeout on a busy machine) and the turn played again under its
    Idempotency-Key, answered that same move again (``stale``); none sent twice otherwise."""
    moved, stale = played.get("moved", 0), played.get("stale", 0)
    assert moved <= moves <= moved + stale, (played, moves)
    assert played.keys() <= {"moved", "stale", "failed"}, played


def moved_since(bots: Bots, before: dict[str, float], moves: int) -> dict[str, float]:
    """The ``bots`` process's turns by outcome since ``before``, once ``moves`` of them are
    counted ``moved`` or ``stale`` (or 10 s passed): a bot counts its move once the answer
    reached it, which may be after the match is seen finished."""
    deadline = time.monotonic() + 10
    while True:
        now = bots.outcomes("bots")
        changed = {outcome: now[outcome] - before.get(outcome, 0.0) for outcome in now}
        played = {outcome: count for outcome, count in changed.items() if count}
        counted = played.get("moved", 0) + played.get("stale", 0)
        if counted >= moves or time.monotonic() > deadline:
            return played
        time.sleep(0.05)


def test_a_bot_votes_as_soon_as_its_seat_may_though_a_person_votes_too(
    stack: Stack, bots: Bots
) -> None:
    """The tie's voters vote at once: a bot that took the second voter's seat over votes while
    the first, a person, has yet to (a bot that waited to be first to move would wait for
    them forever); the person leaves too, and the other bot's vote ends the match."""
    seed, voters = a_tie_two_vote_on()
    match_id, tokens = news_match(stack, seed, {"on_leave": "bot"})
    before = bots.outcomes("bots")
    assert play_to_the_vote(stack, match_id, tokens, seed) == voters
    first, second = voters

    left = stack.match.post(f"/matches/{match_id}/leave", headers=auth(tokens[second]))
    assert left.status_code == 200, left.text
    wait_until(
        lambda: votes(stack, match_id) == [second],
        what=f"the vote of the bot in seat {second}, a person voting too",
    )
    assert stack.match.get(f"/matches/{match_id}").json()["to_move"] == [first]
    left = stack.match.post(f"/matches/{match_id}/leave", headers=auth(tokens[first]))
    assert left.status_code == 200, left.text

    final = wait_finished(stack, match_id)
    assert final["result"] is not None
    assert votes(stack, match_id) == [second, first]
    assert_each_move_sent_once(moved_since(bots, before, 2), 2)  # one per vote


def test_bots_that_may_move_at_once_each_move_once_and_finish_the_match(
    stack: Stack, bots: Bots
) -> None:
    """Both voters run out of time together, so both seats pass to bots at one version: both
    bots play it, the first vote makes the other's turn stale, and that bot votes at the next
    version. Each votes once, and the match ends by itself."""
    seed, voters = a_tie_two_vote_on()
    stack.start("clocks")
    try:
        hosting = {"clock": {"per_move_s": 10}, "on_timeout": "bot"}
        match_id, tokens = news_match(stack, seed, hosting)
        before = bots.outcomes("bots")
        assert play_to_the_vote(stack, match_id, tokens, seed) == voters
        final = wait_finished(stack, match_id, timeout_s=60)
    finally:
        stack.stop("clocks")

    assert final["result"] is not None
    log = logged(stack, match_id)
    timed_out = [item for item in log if item["type"] == "TurnTimedOut"]
    assert sorted(item["data"]["seat"] for item in timed_out) == voters
    assert len({item["recorded_at"] for item in timed_out}) == 1  # one change: both at once
    taken = [item["data"]["seat"] for item in log if item["type"] == "BotTookOver"]
    assert sorted(taken) == voters
    assert sorted(votes(stack, match_id)) == voters  # each bot voted once
    takeover = timed_out[0]["recorded_at"]
    taken_at = max(item["version"] for item in log if item["recorded_at"] == takeover)
    cast = [item for item in log if item["type"] == "VoteCast"]
    assert cast[0]["version"] == taken_at + 1  # a bot moved at the version the takeover made
    between = log[cast[0]["version"] : cast[1]["version"] - 1]  # the other, at the next one
    assert {item["recorded_at"] for item in between} <= {cast[0]["recorded_at"]}
    assert_each_move_sent_once(moved_since(bots, before, 2), 2)


def test_bots_hearing_a_story_let_the_teller_tell_it(stack: Stack, bots: Bots) -> None:
    """With the stopwatch every seat may report silence while a story runs, but the game waits
    on the teller alone: no other bot seat is asked (none waited), no story is interrupted,
    each story called is told, and the match ends by itself, one move sent per bot move in the
    log. About one match in 300 has no story called at all (the deal and the bots' draws are
    random): then another is played, up to three."""
    for _ in range(3):
        before = bots.outcomes("bots")  # before the table: its bots start playing at once
        created = stack.lobby.post(
            "/tables",
            json={
                "game": NEWS,
                "seats": 3,
                "options": {"stopwatch": True},
                "bots": [{"bot": f"{NEWS}-heuristic", "seat": seat} for seat in range(3)],
            },
        )
        assert created.status_code == 201, created.text
        match_id = created.json()["match_id"]
        wait_finished(stack, match_id)
        types = [item["type"] for item in logged(stack, match_id)]
        if "BreakingNewsCalled" in types:
            break
    assert types.count("BreakingNewsCalled") > 0  # a story ran: every seat could interrupt it
    assert "StoryInterrupted" not in types
    told = [
        item
        for item in logged(stack, match_id)
        if item["type"] == "ObjectCompleted" and item["data"]["duration_ms"] is not None
    ]
    assert len(told) == types.count("BreakingNewsCalled")
    moves = len(movers(stack, match_id))
    assert_each_move_sent_once(moved_since(bots, before, moves), moves)
