"""Live feeds (Server-Sent Events) through the running services: order, resuming, redaction."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import redis

from services.rules.games.hanabi.options import standard_deck
from shared.edge.feed import RECHECK_S
from shared.edge.feed_tickets import TICKET_TTL_S
from shared.edge.tokens import hash_token
from tests.e2e.conftest import Stack, free_port, wait_healthy
from tests.e2e.play import auth, open_table, play_to_end, started_match
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

LIVE_S = RECHECK_S / 2
"""Waits shorter than a follower's own recheck: what arrives within them came by a wake-up."""


@dataclass
class FeedEvent:
    id: int
    type: str
    data: dict[str, Any]


@dataclass
class Follower:
    """Reads one feed in a thread as a browser's EventSource would, until ``until`` holds (then
    drops the connection) or the server ends the stream."""

    base_url: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    until: Callable[[list[FeedEvent]], bool] = lambda _events: False
    events: list[FeedEvent] = field(default_factory=list)
    retry: int | None = None
    ended: bool = False
    connected: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Follower:
        self._thread.start()
        assert self.connected.wait(30), "the feed did not answer"
        assert self.error is None, self.error
        return self

    def join(self, timeout_s: float, *, cut_off: bool = False) -> None:
        """Wait for the end; ``cut_off``: the server may also have dropped the connection."""
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), f"feed still open after {timeout_s}s: {self.ids}"
        if not (cut_off and isinstance(self.error, httpx.TransportError)):
            assert self.error is None, self.error

    @property
    def ids(self) -> list[int]:
        return [event.id for event in self.events]

    def _run(self) -> None:
        try:
            with httpx.Client(base_url=self.base_url, timeout=60) as client:
                with client.stream(
                    "GET", self.path, headers=self.headers, params=self.params
                ) as response:
                    assert response.status_code == 200, response.read()
                    assert response.headers["content-type"].startswith("text/event-stream")
                    self.connected.set()
                    if self._read(response.iter_lines()):
                        return
            self.ended = True
        except BaseException as error:  # reported by join()
            self.error = error
            self.connected.set()

    def _read(self, lines: Any) -> bool:
        """Parse the SSE lines; True once ``until`` holds."""
        fields: dict[str, str] = {}
        for line in lines:
            if line.startswith(":"):
                continue
            if line:
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
                continue
            if "retry" in fields:
                self.retry = int(fields["retry"])
            if "data" in fields:
                event = FeedEvent(int(fields["id"]), fields["event"], json.loads(fields["data"]))
                self.events.append(event)
                if self.until(self.events):
                    return True
            fields = {}
        return False


def all_events(stack: Stack, match_id: str, token: str | None) -> list[dict[str, Any]]:
    page = stack.match.get(
        f"/matches/{match_id}/events",
        params={"limit": 500},
        headers=auth(token) if token else {},
    )
    assert page.status_code == 200, page.text
    assert page.json()["next_after"] is None
    return page.json()["items"]


def play_safely(
    stack: Stack, match_id: str, tokens: list[str], rng: random.Random, moves: int
) -> int:
    """Clues and discards only, so the match keeps running; returns the version reached."""
    for _ in range(moves):
        match = stack.match.get(f"/matches/{match_id}").json()
        seat = match["to_move"][0]
        legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[seat]))
        action = rng.choice([a for a in legal.json()["actions"] if a["type"] != "PlayCard"])
        moved = stack.match.post(
            f"/matches/{match_id}/actions",
            json={"game": match["game"], "expected_version": match["version"], "action": action},
            headers={**auth(tokens[seat]), "Idempotency-Key": uuid.uuid4().hex},
        )
        assert moved.status_code == 201, moved.text
    match = stack.match.get(f"/matches/{match_id}").json()
    assert match["status"] == "running"
    return match["version"]


def ticket(client: httpx.Client, feed: str, token: str) -> str:
    """A single-use ticket to the feed for the token, as a browser gets one per connection."""
    given = client.post(f"{feed}-tickets", headers=auth(token))
    assert given.status_code == 201, given.text
    return str(given.json()["ticket"])


def match_url(stack: Stack) -> str:
    return str(stack.match.base_url)


def assert_own_cards_hidden(events: list[FeedEvent], seat: int, players: int) -> None:
    """Seat ``seat`` sees every hand but its own (a spectator, ``seat`` -1: none)."""
    for event in events:
        data = event.data["data"]
        assert "deck" not in data
        if data["type"] == "CardsDealt":
            for holder, hand in enumerate(data["hands"]):
                for card in hand:
                    shown = holder != seat and seat >= 0
                    assert (card.get("suit") is not None) == shown, (holder, card)
                    assert (card.get("rank") is not None) == shown, (holder, card)
        if data["type"] == "CardDrawn":
            shown = data["seat"] != seat and seat >= 0
            assert (data.get("suit") is not None) == shown, data
    dealt = [e.data["data"] for e in events if e.data["data"]["type"] == "CardsDealt"]
    assert len(dealt) == 1 and len(dealt[0]["hands"]) == players


def test_a_seat_follows_a_whole_match_each_event_once_then_its_end(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 3, seed=31)
    follower = Follower(
        match_url(stack), f"/matches/{match_id}/feed", headers=auth(tokens[1])
    ).start()
    final = play_to_end(stack, match_id, tokens, random.Random(31))
    follower.join(LIVE_S)

    assert follower.ended and follower.retry is not None
    *moves, finish = follower.events
    assert finish.type == "MatchFinished"
    assert finish.id == final["version"]
    assert finish.data == {
        "match_id": match_id,
        "version": final["version"],
        "result": final["result"],
    }
    assert [event.id for event in moves] == list(range(1, final["version"] + 1))
    assert [event.data for event in moves] == all_events(stack, match_id, tokens[1])
    assert all(event.type == event.data["type"] for event in moves)
    assert_own_cards_hidden(moves, seat=1, players=3)


def test_feeds_of_every_viewer_at_once_each_get_their_own_view_to_the_end(
    stack: Stack,
) -> None:
    """Seats and spectators follow one match together (sharing a read per viewer in the
    process): none is sent another viewer's event, so no hidden card leaks."""
    match_id, tokens = open_table(stack, "hanabi", 2, seed=36)
    rng = random.Random(36)
    path = f"/matches/{match_id}/feed"
    viewers = [0, 1, -1, 0, -1, 1]  # a seat's index, -1 the spectator
    early = [
        Follower(match_url(stack), path, headers=auth(tokens[v]) if v >= 0 else {}).start()
        for v in viewers
    ]
    play_safely(stack, match_id, tokens, rng, 6)
    late = [  # from the start, while the others are live
        Follower(match_url(stack), path, headers=auth(tokens[v]) if v >= 0 else {}).start()
        for v in viewers
    ]
    final = play_to_end(stack, match_id, tokens, rng)
    for follower in early + late:
        follower.join(LIVE_S)

    views = {v: all_events(stack, match_id, tokens[v] if v >= 0 else None) for v in (0, 1, -1)}
    for viewer, follower in zip(viewers + viewers, early + late, strict=True):
        *moves, finish = follower.events
        assert follower.ended and finish.type == "MatchFinished"
        assert follower.ids[:-1] == list(range(1, final["version"] + 1))
        assert [event.data for event in moves] == views[viewer]
        assert_own_cards_hidden(moves, seat=viewer, players=2)


def test_a_dropped_feed_resumes_from_last_event_id_without_gaps_or_repeats(
    stack: Stack,
) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=32)
    rng = random.Random(32)
    path = f"/matches/{match_id}/feed"
    first_leg = play_safely(stack, match_id, tokens, rng, 4)
    before = Follower(
        match_url(stack),
        path,
        params={"ticket": ticket(stack.match, path, tokens[0])},  # as a browser opens it
        until=lambda events: events[-1].id >= first_leg + 3,
    ).start()
    play_safely(stack, match_id, tokens, rng, 3)
    before.join(LIVE_S)  # dropped by the client mid-match
    assert not before.ended and before.ids == list(range(1, before.ids[-1] + 1))

    missed = play_safely(stack, match_id, tokens, rng, 6)
    assert missed > before.ids[-1]
    after = Follower(
        match_url(stack),
        path,
        headers={"Last-Event-ID": str(before.ids[-1])},
        # the header wins over ``after``, as on an EventSource's own reconnect
        params={"ticket": ticket(stack.match, path, tokens[0]), "after": 0},
    ).start()
    final = play_to_end(stack, match_id, tokens, rng)
    after.join(LIVE_S)

    assert after.ended and after.events[-1].type == "MatchFinished"
    received = before.events + after.events[:-1]
    assert [event.id for event in received] == list(range(1, final["version"] + 1))
    assert [event.data for event in received] == all_events(stack, match_id, tokens[0])
    assert_own_cards_hidden(received, seat=0, players=2)


def test_a_spectator_feed_shows_no_card_in_any_hand(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 4, seed=33)
    rng = random.Random(33)
    target = play_safely(stack, match_id, tokens, rng, 2) + 14
    spectator = Follower(
        match_url(stack),
        f"/matches/{match_id}/feed",
        until=lambda events: events[-1].id >= target,
    ).start()
    reached = play_safely(stack, match_id, tokens, rng, 14)  # one event or more each
    assert reached >= target
    spectator.join(LIVE_S)

    assert spectator.ids == list(range(1, spectator.ids[-1] + 1))
    drawn = [e for e in spectator.events if e.data["data"]["type"] == "CardDrawn"]
    assert drawn, "no card was drawn: the test shows nothing"
    assert_own_cards_hidden(spectator.events, seat=-1, players=4)
    assert [e.data for e in spectator.events] == all_events(stack, match_id, None)[:target]


def test_a_table_feed_shows_seats_and_the_start_and_resumes(stack: Stack) -> None:
    deck = list(reversed(standard_deck(5, False)))
    table = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2, "options": {"deck": deck}}
    ).json()
    url = f"/tables/{table['table_id']}"
    lobby_url = str(stack.lobby.base_url)
    follower = Follower(lobby_url, f"{url}/feed", until=lambda events: len(events) == 4).start()
    ada = stack.lobby.post(f"{url}/seats", json={"name": "ada"}).json()
    stack.lobby.post(f"{url}/seats", json={"name": "bob"})
    started = stack.lobby.post(f"{url}/start", headers=auth(ada["token"]))
    assert started.status_code == 201, started.text
    follower.join(LIVE_S)

    assert follower.ids == [1, 2, 3, 4]
    assert [e.type for e in follower.events] == [
        "TableCreated",
        "SeatTaken",
        "SeatTaken",
        "TableStarted",
    ]
    created, first, second, start = (event.data for event in follower.events)
    assert created["data"]["options"] == {} and json.dumps(deck) not in json.dumps(created)
    assert list(created["data"]["commitments"]) == ["deck"]  # the hash, never the order
    assert (first["data"], second["data"]) == (
        {"type": "SeatTaken", "seat": 0, "player": "ada"},
        {"type": "SeatTaken", "seat": 1, "player": "bob"},
    )
    assert start["seat"] == 0 and start["data"]["match_id"] == started.json()["match_id"]
    started_match(stack, started)

    resumed = Follower(
        lobby_url,
        f"{url}/feed",
        headers={"Last-Event-ID": "2"},
        until=lambda events: len(events) == 2,
    ).start()
    resumed.join(LIVE_S)
    assert [e.data for e in resumed.events] == [second, start]


def test_bad_resume_points_and_unknown_streams_get_problems(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, seed=34)
    feed = f"/matches/{match_id}/feed"
    cases = [
        (stack.match.get(feed, headers={"Last-Event-ID": "abc"}), 400, "bad-last-event-id"),
        (stack.match.get(feed, headers={"Last-Event-ID": "-1"}), 400, "bad-last-event-id"),
        (stack.match.get(feed, headers={"Last-Event-ID": "1_0"}), 400, "bad-last-event-id"),
        (stack.match.get(feed, headers={"Last-Event-ID": "999"}), 409, "bad-resume-point"),
        (stack.match.get(feed, params={"after": "x"}), 400, "invalid-request"),
        (stack.match.get(feed, params={"ticket": "not-a-ticket"}), 401, "feed-ticket-refused"),
        (stack.match.get(feed, headers=auth("not-a-token")), 403, "unknown-token"),
        (stack.match.get("/matches/nope/feed"), 404, "match-not-found"),
        (stack.lobby.get("/tables/nope/feed"), 404, "table-not-found"),
        # without a key (a key's request is first the key's app's: no table, 404)
        (
            httpx.get(f"{stack.lobby.base_url}/tables/nope/feed", headers={"Last-Event-ID": "x"}),
            400,
            None,
        ),
    ]
    for response, status, code in cases:
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["status"] == status
        if code is not None:
            assert response.json()["type"].endswith(f"/{code}"), response.text


def stopped_with_a_feed_open(stack: Stack, seed: int) -> float:
    """A second match service stopped while a feed follows a match on it: how long it took
    to exit. It exits (``stop`` raises if it has not by its deadline, as it would not if the
    open feed held it), its feed cut after the events it had sent."""
    match_id, _ = open_table(stack, "hanabi", 2, seed=seed)
    port = free_port()
    second = stack.start("match", name="match-feeds", PLAYTABLE_MATCH_PORT=str(port))
    base_url = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base_url) as client:
        wait_healthy(client, second)
    version = stack.match.get(f"/matches/{match_id}").json()["version"]
    follower = Follower(base_url, f"/matches/{match_id}/feed").start()
    wait_until(lambda: len(follower.ids) == version, what="the feed's first events")
    began = time.monotonic()
    stack.stop("match-feeds")  # waits for the process to exit (raises past its deadline)
    stopped_s = time.monotonic() - began
    follower.join(30, cut_off=True)
    assert follower.ids == list(range(1, version + 1))
    return stopped_s


def test_a_service_stops_with_feeds_open(stack: Stack) -> None:
    stopped_with_a_feed_open(stack, seed=35)


@pytest.mark.speed  # an upper bound on time: left out of the default run
def test_a_service_stops_promptly_with_feeds_open(stack: Stack) -> None:
    assert stopped_with_a_feed_open(stack, seed=36) < 8


def test_private_feeds_need_the_invitation_or_a_seat(stack: Stack) -> None:
    table = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2, "visibility": "private"}
    ).json()
    invitation = table["invitation_token"]
    url = f"/tables/{table['table_id']}"
    tokens = [
        stack.lobby.post(f"{url}/seats", json={"name": name}, headers=auth(invitation)).json()[
            "token"
        ]
        for name in ("ada", "bob")
    ]
    started = stack.lobby.post(f"{url}/start", headers=auth(tokens[0]))
    match_id = started_match(stack, started, token=tokens[0])["match_id"]
    match_feed = f"/matches/{match_id}/feed"

    for response, status in (
        (stack.lobby.get(f"{url}/feed"), 403),
        (stack.lobby.get(f"{url}/feed", params={"ticket": "guess"}), 401),
        (stack.lobby.post(f"{url}/feed-tickets", headers=auth("guess")), 403),
        (stack.match.get(match_feed), 403),
        (stack.match.get(match_feed, params={"ticket": "guess"}), 401),
        (stack.match.post(f"{match_feed}-tickets", headers=auth("guess")), 403),
    ):
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/problem+json")

    table_feed = Follower(
        str(stack.lobby.base_url),
        f"{url}/feed",
        params={"ticket": ticket(stack.lobby, f"{url}/feed", invitation)},
        until=lambda events: events[-1].type == "TableStarted",
    ).start()
    invited = Follower(
        match_url(stack),
        match_feed,
        params={"ticket": ticket(stack.match, match_feed, invitation)},
        until=lambda events: len(events) == 1,
    ).start()
    table_feed.join(LIVE_S)
    invited.join(LIVE_S)
    assert table_feed.ids == [1, 2, 3, 4]
    assert invitation not in json.dumps([event.data for event in table_feed.events])
    assert_own_cards_hidden(invited.events, seat=-1, players=2)


def test_a_feed_ticket_opens_one_connection_of_its_own_feed_and_holds_no_token(
    stack: Stack,
) -> None:
    """A browser's feed carries a ticket, not its token: Redis holds the ticket's hash with the
    hash of the token it stands for; it opens one connection of the feed it was given for, as
    that token would, and is refused (401, get a new one) once used, lost or for another feed."""
    match_id, tokens = open_table(stack, "hanabi", 2, seed=36)
    other_id, _ = open_table(stack, "hanabi", 2, seed=37)
    feed = f"/matches/{match_id}/feed"
    given = stack.match.post(f"{feed}-tickets", headers=auth(tokens[1]))
    assert given.status_code == 201, given.text
    assert set(given.json()) == {"ticket", "expires_at"}
    used = given.json()["ticket"]
    prefix = stack.env["PLAYTABLE_STREAM_PREFIX"]
    with redis.Redis.from_url(stack.env["REDIS_URL"]) as store:
        [key] = store.keys(f"{prefix}:{{feed-ticket:*")
        held = store.get(key)
        assert held is not None and 0 < store.ttl(key) <= TICKET_TTL_S
        assert tokens[1] not in held.decode() and used not in key.decode()
        assert hash_token(tokens[1]) in held.decode()

        match = stack.match.get(f"/matches/{match_id}").json()
        version, table_id = match["version"], match["table_id"]
        seat_1 = Follower(
            match_url(stack), feed, params={"ticket": used}, until=lambda e: len(e) == version
        ).start()
        seat_1.join(LIVE_S)
        assert_own_cards_hidden(seat_1.events, seat=1, players=2)

        lost = ticket(stack.match, feed, tokens[0])
        store.delete(*store.keys(f"{prefix}:{{feed-ticket:*"))  # Redis wiped: tickets lost
        refused = [
            stack.match.get(feed, params={"ticket": used}),  # used already
            stack.match.get(feed, params={"ticket": lost}),
            stack.match.get(  # a ticket is for one feed only (and used up by trying another)
                f"/matches/{other_id}/feed", params={"ticket": ticket(stack.match, feed, tokens[0])}
            ),
            stack.lobby.get(
                f"/tables/{table_id}/feed", params={"ticket": ticket(stack.match, feed, tokens[0])}
            ),
        ]
    for response in refused:
        assert response.status_code == 401, response.text
        assert response.json()["type"].endswith("/feed-ticket-refused")
        assert "get a new one" in response.json()["detail"]
    for response, status, code in (
        (stack.match.post(f"{feed}-tickets"), 401, "token-required"),
        (stack.match.get(feed, params={"token": tokens[0]}), 400, "invalid-request"),
        (stack.lobby.get(f"/tables/{table_id}/feed", params={"invitation": "x"}), 400, None),
        (stack.match.post(f"{feed}-tickets", headers=auth("guess")), 403, "unknown-token"),
        # a public table's feed needs no ticket, but a ticket is for a token the table knows
        (stack.lobby.post(f"/tables/{table_id}/feed-tickets", headers=auth("guess")), 403, None),
        (stack.match.post("/matches/nope/feed-tickets", headers=auth(tokens[0])), 404, None),
        (stack.lobby.post("/tables/nope/feed-tickets", headers=auth(tokens[0])), 404, None),
    ):
        assert response.status_code == status, response.text
        if code is not None:
            assert response.json()["type"].endswith(f"/{code}")
