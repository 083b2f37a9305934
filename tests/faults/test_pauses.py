"""Redis, then Postgres, paused (SIGSTOP) for 20 s under load, then resumed: every service
answers ``/ready`` and moves flow again within 10 s of the resume, nothing is lost or
duplicated (``test_faults.under_fault``'s checks), no process hangs (each stops when asked),
and each process logs the outage once, as a warning without a traceback, and its end once.

PLAYTABLE_FAULT_PAUSE_DEPENDENCY_S (20) sets how long the server stays paused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from shared.infra.bus import redis_client
from shared.infra.settings import Settings
from tests.faults import checks
from tests.faults.conftest import SCALE, FaultStack, RedisServer, env_float
from tests.faults.services import BESIDE_MAKE_STACK, start_services
from tests.faults.test_faults import under_fault

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]

PAUSE_S = env_float("PLAYTABLE_FAULT_PAUSE_DEPENDENCY_S", 20.0)
READY_LIMIT_S = 10.0
"""The promise (docs/reliability.md) on an idle machine, scaled by ``checks.busy_factor``."""
AFTER_S = 3.0 * SCALE
"""Load kept running after the resume (and until every match moved): the pause is long."""
STOP_WITHIN_S = 10.0
"""A process asked to stop (SIGTERM) after the pause that is still running then hung."""


def _cluster_pids(stack: FaultStack) -> list[int]:
    """The postmaster and every process it started (its backends and helpers)."""
    postmaster = int((stack.cluster.data / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                children.append(int(stat.parent.name))
    return [postmaster, *children]


@contextlib.contextmanager
def _paused(pids: list[int]) -> Iterator[None]:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


class Readiness:
    """After the resume, when each HTTP service answered ``/ready`` 200 again."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls
        self.resumed = 0.0
        self.ready_after: dict[str, float] = {}
        self._thread: threading.Thread | None = None

    def watch_from_now(self) -> None:
        self.resumed = time.monotonic()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        waiting = dict(self.urls)
        with httpx.Client(timeout=2, trust_env=False) as client:
            while waiting and time.monotonic() < self.resumed + 60:
                for name, url in list(waiting.items()):
                    with contextlib.suppress(httpx.TransportError):
                        if client.get(url).status_code == 200:
                            self.ready_after[name] = time.monotonic() - self.resumed
                            del waiting[name]
                time.sleep(0.1)

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=70)


def _pause(which: str, readiness: Readiness) -> Callable[[FaultStack], None]:
    def pause(stack: FaultStack) -> None:
        assert stack.redis.process is not None
        pids = [stack.redis.process.pid] if which == "redis" else _cluster_pids(stack)
        with _paused(pids):
            time.sleep(PAUSE_S)
        readiness.watch_from_now()

    return pause


def _what(message: str) -> str:
    """What a warning is about, without the error's words (which differ from try to try) and
    for a request's 503, without the request."""
    message = re.sub(r" unreachable: .*", " unreachable", message, flags=re.DOTALL)
    return re.sub(r"^backing service unavailable .*", "503s", message, flags=re.DOTALL)


def log_problems(log_dir: Path) -> list[str]:
    """What the processes logged that an outage must not make them log: a traceback, a task's
    exception nobody retrieved, or the same outage twice; and an outage whose end it did not
    log."""
    problems = []
    for path in sorted(log_dir.glob("*.log")):
        warned: Counter[str] = Counter()
        ended: set[str] = set()
        for line in path.read_text(errors="replace").splitlines():
            if "Task exception was never retrieved" in line or "Traceback" in line:
                problems.append(f"{path.stem}: {line[:300]}")
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue  # Celery's banner and the like
            if " reachable again after " in record.get("message", ""):
                ended.add(record["message"].split(" after ", 1)[0])
            if record.get("level") in ("WARNING", "ERROR", "CRITICAL"):
                warned[_what(record.get("message", ""))] += 1
        problems += [
            f"{path.stem}: logged {count} times: {what}"
            for what, count in warned.items()
            if count > 1
        ]
        problems += [
            f"{path.stem}: never logged the end of: {what}"
            for what in warned
            if what.endswith(" unreachable")
            and what.removesuffix("unreachable") + "reachable again" not in ended
        ]
    return problems


def _stop_each(stack: FaultStack) -> list[str]:
    """Ask every process to stop; those still running after ``STOP_WITHIN_S`` hung."""
    for process in stack.processes.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WITHIN_S
    hung = []
    for name, process in stack.processes.items():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung.append(f"{name} did not stop within {STOP_WITHIN_S} s of SIGTERM")
    return hung


@pytest.mark.parametrize("which", ["redis", "postgres"])
def test_paused(
    which: str, make_stack: Callable[..., FaultStack], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAYTABLE_FAULT_LOG_LEVEL", "info")  # the outages' ends are info
    stack = make_stack()
    readiness = Readiness(
        {
            "lobby": f"{stack.lobby_url}/ready",
            "match": f"{stack.match_url()}/ready",
            **start_services(stack, BESIDE_MAKE_STACK),
        }
    )
    paused = _pause(which, readiness)
    result = asyncio.run(under_fault(stack, f"{which}-paused", paused, after_s=AFTER_S))
    readiness.join()
    limit_s = READY_LIMIT_S * checks.busy_factor()
    for name in readiness.urls:
        after = readiness.ready_after.get(name)
        if after is None or after > limit_s:
            result.problems.append(f"{name} ready again after {after} s (limit {limit_s:.1f} s)")
    result.problems += _stop_each(stack)
    result.problems += log_problems(stack.log_dir)
    checks.report(result)
    print(f"[pause {which}] ready after: {readiness.ready_after}")
    assert not result.problems, "\n".join(result.problems[:40])


def test_a_read_cancelled_while_redis_is_paused_leaves_the_client_usable(
    redis_server: RedisServer,
) -> None:
    """What the services' clients do when a task is cancelled inside a read Redis does not
    answer (a stop's grace run out, a request's deadline): the cancel ends the task at once,
    redis-py drops that connection rather than leave its reply unread for the next command,
    closing the client does not wait on the paused server beyond the connect timeout, and
    once Redis answers again a client made the same way works."""
    settings = Settings(redis_url=redis_server.url, redis_connect_timeout_s=1.0)

    async def scenario() -> None:
        client = redis_client(settings)
        await client.set("paused-key", "kept")
        reads = [
            asyncio.create_task(client.xread({"paused-stream": "$"}, block=1000)),
            asyncio.create_task(client.pipeline(transaction=False).get("paused-key").execute()),
            asyncio.create_task(client.get("paused-key")),
        ]
        assert redis_server.process is not None
        with _paused([redis_server.process.pid]):
            await asyncio.sleep(0.2)  # each read sent, its answer awaited
            for read in reads:
                read.cancel()
            _done, hung = await asyncio.wait(reads, timeout=1.0)
            assert not hung, "a cancelled read went on waiting"
            # closing waits at most the connect timeout, not the pause: twice that, or more
            # on a busy machine (a slower close, not a hang)
            limit_s = 2 * settings.redis_connect_timeout_s * checks.busy_factor()
            began = time.monotonic()
            await asyncio.wait_for(client.aclose(), limit_s + 5)
            assert time.monotonic() - began < limit_s
        again = redis_client(settings)
        try:
            assert await asyncio.wait_for(again.get("paused-key"), 5) == b"kept"
        finally:
            await again.aclose()

    asyncio.run(scenario())
