"""A rolling upgrade from the previous release (``infra/previous-release``) to this checkout,
under load: every service of the previous release runs from a git worktree of its commit (its
own migrations applied by its own code), matches are played, tables opened and started and
clocks run out, with a webhook subscription to every event; this checkout's migrations are
applied while the old processes run, then each process is replaced by this checkout's, one at a
time (the new one ready before the old one is stopped, as a rolling update does), the load
going on throughout. Afterwards every acknowledged move is in the log exactly once, ``playtable
verify`` is clean, every started table has its match, every clock fired once, every committed
event was published and delivered by webhook once and in its stream's order, nothing is left
unread in Redis, and play goes on under the new code alone.

Sizes from the environment as in ``test_faults.py``: PLAYTABLE_FAULT_MATCHES (10 here),
PLAYTABLE_FAULT_THINK_S, PLAYTABLE_FAULT_SCALE.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from shared.infra.settings import stream_name
from tests.faults import checks
from tests.faults.conftest import SCALE, THINK_S, FaultStack, env_int
from tools import clock_load, integrity
from tools.copies import WebhookReceiver, committed_versions, subscribe
from tools.scratch import LOOPBACK, free_port
from tools.traffic import Endpoints, Load, new_session

pytestmark = [pytest.mark.faults, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS_RELEASE = ROOT / "infra" / "previous-release"
MIGRATIONS = Path("shared") / "infra" / "migrations"

UPGRADE_ORDER = ("rules", "match", "lobby", "webhooks-api", "webhooks", "clocks", "bots")
"""The order docs/deploying.md gives: the rules workers first (they answer both releases'
callers), then the services that call them, the webhooks, and the workers that only follow."""
HTTP_PORTS = {"lobby": "PLAYTABLE_LOBBY_PORT", "webhooks-api": "PLAYTABLE_WEBHOOKS_PORT"}
"""The HTTP services' port settings (the match service's is ``FaultStack.match_ports``); the
others are asked on their metrics port whether they are up."""
WEBHOOK_SETTINGS = {"PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}

MATCHES = env_int("PLAYTABLE_FAULT_MATCHES", 10)
CLOCKED = 6
CLOCK_LIMITS_S = (4, 14)
"""The clocked matches' per-move limits: their timeouts fall all through the rollout."""
CLOCKED_AT_SWAP = 3
SWAP_LIMITS_S = (2, 6)
"""More clocked matches, opened as the clocks service is replaced: their timeouts fall while
both releases' clocks run, and after."""
PHASE_S = 2.0 * SCALE
"""The load's time on the old code, and on the old code over the new schema."""
SLOW_RECEIVER_S = 0.25
"""How long the webhook receiver takes to answer while the webhooks process is replaced: the
deliveries queue up (both processes' eight worker threads answer 32 a second, fewer than the
load's events), so the old process stops with deliveries it enqueued still waiting for the new
one."""
WAIT_S = 30.0
"""How long (times ``busy()``) a process may take to be ready or to stop, the load to move on
every match after the rollout, and the webhooks to arrive."""


def busy() -> float:
    """``checks.busy_factor()``, at most 4: what the checks wait for comes within seconds or
    not before the webhooks' redrive sweep, minutes later, and a failing run must still end
    within the test's timeout, with its report."""
    return min(checks.busy_factor(), 4.0)


def previous_release() -> str:
    """The previous release's commit: the first line of ``infra/previous-release`` that is not
    a comment."""
    lines = (line.strip() for line in PREVIOUS_RELEASE.read_text().splitlines())
    return next(line for line in lines if line and not line.startswith("#"))


@pytest.fixture(scope="module")
def previous_code(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A git worktree of the previous release (CI's clone has the whole history); it runs
    with this checkout's ``.venv``, as the dependencies are the same."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the upgrade test needs the previous release's commit")
    path = tmp_path_factory.mktemp("previous-release") / "code"
    git = ["git", "-C", str(ROOT), "worktree"]
    added = subprocess.run(
        [*git, "add", "--detach", "--quiet", str(path), previous_release()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 0, f"git worktree add: {added.stderr}"
    try:
        yield path
    finally:
        subprocess.run([*git, "remove", "--force", str(path)], capture_output=True, timeout=60)


@dataclass
class Rollout:
    """Which process runs each service now, and what the replacements did."""

    stack: FaultStack
    endpoints: Endpoints
    running: dict[str, str] = field(default_factory=dict)
    """Each service's process (its name in the stack)."""
    stopped: dict[str, int | None] = field(default_factory=dict)
    """Each replaced process's exit code (None: it did not stop when asked, and was killed)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Each service's replacement: seconds from starting the new process to the old one gone."""
    queued: dict[str, int] = field(default_factory=dict)
    """Webhook deliveries waiting in Celery's queues as each old process was told to stop."""

    def start(self, service: str, name: str, code: Path | None) -> str:
        """Start ``name`` as ``service`` of ``code``'s release; the URL that says it is up."""
        port = free_port()
        settings = dict(WEBHOOK_SETTINGS) if service.startswith("webhooks") else {}
        if service == "match":
            self.stack.match_ports[name] = port
            path = "/ready"
        elif service in HTTP_PORTS:
            settings[HTTP_PORTS[service]] = str(port)
            path = "/ready"
        else:
            settings["PLAYTABLE_METRICS_PORT"] = str(port)
            path = "/metrics"
        self.stack.start(name, code, settings)
        self.running[service] = name
        return f"http://{LOOPBACK}:{port}{path}"

    def wait_up(self, name: str, url: str) -> None:
        process = self.stack.processes[name]
        deadline = time.monotonic() + WAIT_S * busy()
        with httpx.Client(timeout=2, trust_env=False) as client:
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    raise AssertionError(f"{name} exited: {self.stack.log_tail(name)}")
                with contextlib.suppress(httpx.TransportError):
                    if client.get(url).status_code == 200:
                        return
                time.sleep(0.05)
        raise AssertionError(f"{name} was not up at {url}: {self.stack.log_tail(name)}")

    def replace(self, service: str) -> None:
        """This checkout's process for ``service`` beside the old one; once it is up, the
        clients use it, and the old one is stopped (SIGTERM) and waited for."""
        began = time.monotonic()
        old = self.running[service]
        new = f"{service}-2"
        url = self.start(service, new, None)
        self.wait_up(new, url)
        base = url.removesuffix("/ready")
        if service == "lobby":
            self.endpoints.lobby = base
        elif service == "match":
            self.endpoints.matches = [base]
        process = self.stack.processes[old]
        self.queued[old] = queued_deliveries(self.stack)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            self.stopped[old] = process.wait(timeout=WAIT_S * busy())
        except subprocess.TimeoutExpired:
            self.stopped[old] = None
            self.stack.kill(old)
        self.timings[service] = time.monotonic() - began


def queued_deliveries(stack: FaultStack) -> int:
    """The tasks in the Celery queues (Redis lists under the stack's prefix) of both releases."""
    client = stack.redis.client()
    try:
        lists = client.scan_iter(match=f"{stack.prefix}:celery:*", count=1000, _type="list")
        return sum(client.llen(key) for key in lists)
    finally:
        client.close()


def migrate(stack: FaultStack) -> str:
    """This checkout's migrations, as an operator runs them before rolling out."""
    done = subprocess.run(
        [sys.executable, "-m", "services.operator.cli", "migrate"],
        env=stack.env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def new_migrations(previous: Path) -> list[str]:
    """The migration files this checkout has and the previous release had not."""
    names = {path.name for path in (previous / MIGRATIONS).glob("*.sql")}
    return sorted(path.name for path in (ROOT / MIGRATIONS).glob("*.sql") if path.name not in names)


def unread_in_redis(stack: FaultStack) -> list[str]:
    """Every consumer group of every stream under the stack's prefix, with entries it has not
    read or not acknowledged: what an old process wrote where no new one reads (a renamed key),
    or left pending when it stopped."""
    client = stack.redis.client()
    found = []
    try:
        for key in client.scan_iter(match=f"{stack.prefix}:*", count=1000, _type="stream"):
            last = client.xinfo_stream(key)["last-generated-id"]
            for group in client.xinfo_groups(key):
                behind = group["last-delivered-id"] != last
                if group["pending"] or behind:
                    found.append(
                        f"redis: {stream_name(stack.prefix, key.decode())} group"
                        f" {group['name'].decode()}: {group['pending']} pending,"
                        f" lag {group.get('lag')}"
                    )
    finally:
        client.close()
    return found


@dataclass
class UpgradeReport:
    new_migrations: list[str]
    acknowledged_moves: int = 0
    moves_during_rollout: int = 0
    lost: int = 0
    duplicated: int = 0
    webhooks_delivered: int = 0
    webhooks_missing: int = 0
    webhooks_duplicated: int = 0
    webhooks_out_of_order: int = 0
    retried: dict[str, int] = field(default_factory=dict)
    """The load's failed attempts by kind (status or exception), each retried."""
    timeouts: str = ""
    stopped: dict[str, int | None] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)
    queued_at_stop: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        took = ", ".join(f"{name} {s:.1f}s" for name, s in self.timings.items())
        phases = ", ".join(f"{name} {s:.1f}s" for name, s in self.phases_s.items())
        return (
            f"[upgrade] new migrations {self.new_migrations}; acked={self.acknowledged_moves}"
            f" (during the rollout {self.moves_during_rollout}) lost={self.lost}"
            f" duplicated={self.duplicated}; webhooks delivered={self.webhooks_delivered}"
            f" missing={self.webhooks_missing} duplicated={self.webhooks_duplicated}"
            f" out_of_order={self.webhooks_out_of_order}; retried {self.retried};"
            f" {self.timeouts}; {phases}; replaced: {took};"
            f" old exit codes {self.stopped}; deliveries queued as the old webhooks stopped"
            f" {self.queued_at_stop.get('webhooks')}; problems={len(self.problems)}"
        )


async def rolling_upgrade(stack: FaultStack, previous: Path) -> UpgradeReport:
    report = UpgradeReport(new_migrations(previous))
    started = time.monotonic()
    endpoints = Endpoints(stack.lobby_url, [stack.match_url()])
    rollout = Rollout(stack, endpoints, {name: name for name in ("rules", "match", "lobby")})
    urls = {
        service: rollout.start(service, service, previous)
        for service in ("webhooks-api", "webhooks", "clocks", "bots")
    }
    for service, url in urls.items():
        await asyncio.to_thread(rollout.wait_up, service, url)
    receiver = WebhookReceiver()
    await receiver.start()
    session = new_session(stack.app_key, connections=MATCHES + CLOCKED + CLOCKED_AT_SWAP + 10)
    load = Load(session, endpoints, slots=MATCHES, seed=35, think_s=THINK_S)
    stop = asyncio.Event()
    running = None
    try:
        hooks = urls["webhooks-api"].removesuffix("/ready")
        await subscribe(hooks, stack.app_key, receiver.port)
        running = asyncio.create_task(load.run(stop))
        clocked = await clock_load.open_clocked_matches(
            session, stack.lobby_url, CLOCKED, CLOCK_LIMITS_S
        )
        await asyncio.sleep(PHASE_S)
        print("\n" + await asyncio.to_thread(migrate, stack))
        await asyncio.sleep(PHASE_S)  # the old code over the new schema
        began = time.monotonic()
        for service in UPGRADE_ORDER:
            before = len(load.acks)
            receiver.delay_s = SLOW_RECEIVER_S if service == "webhooks" else 0.0
            if service == "clocks":
                clocked += await clock_load.open_clocked_matches(
                    session, endpoints.lobby, CLOCKED_AT_SWAP, SWAP_LIMITS_S
                )
            await asyncio.to_thread(rollout.replace, service)
            receiver.delay_s = 0.0
            await _moved_since(load, before, f"moves after {service} was replaced")
        ended = time.monotonic()
        report.moves_during_rollout = load.moves_between(began, ended)
        report.phases_s = {"old stack": began - started, "rollout": ended - began}
        deadline = ended + WAIT_S * busy()
        while load.recovery_s(ended) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # until every match has moved under the new code alone
        if load.recovery_s(ended) is None:
            report.problems.append("some match never moved after the rollout")
        stop.set()
        await asyncio.wait_for(running, timeout=WAIT_S)
        unfinished = await clock_load.wait_all_finished(
            session, endpoints.matches[0], clocked, WAIT_S * busy()
        )
        report.problems += [f"clocked match {match} never timed out" for match in unfinished]
        timeouts = await clock_load.collect_timeouts(session, endpoints.matches[0], clocked)
        report.timeouts = timeouts.report()
        report.problems += [f"match {m} timed out twice" for m in timeouts.doubled]
        checking = time.monotonic()
        report.phases_s["until all moved and timed out"] = checking - ended
        await _check(stack, load, receiver, report)
        report.phases_s["checks"] = time.monotonic() - checking
    finally:
        stop.set()
        if running is not None and not running.done():
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
        await session.close()
        await receiver.stop()
    report.stopped, report.timings = rollout.stopped, rollout.timings
    report.queued_at_stop = rollout.queued
    report.problems += [
        f"{name} did not stop when asked" for name, code in rollout.stopped.items() if code is None
    ]
    return report


async def _moved_since(load: Load, before: int, what: str) -> None:
    """A few moves acknowledged since ``before`` (the count of acks then): play goes on."""
    deadline = time.monotonic() + WAIT_S * busy()
    while len(load.acks) < before + max(1, MATCHES // 2):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within the wait")
        await asyncio.sleep(0.05)


async def _check(
    stack: FaultStack, load: Load, receiver: WebhookReceiver, report: UpgradeReport
) -> None:
    logged = await asyncio.to_thread(integrity.check_log, stack.database_url, load)
    report.acknowledged_moves = len(load.acks)
    report.retried = dict(load.errors)
    report.lost, report.duplicated = len(logged.lost), len(logged.duplicated)
    report.problems += logged.problems
    report.problems += [f"unexpected answer: {answer}" for answer in load.unexpected[:20]]
    report.problems += await asyncio.to_thread(checks.check_verify, stack)
    tables = list(load.tables)
    deadline = time.monotonic() + WAIT_S * busy()  # for all that follows
    wait_s = deadline - time.monotonic()
    await asyncio.to_thread(integrity.wait_started_tables, stack.database_url, tables, 0.0, wait_s)
    orphans = await asyncio.to_thread(integrity.tables_without_match, stack.database_url, tables)
    report.problems += [f"table {table} started, its match missing" for table in orphans]
    report.problems += await asyncio.to_thread(
        integrity.check_published, stack.database_url, stack.redis.url, stack.prefix, {}
    )
    committed = await asyncio.to_thread(committed_versions, stack.database_url)
    while (found := receiver.compare(committed)).missing and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    report.webhooks_delivered = len(receiver.received)
    report.webhooks_missing = sum(len(versions) for versions in found.missing.values())
    report.webhooks_duplicated = found.again
    report.webhooks_out_of_order = sum(len(versions) for versions in found.late.values())
    report.problems += found.problems()
    if found.again:
        report.problems.append(f"webhooks: {found.again} deliveries came twice")
    while (unread := await asyncio.to_thread(unread_in_redis, stack)) and (
        time.monotonic() < deadline
    ):
        await asyncio.sleep(0.5)  # until the consumers have caught up
    report.problems += unread
    if not load.acks:
        report.problems.append("no move was acknowledged")


def test_a_rolling_upgrade_from_the_previous_release_loses_and_doubles_nothing(
    make_stack: Callable[..., FaultStack], previous_code: Path
) -> None:
    stack = make_stack(code=previous_code)
    result = asyncio.run(rolling_upgrade(stack, previous_code))
    print("\n" + result.line())
    checks.report({"upgrade": result.line(), "problems": result.problems[:50]})
    assert not result.problems, "\n".join(result.problems[:40])
