"""The pieces of observability: per-route request metrics, scrape-time probes, /ready, JSON
log lines, and the operator's alert rules and dashboard (which name only real metrics)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from litestar import get
from litestar.params import FromPath
from litestar.testing import TestClient
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from shared.edge.app import service_app
from shared.infra import metrics
from shared.infra.logs import JsonFormatter, log_context, mask
from shared.infra.readiness import READY_KEPT_S

ROOT = Path(__file__).resolve().parents[4]
MONITORING = ROOT / "infra" / "monitoring"


@get("/things/{name:str}", sync_to_thread=False)
def thing(name: FromPath[str]) -> str:
    return name


@get("/boom", sync_to_thread=False)
def boom() -> None:
    raise RuntimeError("a bug")


class Dependency:
    """A ready check that answers, fails or hangs as told, counting how often it is asked."""

    def __init__(self) -> None:
        self.state = "up"
        self.asked = 0

    async def __call__(self) -> None:
        self.asked += 1
        if self.state == "down":
            raise ConnectionError("refused")
        if self.state == "hung":
            await asyncio.sleep(60)


async def fine_probe() -> list[Any]:
    return [metrics.gauge("playtable_test_gauge", "A probed value", [(["a"], 3.0)], ["kind"])]


async def hung_probe() -> list[Any]:
    await asyncio.sleep(60)
    return []


@pytest.fixture(scope="module")
def database() -> Dependency:
    return Dependency()


@pytest.fixture(scope="module")
def client(database: Dependency) -> Iterator[TestClient[Any]]:
    probes = metrics.Metrics({"fine": fine_probe, "hung": hung_probe})
    app = service_app(
        "test",
        "test-1",
        [thing, boom],
        {},
        on_startup=[],
        on_shutdown=[],
        ready={"postgres": database},
        metrics=probes,
    )
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def scraped(client: TestClient[Any]) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            samples.setdefault(sample.name, {})[labels] = sample.value
    return samples


def test_requests_are_counted_by_route_template_and_status(client: TestClient[Any]) -> None:
    route = (("method", "GET"), ("route", "/things/{name}"), ("status", "200"))
    before = scraped(client).get("playtable_http_requests_total", {}).get(route, 0)
    for name in ("a", "b", "c"):
        assert client.get(f"/things/{name}").status_code == 200
    assert client.get("/boom").status_code == 500
    assert client.get("/no/such/path").status_code == 404
    samples = scraped(client)
    requests = samples["playtable_http_requests_total"]
    assert requests[route] == before + 3
    assert requests[(("method", "GET"), ("route", "/boom"), ("status", "500"))] >= 1
    assert requests[(("method", "GET"), ("route", "unrouted"), ("status", "404"))] >= 1
    assert not any("/things/a" in dict(labels)["route"] for labels in requests)
    latency = samples["playtable_http_request_duration_seconds_count"]
    assert latency[route] == before + 3


def test_a_method_nobody_serves_is_not_a_label(client: TestClient[Any]) -> None:
    client.request("BREW", "/things/a")
    methods = {
        dict(labels)["method"] for labels in scraped(client)["playtable_http_requests_total"]
    }
    assert "BREW" not in methods and "other" in methods


def test_probes_are_computed_at_the_scrape_and_a_hung_one_is_left_out(
    client: TestClient[Any],
) -> None:
    samples = scraped(client)
    assert samples["playtable_test_gauge"] == {(("kind", "a"),): 3.0}
    assert samples["playtable_probe_failures_total"][(("probe", "hung"),)] >= 1


def test_ready_answers_200_then_a_problem_when_a_dependency_is_down(
    client: TestClient[Any], database: Dependency
) -> None:
    ready = client.get("/ready")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "service": "test",
        "status": "ready",
        "instance": "test-1",
        "checked": ["postgres"],
    }
    asked = database.asked
    for _ in range(20):  # reused for a moment: a flood of probes asks Postgres once
        client.get("/ready")
    assert database.asked <= asked + 1
    for state, error in (("down", "ConnectionError"), ("hung", "TimeoutError")):
        database.state = state
        time.sleep(READY_KEPT_S + 0.05)  # past the answer kept
        down = client.get("/ready")
        assert down.status_code == 503
        assert down.headers["content-type"].startswith("application/problem+json")
        assert down.headers["retry-after"]
        problem = down.json()
        assert problem["type"] == "https://playtable.dev/problems/not-ready"
        assert problem["detail"] == f"postgres did not answer ({error})"
    database.state = "up"


def test_health_ready_and_metrics_are_not_rate_limited() -> None:
    from shared.edge.ratelimit import EXEMPT_PATHS

    assert {"/health", "/ready", "/metrics"} <= EXEMPT_PATHS


# --- logs -------------------------------------------------------------------------------------


def log_line(message: str, *args: Any, exc: bool = False) -> dict[str, Any]:
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, message, args, None)
    if exc:
        try:
            raise ValueError("postgresql://ada:s3cret@db/playtable")
        except ValueError:
            record.exc_info = sys.exc_info()
    return json.loads(JsonFormatter("match").format(record))


def test_a_log_line_is_json_with_the_bound_ids() -> None:
    with log_context(correlation_id="c-1", match_id="m-1", table_id=None):
        line = log_line('a "quoted" %s', "word")
    assert line["message"] == 'a "quoted" word'
    assert line["service"] == "match" and line["level"] == "WARNING"
    assert line["correlation_id"] == "c-1" and line["match_id"] == "m-1"
    assert "table_id" not in line
    assert "correlation_id" not in log_line("outside")


@pytest.mark.parametrize(
    ("logged", "secret"),
    [
        ("key pt_AbCdEf0123456789xyz used", "AbCdEf0123456789xyz"),
        ("secret whsec_c2VjcmV0c2VjcmV0 rotated", "c2VjcmV0c2VjcmV0"),
        ("header Authorization: Bearer tok-123.abc", "tok-123.abc"),
        ("GET /matches/m/feed?token=seat-secret&after=2", "seat-secret"),
        ("connect postgresql://ada:s3cret@db:5432/playtable", "s3cret"),
    ],
)
def test_secrets_never_reach_a_line(logged: str, secret: str) -> None:
    assert secret not in mask(logged)
    assert secret not in json.dumps(log_line(logged))


def test_a_traceback_is_masked_too() -> None:
    line = log_line("failed", exc=True)
    assert "ValueError" in line["exception"] and "s3cret" not in line["exception"]


# --- the operator's files ----------------------------------------------------------------------


def registered_names() -> set[str]:
    """Every series name the services can expose: the counters and histograms registered,
    and the gauges the probes compute (run here against stand-ins)."""
    names = set(REGISTRY._names_to_collectors)  # noqa: SLF001  (the client's own index)
    for probe in _probes():
        names |= {family.name for family in asyncio.run(probe())}
    return {name for name in names if name.startswith("playtable_")}


def _probes() -> list[metrics.Probe]:
    class Cursor:
        async def fetchone(self) -> tuple[int, float]:
            return (0, 0.0)

        async def fetchall(self) -> list[tuple[str, int]]:
            return [("hanabi", 1)]

    class Connection:
        async def execute(self, *_: Any) -> Cursor:
            return Cursor()

    class Pool:
        def get_stats(self) -> dict[str, int]:
            return {"pool_size": 2, "pool_available": 1, "requests_waiting": 0, "pool_max": 10}

        @contextlib.asynccontextmanager
        async def connection(self, timeout: float = 0) -> Any:
            yield Connection()

    class Pipeline:
        def xinfo_groups(self, _stream: str) -> None:
            pass

        async def execute(self, raise_on_error: bool = True) -> list[Any]:
            return [[{"name": b"rules", "pending": 1, "lag": 2}]]

    class Redis:
        def pipeline(self, transaction: bool = True) -> Pipeline:
            return Pipeline()

    from services.match.app import live_matches_probe

    runtime: Any = type("Runtime", (), {"pool": Pool()})()
    return [
        metrics.pool_probe(lambda: Pool()),
        metrics.outbox_probe(lambda: Pool()),
        metrics.streams_probe(lambda: Redis(), "p", [("rules:requests", "rules")]),
        live_matches_probe(runtime),
    ]


def _expressions() -> list[str]:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    return exprs + [rule["expr"] for rule in _alerts()]


def _alerts() -> list[dict[str, Any]]:
    rules = yaml.safe_load((MONITORING / "alerts.yml").read_text())
    return [rule for group in rules["groups"] for rule in group["rules"]]


def test_the_dashboard_and_alerts_name_only_metrics_that_exist() -> None:
    known = registered_names()
    used = {name for expr in _expressions() for name in re.findall(r"playtable_\w+", expr)}
    assert len(used) >= 12
    assert used <= known, f"not exposed by any service: {sorted(used - known)}"


def test_the_alerts_cover_what_an_operator_is_paged_for() -> None:
    alerts = " ".join(rule["expr"] for rule in _alerts())
    for metric in (
        "playtable_stream_lag",
        "playtable_outbox_oldest_age_seconds",
        "playtable_rules_timeouts_total",
        'status=~"5.."',
        "playtable_webhook_deliveries_total",
    ):
        assert metric in alerts


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_alert_rules() -> None:
    checked = subprocess.run(
        ["promtool", "check", "rules", str(MONITORING / "alerts.yml")],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "5 rules found" in checked.stdout


def test_every_metric_is_documented_in_the_operating_page() -> None:
    readme = (ROOT / "docs" / "operating.md").read_text()
    names = {re.sub(r"_(total|bucket|count|sum|created)$", "", n) for n in registered_names()}
    missing = sorted(name for name in names if name not in readme)
    assert not missing, f"not in docs/operating.md: {missing}"
