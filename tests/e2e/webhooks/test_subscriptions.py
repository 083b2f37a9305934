"""Webhook subscriptions end to end: private targets and unknown event types are refused, the
event types are listed with their samples, rotated secrets both sign, a deleted or disabled
subscription gets nothing more, a ping arrives signed, the delivery log filters and pages."""

from __future__ import annotations

import threading
import time
from datetime import timedelta, timezone
from typing import Any

import httpx
import msgspec
import psycopg
import pytest

from services.rules.games import load_games
from services.webhooks.signing import signature
from shared.domain.hosting import HOSTING_EVENT_TYPES, HostingEvent
from shared.domain.messages import MATCH_FINISHED, TABLE_EVENT_TYPES, FinishedMatch, TableEvent
from shared.edge.apps import API_KEY_HEADER
from tests.conftest import new_app_key
from tests.e2e.conftest import Stack
from tests.e2e.webhooks.service import Hooks, eventually, table_created

pytestmark = pytest.mark.e2e


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
