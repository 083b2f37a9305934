"""Webhook deliveries end to end: a real Celery worker on the Redis broker delivers a match's
signed events in order, retries a failing receiver, disables a subscription gone or failing,
and loses nothing to a killed worker, a draining backlog or a Redis that lost its tasks."""

from __future__ import annotations

import random
import re
import threading
import time
from typing import Any

import psycopg
import pytest
import redis as redis_sync

from tests.e2e.conftest import Stack
from tests.e2e.play import open_table, play_to_end
from tests.e2e.webhooks.service import Hooks, Received, eventually, table_created

pytestmark = pytest.mark.e2e


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
