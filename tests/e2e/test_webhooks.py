"""Webhooks end to end: a real Celery worker on the Redis broker delivers signed events to a
local receiver that verifies them with the ``standardwebhooks`` library."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import msgspec
import psycopg
import pytest
import redis as redis_sync
from standardwebhooks import Webhook, WebhookVerificationError

from services.rules.games import load_games
from services.webhooks.signing import signature
from shared.domain.hosting import HOSTING_EVENT_TYPES, HostingEvent
from shared.domain.messages import MATCH_FINISHED, TABLE_EVENT_TYPES, FinishedMatch, TableEvent
from shared.edge.apps import API_KEY_HEADER
from tests.conftest import new_app_key
from tests.e2e.conftest import Stack, free_port, wait_healthy
from tests.e2e.play import open_table, play_to_end

pytestmark = pytest.mark.e2e

WEBHOOK_ENV = {
    "PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
    "PLAYTABLE_WEBHOOK_RETRY_BASE_S": "0.2",
    "PLAYTABLE_WEBHOOK_MAX_ATTEMPTS": "4",
    "PLAYTABLE_WEBHOOK_DISABLE_AFTER_FAILURES": "8",
    "PLAYTABLE_WEBHOOK_DISABLE_AFTER_S": "0",
    "PLAYTABLE_WEBHOOK_TIMEOUT_S": "30",
    "PLAYTABLE_WEBHOOK_REDRIVE_AFTER_S": "1",
    "PLAYTABLE_WEBHOOK_WORKER_CONCURRENCY": "4",
}


@dataclass
class Received:
    webhook_id: str
    body: dict[str, Any]
    signatures: int
    raw: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Receiver:
    """Receives on ``/<name>``; each name verifies with its secrets and answers as told."""

    url: str
    secrets: dict[str, list[str]] = field(default_factory=dict)
    received: dict[str, list[Received]] = field(default_factory=dict)
    requests: dict[str, list[str]] = field(default_factory=dict)
    """Every request's webhook-id per name, answered or not."""
    answers: dict[str, Callable[[str, int], int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def verified(self, name: str) -> list[Received]:
        with self.lock:
            return list(self.received.get(name, []))


def serve_receiver() -> tuple[Receiver, ThreadingHTTPServer]:
    port = free_port()
    receiver = Receiver(url=f"http://127.0.0.1:{port}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            name = self.path.strip("/")
            body = self.rfile.read(int(self.headers["content-length"]))
            headers = {key.lower(): value for key, value in self.headers.items()}
            webhook_id = headers["webhook-id"]
            with receiver.lock:
                seen = receiver.requests.setdefault(name, [])
                seen.append(webhook_id)
                count = seen.count(webhook_id)
            for secret in receiver.secrets[name]:
                Webhook(secret).verify(body, headers)  # raises unless signed with it
            status = receiver.answers.get(name, lambda _id, _n: 200)(webhook_id, count)
            if 200 <= status < 300:
                received = Received(
                    webhook_id,
                    json.loads(body),
                    len(headers["webhook-signature"].split()),
                    body,
                    headers,
                )
                with receiver.lock:
                    receiver.received.setdefault(name, []).append(received)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

        def handle_one_request(self) -> None:
            try:
                super().handle_one_request()
            except (OSError, WebhookVerificationError):
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server


@dataclass
class Hooks:
    api: httpx.Client
    receiver: Receiver
    env: dict[str, str]
    log_path: str
    worker: subprocess.Popen[bytes] | None = None

    def start_worker(self) -> None:
        with open(self.log_path, "ab") as log:
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "services.operator.cli", "webhooks"],
                env=self.env,
                stdout=log,
                stderr=log,
            )

    def stop_worker(self, signum: int = signal.SIGTERM) -> None:
        assert self.worker is not None
        self.worker.send_signal(signum)
        try:
            self.worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.wait()
        self.worker = None

    def subscribe(self, name: str, **body: Any) -> dict[str, Any]:
        created = self.api.post(
            "/webhooks/subscriptions", json={"url": f"{self.receiver.url}/{name}", **body}
        )
        assert created.status_code == 201, created.text
        secret = created.json()["secret"]
        assert secret.startswith("whsec_")
        self.receiver.secrets[name] = [secret]
        return created.json()["subscription"]

    def deliveries(self, subscription_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = 0
        while True:
            page = self.api.get(
                f"/webhooks/subscriptions/{subscription_id}/deliveries",
                params={"after": after, "limit": 200},
            )
            assert page.status_code == 200, page.text
            found += page.json()["deliveries"]
            after = page.json()["next_after"]
            if after is None:
                return found


def eventually(check: Callable[[], Any], timeout_s: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


@contextlib.contextmanager
def running_webhooks(stack: Stack) -> Iterator[Hooks]:
    """The webhooks API and a dispatcher with its worker, beside ``stack``, the receiver on
    loopback; all stopped after."""
    receiver, server = serve_receiver()
    port = free_port()
    env = {**stack.env, **WEBHOOK_ENV, "PLAYTABLE_WEBHOOKS_PORT": str(port)}
    api = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", timeout=10, headers={API_KEY_HEADER: stack.app_key}
    )
    with tempfile.NamedTemporaryFile(suffix=".log", delete=False) as log:
        log_path = log.name
    running = Hooks(api=api, receiver=receiver, env=env, log_path=log_path)
    api_process = subprocess.Popen(
        [sys.executable, "-m", "services.operator.cli", "webhooks-api"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_healthy(api, api_process)
        running.start_worker()
        yield running
    finally:
        if running.worker is not None:
            running.stop_worker()
        api_process.terminate()
        api_process.wait(timeout=10)
        api.close()
        server.shutdown()
        os.unlink(log_path)


@pytest.fixture(scope="module")
def hooks(stack: Stack) -> Iterator[Hooks]:
    with running_webhooks(stack) as running:
        yield running


def table_created(stack: Stack) -> str:
    created = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2})
    assert created.status_code == 201, created.text
    return f"table-{created.json()['table_id']}"


def match_log(stack: Stack, match_id: str) -> list[dict[str, Any]]:
    """The match's events as a spectator reads them."""
    events: list[dict[str, Any]] = []
    after: int | None = 0
    while after is not None:
        page = stack.match.get(f"/matches/{match_id}/events", params={"after": after})
        assert page.status_code == 200, page.text
        events += page.json()["items"]
        after = page.json()["next_after"]
    return events


def test_private_targets_are_refused(hooks: Hooks) -> None:
    for url in ("http://10.1.2.3/hook", "http://169.254.169.254/latest", "http://[::1]:9/x"):
        refused = hooks.api.post("/webhooks/subscriptions", json={"url": url})
        assert refused.status_code == 422, refused.text
        assert refused.json()["type"].endswith("/target-refused")
    for url in ("ftp://example.com/", "http://", "example.com"):  # not an http(s) URL at all
        refused = hooks.api.post("/webhooks/subscriptions", json={"url": url})
        assert refused.status_code == 400, refused.text
        assert refused.json()["errors"][0]["key"] == "url"


def test_event_types_no_event_has_are_refused(hooks: Hooks) -> None:
    """A typo would otherwise never fire: every name must be a table's, a game's (as the
    catalogue lists them) or ``MatchFinished``; nothing is saved otherwise."""
    target = f"{hooks.receiver.url}/typo"
    before = hooks.api.get("/webhooks/subscriptions").json()
    for types in (["CardPlayd"], ["TableCreated", "cardplayed"]):
        refused = hooks.api.post(
            "/webhooks/subscriptions", json={"url": target, "event_types": types}
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["errors"][0]["key"] == "event_types"
    assert hooks.api.get("/webhooks/subscriptions").json() == before
    known = ["TableCreated", "ClueGiven", "TilePlaced", "MatchFinished"]
    accepted = hooks.api.post("/webhooks/subscriptions", json={"url": target, "event_types": known})
    assert accepted.status_code == 201, accepted.text
    subscription_id = accepted.json()["subscription"]["id"]
    patched = hooks.api.patch(
        f"/webhooks/subscriptions/{subscription_id}", json={"event_types": ["Nope"]}
    )
    assert patched.status_code == 400, patched.text
    assert hooks.api.delete(f"/webhooks/subscriptions/{subscription_id}").status_code == 204


def test_a_full_match_is_delivered_in_order(stack: Stack, hooks: Hooks) -> None:
    everything = hooks.subscribe("all")
    finished_only = hooks.subscribe("finished", event_types=["MatchFinished"])
    match_id, tokens = open_table(stack, "hanabi", 2, seed=7)
    hooks.subscribe("this-match", match_id=match_id)
    play_to_end(stack, match_id, tokens, random.Random(7))
    stream = f"match-{match_id}"

    def finished(name: str) -> list[Received]:
        got = [r for r in hooks.receiver.verified(name) if r.body["stream_id"] == stream]
        return got if got and got[-1].body["type"] == "MatchFinished" else []

    delivered = eventually(lambda: finished("all"), what="the whole match")
    log = match_log(stack, match_id)
    assert [(r.body["version"], r.body["type"]) for r in delivered] == [
        (event["version"], event["type"]) for event in log
    ] + [(log[-1]["version"], "MatchFinished")]
    assert [r.body["data"] for r in delivered[:-1]] == [event["data"] for event in log]
    assert {r.body["game"] for r in delivered} == {"hanabi"}  # whose events ``data`` holds
    bodies = [r.body for r in hooks.receiver.verified("all")]
    tables = [body for body in bodies if body["stream_id"].startswith("table-")]
    assert tables and all(body["game"] is None for body in tables)
    assert len({r.webhook_id for r in delivered}) == len(delivered)
    assert delivered[0].body["timestamp"].endswith("Z")
    assert [r.body for r in eventually(lambda: finished("finished"))] == [delivered[-1].body]
    later = eventually(lambda: finished("this-match"))
    assert [r.body for r in later] == [r.body for r in delivered[-len(later) :]]
    assert all(r.body["stream_id"] == stream for r in hooks.receiver.verified("this-match"))
    assert any(r.body["stream_id"].startswith("table-") for r in hooks.receiver.verified("all"))
    assert not [r for r in hooks.receiver.verified("finished") if r.body["stream_id"] != stream]

    def logged() -> list[dict]:
        """The delivery log once every attempt is recorded (just after the receiver answered)."""
        entries = [d for d in hooks.deliveries(everything["id"]) if d["stream_id"] == stream]
        return entries if all(d["status"] != "pending" for d in entries) else []

    log_entries = eventually(logged, what="the attempts recorded")
    assert len(log_entries) == len(delivered)
    assert all(d["status"] == "delivered" for d in log_entries)
    assert all([a["status_code"] for a in d["attempts"]] == [200] for d in log_entries)
    assert len(hooks.deliveries(finished_only["id"])) == 1


def test_a_failing_receiver_gets_the_event_once_it_recovers(stack: Stack, hooks: Hooks) -> None:
    hooks.receiver.answers["flaky"] = lambda _id, count: 503 if count <= 2 else 200
    subscription = hooks.subscribe("flaky", event_types=["TableCreated"])
    stream = table_created(stack)
    received = eventually(lambda: hooks.receiver.verified("flaky"), what="the recovered delivery")
    assert [r.body["stream_id"] for r in received] == [stream]
    assert hooks.receiver.requests["flaky"] == [received[0].webhook_id] * 3

    def settled() -> list[dict[str, Any]]:
        found = hooks.deliveries(subscription["id"])
        return found if found and found[0]["status"] == "delivered" else []

    (delivery,) = eventually(settled)
    assert [a["status_code"] for a in delivery["attempts"]] == [503, 503, 200]
    assert delivery["attempts"][0]["error"] == "HTTP 503"
    assert all(a["duration_ms"] > 0 for a in delivery["attempts"])

    again = hooks.api.post(f"/webhooks/deliveries/{delivery['id']}/redeliver")
    assert again.status_code == 202, again.text
    eventually(lambda: len(hooks.receiver.verified("flaky")) == 2, what="the redelivery")
    assert hooks.receiver.verified("flaky")[1].webhook_id == delivery["webhook_id"]
    assert eventually(lambda: len(hooks.deliveries(subscription["id"])[0]["attempts"]) == 4)


def test_gone_disables_the_subscription(stack: Stack, hooks: Hooks) -> None:
    hooks.receiver.answers["gone"] = lambda _id, _count: 410
    subscription = hooks.subscribe("gone", event_types=["TableCreated"])
    table_created(stack)

    def disabled() -> dict[str, Any] | None:
        info = hooks.api.get(f"/webhooks/subscriptions/{subscription['id']}").json()
        return None if info["enabled"] else info

    assert "410" in eventually(disabled, what="the subscription disabled")["disabled_reason"]
    (delivery,) = hooks.deliveries(subscription["id"])
    assert delivery["status"] == "failed"
    assert [a["status_code"] for a in delivery["attempts"]] == [410]
    enabled = hooks.api.patch(
        f"/webhooks/subscriptions/{subscription['id']}", json={"enabled": True}
    )
    assert enabled.status_code == 200 and enabled.json()["disabled_reason"] is None


def test_rotated_secrets_both_sign_during_the_overlap(stack: Stack, hooks: Hooks) -> None:
    subscription = hooks.subscribe("rotated", event_types=["TableCreated"])
    old_secret = hooks.receiver.secrets["rotated"][0]
    rotated = hooks.api.post(f"/webhooks/subscriptions/{subscription['id']}/rotate-secret")
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["secret"] != old_secret
    hooks.receiver.secrets["rotated"] = [old_secret, rotated.json()["secret"]]
    table_created(stack)
    (received,) = eventually(lambda: hooks.receiver.verified("rotated"))
    assert received.signatures == 2
    info = hooks.api.get(f"/webhooks/subscriptions/{subscription['id']}").json()
    assert info["previous_secret_until"] is not None and "secret" not in info


def test_a_killed_workers_deliveries_go_through_another_worker_within_seconds(
    hooks: Hooks,
) -> None:
    """A worker killed (SIGKILL) while it sends the first of a stream's three deliveries to a
    slow receiver: another worker sends it and the two behind it within seconds, not once the
    broker's visibility timeout (an hour) gives its task back. The dead worker's row lock ended
    with its Postgres connection, and the dispatcher's look found the delivery overdue, first in
    its stream and held by no task. The receiver had the interrupted one already and gets it
    twice (at least once: the same webhook-id), the others once each, in order."""
    arrived, release = threading.Event(), threading.Event()
    hung: list[str] = []

    def hang_the_first(webhook_id: str, _count: int) -> int:
        if not hung:
            hung.append(webhook_id)
            arrived.set()
            release.wait(timeout=30)
            return 503  # never read: the worker that sent it is dead by now
        return 200

    hooks.receiver.answers["killed"] = hang_the_first
    subscription = hooks.subscribe("killed", event_types=["TableCreated"])
    ping = f"/webhooks/subscriptions/{subscription['id']}/ping"
    first = hooks.api.post(ping).json()["webhook_id"]
    assert arrived.wait(timeout=30), "the first attempt never arrived"
    behind = [hooks.api.post(ping).json()["webhook_id"] for _ in range(2)]
    victim, hooks.worker = hooks.worker, None
    assert victim is not None
    hooks.start_worker()  # the other worker: its dispatcher looks every second
    victim.kill()
    victim.wait()
    release.set()
    received = eventually(
        lambda: len(hooks.receiver.verified("killed")) == 3 and hooks.receiver.verified("killed"),
        what="the killed worker's deliveries",
    )
    assert [r.webhook_id for r in received] == [first, *behind]
    assert hooks.receiver.requests["killed"] == [first, first, *behind]
    eventually(
        lambda: {d["status"] for d in hooks.deliveries(subscription["id"])} == {"delivered"},
        what="the three deliveries recorded as delivered",
    )


def test_a_deleted_subscription_gets_nothing_more(
    stack: Stack, hooks: Hooks, database_url: str
) -> None:
    deleted = hooks.subscribe("deleted", event_types=["TableCreated"])
    hooks.subscribe("kept", event_types=["TableCreated"])
    first = table_created(stack)
    eventually(lambda: hooks.receiver.verified("deleted"), what="the first delivery")
    path = f"/webhooks/subscriptions/{deleted['id']}"
    removed = hooks.api.delete(path)
    assert removed.status_code == 204 and not removed.content

    for gone in (hooks.api.get(path), hooks.api.delete(path), hooks.api.get(f"{path}/deliveries")):
        assert gone.status_code == 404, gone.text
        assert gone.json()["type"].endswith("/subscription-not-found")
    assert deleted["id"] not in {s["id"] for s in hooks.api.get("/webhooks/subscriptions").json()}
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = %s", (deleted["id"],)
        ).fetchone()
    assert rows == (0,)

    later = table_created(stack)
    eventually(
        lambda: [r for r in hooks.receiver.verified("kept") if r.body["stream_id"] == later],
        what="the later event delivered to the subscription kept",
    )
    assert [r.body["stream_id"] for r in hooks.receiver.verified("deleted")] == [first]


@pytest.mark.parametrize("answer", [503, 410])
def test_deleting_waits_for_the_attempt_under_way_then_nothing_is_sent(
    stack: Stack, hooks: Hooks, answer: int
) -> None:
    """The deletion waits for the attempt under way, which asks for a retry (503) or disables
    the subscription (410, an update of the row being deleted: no deadlock); once it has
    answered, nothing more is sent."""
    name = f"deleted-while-sending-{answer}"
    arrived, release = threading.Event(), threading.Event()

    def hang_on_the_retry(_id: str, count: int) -> int:
        if count == 2:
            arrived.set()
            release.wait(timeout=30)
            return answer
        return 503

    hooks.receiver.answers[name] = hang_on_the_retry
    subscription = hooks.subscribe(name, event_types=["TableCreated"])
    table_created(stack)
    assert arrived.wait(timeout=30), "the retry never arrived"
    url = f"{hooks.api.base_url}/webhooks/subscriptions/{subscription['id']}"
    answers: list[httpx.Response] = []
    deleting = threading.Thread(target=lambda: answers.append(hooks.api.delete(url, timeout=30)))
    deleting.start()
    deleting.join(timeout=0.5)
    assert deleting.is_alive(), "the deletion did not wait for the attempt under way"
    release.set()
    deleting.join(timeout=30)
    assert [response.status_code for response in answers] == [204]
    sent = list(hooks.receiver.requests[name])
    time.sleep(2)  # a retry, 0.4 s after a 503, would have come by now
    assert hooks.receiver.requests[name] == sent
    assert len(sent) == 2


def test_every_event_type_is_listed_once_with_its_sample(stack: Stack, hooks: Hooks) -> None:
    """The types a subscription may name (a table's, each game's as the catalogue lists them,
    ``MatchFinished``), each with a webhook body as a receiver gets it, its data decoding as
    that event."""
    listed = hooks.api.get("/webhooks/event-types")
    assert listed.status_code == 200, listed.text
    infos = listed.json()
    names = [info["type"] for info in infos]
    catalogue = {game["name"]: game["event_types"] for game in stack.lobby.get("/games").json()}
    expected = {*TABLE_EVENT_TYPES, MATCH_FINISHED, *(t for ts in catalogue.values() for t in ts)}
    assert sorted(names) == sorted(expected) and len(names) == len(set(names))
    games = load_games()
    for info in infos:
        sample = info["sample"]
        assert list(sample) == ["type", "timestamp", "stream_id", "version", "game", "data"]
        assert sample["type"] == info["type"] and sample["timestamp"].endswith("Z")
        assert info["games"] == [name for name, types in catalogue.items() if info["type"] in types]
        if info["type"] in HOSTING_EVENT_TYPES:
            shown_as = HostingEvent  # every match's, about its seats and clocks
        elif info["games"]:
            shown_as = games[info["games"][0]].redacted_event_type
        else:
            shown_as = FinishedMatch if info["type"] == MATCH_FINISHED else TableEvent
        msgspec.convert(sample["data"], shown_as)
    accepted = hooks.api.post(
        "/webhooks/subscriptions",
        json={"url": f"{hooks.receiver.url}/all-types", "event_types": names},
    )
    assert accepted.status_code == 201, accepted.text
    created = accepted.json()["subscription"]["id"]
    assert hooks.api.delete(f"/webhooks/subscriptions/{created}").status_code == 204


def test_the_hanabi_samples_show_no_hidden_card(hooks: Hooks) -> None:
    """A spectator sees no hand and no card drawn: neither does a sample."""
    infos = {info["type"]: info for info in hooks.api.get("/webhooks/event-types").json()}
    dealt = infos["GameStarted"]["sample"]["data"]
    assert infos["GameStarted"]["games"][0] == "hanabi" and dealt["type"] == "CardsDealt"
    assert "deck" not in dealt
    cards = [card for hand in dealt["hands"] for card in hand]
    assert cards and all(card["suit"] is None and card["rank"] is None for card in cards)
    drawn = infos["CardDrawn"]["sample"]["data"]
    assert drawn["suit"] is None and drawn["rank"] is None


def test_a_ping_arrives_signed_and_is_logged(hooks: Hooks, database_url: str) -> None:
    """Whatever the subscription's event types; a disabled one's ping is refused, another
    app's subscription is not found, and neither creates a delivery."""
    subscription = hooks.subscribe("ping", event_types=["TableStarted"])
    path = f"/webhooks/subscriptions/{subscription['id']}"
    pinged = hooks.api.post(f"{path}/ping")
    assert pinged.status_code == 202, pinged.text
    delivery = pinged.json()
    assert delivery["event_type"] == "WebhookPing"
    assert delivery["stream_id"] == f"ping-{subscription['id']}"
    assert delivery["webhook_id"].startswith("ping:")
    (received,) = eventually(lambda: hooks.receiver.verified("ping"), what="the ping")
    assert received.webhook_id == delivery["webhook_id"]
    secret = hooks.receiver.secrets["ping"][0]
    signed = signature(
        secret, received.webhook_id, int(received.headers["webhook-timestamp"]), received.raw
    )
    assert received.headers["webhook-signature"].split() == [signed]
    assert received.body["type"] == "WebhookPing"
    assert received.body["data"]["subscription_id"] == subscription["id"]

    def logged() -> list[dict[str, Any]]:
        found = hooks.deliveries(subscription["id"])
        return found if found and found[0]["status"] == "delivered" else []

    (entry,) = eventually(logged, what="the ping's attempt in the log")
    assert entry["id"] == delivery["id"]
    assert [attempt["status_code"] for attempt in entry["attempts"]] == [200]

    other_key = new_app_key(database_url, "other-app", app="another app")
    foreign = hooks.api.post(f"{path}/ping", headers={API_KEY_HEADER: other_key})
    assert foreign.status_code == 404, foreign.text
    assert foreign.json()["type"].endswith("/subscription-not-found")
    assert hooks.api.patch(path, json={"enabled": False}).status_code == 200
    refused = hooks.api.post(f"{path}/ping")
    assert refused.status_code == 409, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["type"].endswith("/subscription-disabled")
    assert "disabled through the API" in refused.json()["detail"]
    assert [d["id"] for d in hooks.deliveries(subscription["id"])] == [delivery["id"]]


def test_the_delivery_log_filters_and_pages(hooks: Hooks, database_url: str) -> None:
    """Status, event type and a period narrow the log; paging a filtered log with ``after``
    visits each match once; bad values get a 400 problem."""
    subscription = hooks.subscribe("log", event_types=["TableCreated"])
    types = ["TableCreated", "SeatTaken", "MatchFinished"]
    statuses = ["delivered", "failed", "missed", "pending"]
    with psycopg.connect(database_url) as conn:
        start = conn.execute("SELECT date_trunc('second', now()) - interval '1 day'").fetchone()[0]
        rows = [
            (f"log-{n}", types[n % 3], statuses[n % 4], start + timedelta(minutes=n))
            for n in range(30)
        ]
        ids = [
            conn.execute(
                "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id,"
                " event_type, body, occurred_at_ms, status, created_at, due_at)"
                " VALUES (%s, %s, 'table-x', %s, '{}', 0, %s, %s, now() + interval '1 day')"
                " RETURNING id",
                (subscription["id"], key, kind, status, at),
            ).fetchone()[0]
            for key, kind, status, at in rows
        ]
    logged = list(zip(ids, rows, strict=True))
    url = f"/webhooks/subscriptions/{subscription['id']}/deliveries"

    def paged(**query: str) -> list[int]:
        seen: list[int] = []
        after: int | None = 0
        while after is not None:
            page = hooks.api.get(url, params={**query, "after": after, "limit": 4})
            assert page.status_code == 200, page.text
            seen += [delivery["id"] for delivery in page.json()["deliveries"]]
            after = page.json()["next_after"]
        return seen

    at = [row[3] for row in rows]
    cases = [
        ({"status": "missed"}, lambda row: row[2] == "missed"),
        ({"status": "pending"}, lambda row: row[2] == "pending"),
        ({"event_type": "SeatTaken"}, lambda row: row[1] == "SeatTaken"),
        ({"since": at[10].isoformat()}, lambda row: row[3] >= at[10]),
        ({"until": at[10].isoformat()}, lambda row: row[3] < at[10]),
        (
            {
                "status": "failed",
                "event_type": "TableCreated",
                "since": at[5].isoformat(),
                "until": at[25].astimezone(timezone(timedelta(hours=2))).isoformat(),
            },
            lambda row: (
                row[2] == "failed" and row[1] == "TableCreated" and at[5] <= row[3] < at[25]
            ),
        ),
        ({"since": at[7].isoformat(), "until": at[7].isoformat()}, lambda row: False),
        # a period that ends before it begins holds nothing (any two times make a period)
        ({"since": at[2].isoformat(), "until": at[1].isoformat()}, lambda row: False),
    ]
    assert paged() == ids
    for query, matches in cases:
        expected = [delivery_id for delivery_id, row in logged if matches(row)]
        assert paged(**query) == expected, query
    assert expected == [] and paged(event_type="TableStarted") == []

    for bad in [
        {"status": "lost"},
        {"since": "yesterday"},
        {"since": "2025-06-06"},
        {"since": "1749238200"},
        {"until": "2025-06-06T19:30:00"},
        {"event_type": "x" * 201},
    ]:
        refused = hooks.api.get(url, params=bad)
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"].endswith("/invalid-request")
        assert refused.json()["errors"][0]["key"] in bad, refused.json()
    assert paged() == ids


def test_a_subscription_that_keeps_failing_is_disabled_and_enabling_it_redelivers(
    stack: Stack, hooks: Hooks
) -> None:
    """Eight attempts in a row fail (PLAYTABLE_WEBHOOK_DISABLE_AFTER_FAILURES): disabled, with
    the reason; what comes while it is disabled is missed; enabled again, the receiver gets
    all of it: the deliveries that failed and those it missed."""
    answer = {"status": 503}
    hooks.receiver.answers["down"] = lambda _id, _count: answer["status"]
    subscription = hooks.subscribe("down", event_types=["TableCreated"])
    path = f"/webhooks/subscriptions/{subscription['id']}"
    streams = [table_created(stack) for _ in range(3)]

    def disabled() -> dict[str, Any] | None:
        info = hooks.api.get(path).json()
        return None if info["enabled"] else info

    info = eventually(disabled, what="the subscription disabled")
    streak = re.match(r"(\d+) attempts in a row failed, the first at ", info["disabled_reason"])
    assert streak is not None and int(streak[1]) >= 8, info["disabled_reason"]
    assert info["failing_since"] is not None
    streams.append(table_created(stack))
    eventually(lambda: len(hooks.deliveries(subscription["id"])) == 4, what="the missed delivery")
    before = {d["stream_id"]: d["status"] for d in hooks.deliveries(subscription["id"])}
    assert before[streams[-1]] == "missed"
    assert set(before.values()) <= {"failed", "missed"}
    sent = len(hooks.receiver.requests["down"])
    time.sleep(1.0)  # retries that were due meanwhile find their deliveries missed
    assert len(hooks.receiver.requests["down"]) == sent  # nothing is sent while disabled

    answer["status"] = 200
    enabled = hooks.api.patch(path, json={"enabled": True})
    assert enabled.status_code == 200, enabled.text
    assert enabled.json()["enabled"] and enabled.json()["failing_since"] is None
    received = eventually(
        lambda: len(hooks.receiver.verified("down")) == 4 and hooks.receiver.verified("down"),
        what="everything redelivered",
    )
    assert sorted(r.body["stream_id"] for r in received) == sorted(streams)
    eventually(
        lambda: all(d["status"] == "delivered" for d in hooks.deliveries(subscription["id"])),
        what="the log settled",
    )
    again = hooks.api.patch(path, json={"enabled": True})  # enabled already: nothing is resent
    assert again.status_code == 200
    time.sleep(0.5)
    assert len(hooks.receiver.verified("down")) == 4


def test_disabling_through_the_api_misses_what_comes_meanwhile(stack: Stack, hooks: Hooks) -> None:
    subscription = hooks.subscribe("paused", event_types=["TableCreated"])
    path = f"/webhooks/subscriptions/{subscription['id']}"
    paused = hooks.api.patch(path, json={"enabled": False})
    assert paused.json()["disabled_reason"] == "disabled through the API"
    stream = table_created(stack)
    (missed,) = eventually(lambda: hooks.deliveries(subscription["id"]), what="a delivery")
    assert missed["status"] == "missed" and missed["attempts"] == []
    assert hooks.receiver.verified("paused") == []
    hooks.api.patch(path, json={"enabled": True})
    (received,) = eventually(lambda: hooks.receiver.verified("paused"), what="the redelivery")
    assert received.body["stream_id"] == stream


def add_missed(database_url: str, subscription_id: str, streams: int, per_stream: int) -> None:
    """Deliveries the subscription missed a minute ago, ``per_stream`` in each of ``streams``."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id, event_type,"
            " body, occurred_at_ms, status, created_at)"
            " SELECT %s, 'match-missed-' || s || ':' || v || ':Moved', 'match-missed-' || s,"
            " 'Moved', '{}', 0, 'missed', now() - interval '1 minute'"
            " FROM generate_series(1, %s) AS s, generate_series(1, %s) AS v ORDER BY s, v",
            (subscription_id, streams, per_stream),
        )


def test_another_subscribers_fresh_delivery_goes_while_a_backlog_drains(
    hooks: Hooks, database_url: str
) -> None:
    """Enabling a subscription that missed 1,200 deliveries (120 streams) hands them over at
    once, 12 tasks; another subscriber's ping, sent right after, is attempted while most of
    that backlog still waits, not behind all of it: the backlog drains on a queue of its own,
    which workers take from in turns with the fresh one, and a worker reserves no task beyond
    those it runs (4 here), so the ping waits for one of them at most."""
    backlog, other = hooks.subscribe("backlog"), hooks.subscribe("other")
    path = f"/webhooks/subscriptions/{backlog['id']}"
    assert hooks.api.patch(path, json={"enabled": False}).status_code == 200
    add_missed(database_url, backlog["id"], streams=120, per_stream=10)
    assert hooks.api.patch(path, json={"enabled": True}).status_code == 200
    assert hooks.api.post(f"/webhooks/subscriptions/{other['id']}/ping").status_code == 202
    eventually(lambda: hooks.receiver.verified("other"), what="the ping")
    drained_meanwhile = len(hooks.receiver.verified("backlog"))
    assert drained_meanwhile < 600, drained_meanwhile


def test_deliveries_whose_tasks_redis_lost_go_at_once(
    stack: Stack, hooks: Hooks, database_url: str
) -> None:
    """Redis lost the deployment's data (a FLUSHALL, or a restart without persistence: every
    key of its prefix deleted here) with the tasks of three deliveries: they are sent within
    seconds, in order, within a second of Redis answering."""
    lost = hooks.subscribe("lost")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id, event_type,"
            " body, occurred_at_ms)"
            " SELECT %s, 'match-lost:' || v || ':Moved', 'match-lost', 'Moved', '{}', 0"
            " FROM generate_series(1, 3) AS v ORDER BY v",
            (lost["id"],),
        )  # never enqueued: their tasks are lost
    with redis_sync.Redis.from_url(stack.env["REDIS_URL"]) as redis:
        prefix = stack.env["PLAYTABLE_STREAM_PREFIX"]
        redis.delete(*redis.scan_iter(match=f"{prefix}:*", count=1000))
    received = eventually(
        lambda: len(hooks.receiver.verified("lost")) == 3 and hooks.receiver.verified("lost"),
        what="the lost deliveries",
    )
    assert [r.webhook_id for r in received] == [f"match-lost:{v}:Moved" for v in (1, 2, 3)]
