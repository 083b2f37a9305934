"""A real Prometheus scrapes every process of a stack during a short load: what it stores
through its query API matches what was done (moves counted equal moves made), its alert rules
load, and /ready says what is down."""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Stack, free_port, wait_healthy
from tests.e2e.play import open_table, random_move

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "infra" / "monitoring" / "alerts.yml"
MOVES = 30


def find_prometheus() -> str | None:
    """The machine's Prometheus, installed by ``infra/ensure-prometheus.sh`` if it can be."""
    found = shutil.which("prometheus")
    if found is None:
        subprocess.run(["bash", str(ROOT / "infra" / "ensure-prometheus.sh")], check=False)
        found = shutil.which("prometheus")
    return found


@pytest.fixture(scope="module")
def scraped(stack: Stack, tmp_path_factory) -> Iterator[tuple[httpx.Client, dict[str, int]]]:
    """The stack's rules worker, match and lobby, plus the webhooks API and dispatcher, all
    scraped each 0.5 s by a Prometheus of the test's own."""
    prometheus = find_prometheus()
    if prometheus is None:
        pytest.skip("prometheus is not installed and cannot be (not root, or no apt-get)")
    ports = {name: free_port() for name in ("rules", "webhooks", "webhooks-api", "prometheus")}
    stack.start("rules", "rules-metrics", PLAYTABLE_METRICS_PORT=str(ports["rules"]))
    stack.start("webhooks", PLAYTABLE_METRICS_PORT=str(ports["webhooks"]))
    api = httpx.Client(base_url=f"http://127.0.0.1:{ports['webhooks-api']}", timeout=10)
    wait_healthy(
        api, stack.start("webhooks-api", PLAYTABLE_WEBHOOKS_PORT=str(ports["webhooks-api"]))
    )
    targets = {
        "lobby": stack.lobby.base_url.port,
        "match": stack.match.base_url.port,
        "webhooks-api": ports["webhooks-api"],
        "rules": ports["rules"],
        "webhooks": ports["webhooks"],
    }
    folder = tmp_path_factory.mktemp("prometheus")
    jobs = "".join(
        f"  - job_name: {job}\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        for job, port in targets.items()
    )
    (folder / "prometheus.yml").write_text(
        "global: {scrape_interval: 500ms, evaluation_interval: 500ms}\n"
        f"rule_files: ['{ALERTS}']\nscrape_configs:\n{jobs}"
    )
    server = subprocess.Popen(
        [
            prometheus,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "prometheus.log").open("wb"),
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{ports['prometheus']}", timeout=10)
    try:
        until(lambda: _up(client) == set(targets), f"every target up: {sorted(targets)}")
        yield client, targets
    finally:
        server.terminate()
        server.wait(timeout=10)
        client.close()
        api.close()


def until(check: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"waited {timeout_s} s for {what}")


def query(client: httpx.Client, promql: str) -> list[dict[str, Any]]:
    answer = client.get("/api/v1/query", params={"query": promql})
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]["result"]


def value(client: httpx.Client, promql: str) -> float | None:
    result = query(client, promql)
    return float(result[0]["value"][1]) if result else None


def _up(client: httpx.Client) -> set[str]:
    answer = client.get("/api/v1/query", params={"query": "up == 1"})
    if answer.status_code != 200:  # 503 until Prometheus has opened its storage
        return set()
    return {r["metric"]["job"] for r in answer.json()["data"]["result"]}


def test_prometheus_counts_what_the_stack_did(
    stack: Stack, scraped: tuple[httpx.Client, dict[str, int]]
) -> None:
    prometheus, _ = scraped
    before = value(prometheus, 'sum(playtable_moves_total{game="hanabi"})') or 0.0
    rng = random.Random(18)
    match_id, tokens = open_table(stack, "hanabi", 2, seed=18)
    made = 0
    while made < MOVES:
        match = stack.match.get(f"/matches/{match_id}").json()
        if match["status"] == "finished":
            match_id, tokens = open_table(stack, "hanabi", 2, seed=made)
            continue
        random_move(stack, match, tokens, rng)
        made += 1
    expected = before + made
    until(
        lambda: value(prometheus, 'sum(playtable_moves_total{game="hanabi"})') == expected,
        f"{expected} moves counted",
    )
    # Requests by route template (no ids), with their status, and their latency.
    routes = {
        r["metric"]["route"]
        for r in query(prometheus, 'playtable_http_requests_total{job="match",method="POST"}')
    }
    assert "/matches/{match_id}/actions" in routes
    assert not any(match_id in route for route in routes)
    moved = 'playtable_http_requests_total{job="match",method="POST",status="201"}'
    assert (value(prometheus, f"sum({moved})") or 0) >= made
    latency = 'sum(playtable_http_request_duration_seconds_count{job="match",method="POST"})'
    assert (value(prometheus, latency) or 0) >= made
    decide = 'sum(playtable_rules_request_duration_seconds_count{job="match",request="Decide"})'
    assert (value(prometheus, decide) or 0) >= made
    # Scrape-time gauges: consumer groups, outbox, live matches, pool.
    until(lambda: value(prometheus, 'playtable_live_matches{game="hanabi"}'), "live matches")
    groups = {
        (r["metric"]["stream"], r["metric"]["group"], r["metric"]["job"])
        for r in query(prometheus, "playtable_stream_pending")
    }
    assert ("rules:requests", "rules", "rules") in groups
    assert ("commands:match", "match", "match") in groups
    assert ("match-events", "webhooks", "webhooks") in groups
    assert value(prometheus, 'max(playtable_stream_lag{group="rules"})') is not None
    assert value(prometheus, 'max(playtable_outbox_oldest_age_seconds{job="match"})') is not None
    assert value(prometheus, 'playtable_db_pool_connections{job="lobby",state="open"}')
    assert value(prometheus, "sum(playtable_probe_failures_total)") in (None, 0.0)


def test_alert_rules_load_and_stay_quiet(scraped: tuple[httpx.Client, dict[str, int]]) -> None:
    prometheus, _ = scraped
    groups = prometheus.get("/api/v1/rules").json()["data"]["groups"]
    alerts = {rule["name"]: rule for group in groups for rule in group["rules"]}
    assert set(alerts) == {
        "PlaytableStreamLag",
        "PlaytableOutboxStale",
        "PlaytableRulesTimeouts",
        "PlaytableHttp5xx",
        "PlaytableWebhookFailures",
    }
    assert all(rule["health"] != "err" for rule in alerts.values()), alerts
    assert all(rule["state"] != "firing" for rule in alerts.values()), alerts
    # Two may be pending, never firing: a stack just started answers a few 503s while its
    # rules worker gets ready (the clients retry), and the suite's database keeps the webhook
    # subscriptions of earlier tests, whose receivers are gone. The others must be quiet.
    quiet = {name for name, rule in alerts.items() if rule["state"] == "inactive"}
    assert quiet >= set(alerts) - {"PlaytableHttp5xx", "PlaytableWebhookFailures"}, alerts


def test_ready_names_what_is_down(
    stack: Stack, scraped: tuple[httpx.Client, dict[str, int]]
) -> None:
    for client in (stack.lobby, stack.match):
        ready = client.get("/ready")
        assert ready.status_code == 200, ready.text
        assert {"postgres", "redis"} <= set(ready.json()["checked"])
    assert "rules" in stack.match.get("/ready").json()["checked"]
    stack.stop("rules")
    stack.stop("rules-metrics")
    try:
        time.sleep(1.1)  # past the answer /ready keeps
        down = stack.match.get("/ready")
        assert down.status_code == 503
        assert down.headers["content-type"].startswith("application/problem+json")
        problem = down.json()
        assert problem["type"].endswith("/not-ready")
        assert "rules" in problem["detail"] and "postgres" not in problem["detail"]
        assert stack.lobby.get("/ready").status_code == 200  # the lobby needs no rules worker
    finally:
        stack.start("rules")
