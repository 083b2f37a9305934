"""No seat token or invitation reaches a log: browsers' live feeds open through the gateway, every
service restarts under them (and the gateway reloads), so every feed reconnects, some while its
service is down (nginx's error log then keeps the request line); then every log is searched."""

from __future__ import annotations

import contextlib
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from services.operator.gateway import find_nginx, runtime_dir, start_gateway
from shared.edge.apps import API_KEY_HEADER
from tests.conftest import new_app_key
from tests.e2e.conftest import Stack, free_port, service_env
from tests.e2e.play import auth, random_move

pytestmark = pytest.mark.e2e

WAIT_S = 60.0
"""A deadline for what must happen (a feed reopened, an event arrived), not a pause."""

CARRYING_FEEDS = ("lobby", "match")
"""Restarted in turn, each with the feeds it carries dropped (the match service's two copies
together)."""
CARRYING_NONE = ("rules", "webhooks", "webhooks-api", "clocks", "bots")
"""Restarted together: no feed reconnects to them, only their logs are searched."""


@dataclass
class Process:
    service: str
    env: dict[str, str]
    log: Path
    health: str | None
    """A URL that answers once it is up (None: no HTTP of its own)."""
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.launch()
        self.wait_up()

    def launch(self) -> None:
        with self.log.open("ab") as output:  # stdout and stderr, kept across restarts
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "services.operator.cli", self.service],
                env=self.env,
                stdout=output,
                stderr=output,
            )

    def wait_up(self) -> None:
        assert self.popen is not None
        if self.health is not None:
            wait_answering(f"{self.health}/health", self.popen)

    def stop(self) -> None:
        self.terminate()
        self.wait_stopped()

    def terminate(self) -> None:
        assert self.popen is not None
        self.popen.terminate()

    def wait_stopped(self) -> None:
        assert self.popen is not None
        try:
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


def wait_answering(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{process.args} exited"
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer")


@dataclass
class LoggedStack:
    processes: list[Process]
    gateway: subprocess.Popen[bytes]
    url: str
    app_key: str
    logs: list[Path]
    """Every file a service or the gateway writes: their outputs, nginx's access log."""

    def restart(self, *services: str) -> None:
        """Stop every process of ``services`` at once, then start them all before waiting for
        any to answer."""
        restarted = [process for process in self.processes if process.service in services]
        for process in restarted:
            process.terminate()
        for process in restarted:
            process.wait_stopped()
        for process in restarted:
            process.launch()
        for process in restarted:
            process.wait_up()


@pytest.fixture(scope="module")
def logged_stack(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LoggedStack]:
    """Each service its own process (the match service twice) logging at INFO to its own
    file, behind the local gateway, whose error log goes to a file beside its access log."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (./infra/test.sh installs it with apt-get as root)")
    logs = tmp_path_factory.mktemp("logs")
    host = "127.0.0.1"
    ports = {name: free_port() for name in ("lobby", "match", "match-2", "webhooks", "gateway")}
    env = service_env(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        PLAYTABLE_HOST=host,
        PLAYTABLE_LOBBY_PORT=str(ports["lobby"]),
        PLAYTABLE_MATCH_PORT=str(ports["match"]),
        PLAYTABLE_WEBHOOKS_PORT=str(ports["webhooks"]),
        PLAYTABLE_STREAM_PREFIX=f"e2e-{uuid.uuid4().hex[:8]}",
        PLAYTABLE_LOG_LEVEL="info",
    )
    env.pop("PLAYTABLE_METRICS_PORT", None)

    def process(service: str, name: str = "", port: str = "", **extra: str) -> Process:
        health = f"http://{host}:{ports[port]}" if port else None
        log = logs / f"{name or service}.log"
        return Process(service, {**env, **extra}, log, health)

    processes = [
        process("rules"),
        process("match", port="match"),
        process("match", "match-2", "match-2", PLAYTABLE_MATCH_PORT=str(ports["match-2"])),
        process("lobby", port="lobby"),
        process("webhooks"),
        process("webhooks-api", port="webhooks"),
        process("clocks"),
        process("bots"),
    ]
    directory = runtime_dir(ports["gateway"])
    directory.mkdir(parents=True, exist_ok=True)
    error_log = directory / "gateway-error.log"
    gateway = None
    try:
        for started in processes:
            started.launch()
        for started in processes:
            started.wait_up()
        upstreams = {
            "lobby": [ports["lobby"]],
            "match": [ports["match"], ports["match-2"]],
            "webhooks": [ports["webhooks"]],
        }
        with error_log.open("ab") as output:
            gateway = start_gateway(host, ports["gateway"], upstreams, directory, log=output)
        assert gateway is not None
        url = f"http://{host}:{ports['gateway']}"
        wait_answering(f"{url}/openapi.json", gateway)
        app_key = new_app_key(database_url, env["PLAYTABLE_STREAM_PREFIX"])
        written = [started.log for started in processes]
        yield LoggedStack(
            processes,
            gateway,
            url,
            app_key,
            [*written, error_log, directory / "gateway-access.log"],
        )
    finally:
        if gateway is not None:
            gateway.terminate()
            gateway.wait(timeout=30)
        for started in processes:
            if started.popen is not None and started.popen.poll() is None:
                started.stop()
        shutil.rmtree(directory, ignore_errors=True)


def feed_query(client: httpx.Client, path: str, secret: str, after: int) -> dict[str, Any] | None:
    """The query a browser opens a feed with: a fresh single-use ticket, got for its secret
    (None: none was given, e.g. the service is down; the browser asks again)."""
    answer = client.post(f"{path}-tickets", headers=auth(secret))
    if answer.status_code != 201:
        return None
    return {"ticket": answer.json()["ticket"], "after": after}


@dataclass
class BrowserFeed:
    """Follows a feed as the web client does: whenever the connection drops or is refused, it
    opens the feed again after the last event it had, at once, until the test ends."""

    url: str
    path: str
    secret: str
    last: int = 0
    opened: int = 0
    changed: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()  # ends with the stack

    def wait(self, holds: Callable[[BrowserFeed], bool]) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: holds(self), WAIT_S), (self.path, self.last)

    def _run(self) -> None:
        stopped = threading.Event()  # never set: only paces the reconnects a little
        with httpx.Client(base_url=self.url, timeout=httpx.Timeout(10, read=60)) as client:
            while True:
                try:
                    self._follow(client)
                except httpx.TransportError:
                    pass
                stopped.wait(0.1)

    def _follow(self, client: httpx.Client) -> None:
        query = feed_query(client, self.path, self.secret, self.last)
        if query is None:
            return
        with client.stream("GET", self.path, params=query) as response:
            if response.status_code != 200:
                response.read()
                return
            with self.changed:
                self.opened += 1
                self.changed.notify_all()
            for line in response.iter_lines():
                if line.startswith("id:"):
                    with self.changed:
                        self.last = int(line.removeprefix("id:").strip())
                        self.changed.notify_all()


def reopened(feeds: list[BrowserFeed], cause: Callable[[], object]) -> None:
    """Cause their drop (a restart, a reload), then wait until each feed has opened anew."""
    before = [feed.opened for feed in feeds]
    cause()
    for feed, opened in zip(feeds, before, strict=True):
        feed.wait(lambda feed, opened=opened: feed.opened > opened)


def private_table(client: httpx.Client) -> tuple[str, str]:
    created = client.post(
        "/tables", json={"game": "hanabi", "seats": 2, "visibility": "private", "seed": 7}
    )
    assert created.status_code == 201, created.text
    return created.json()["table_id"], created.json()["invitation_token"]


def seat(client: httpx.Client, table_id: str, name: str, invitation: str | None = None) -> str:
    joined = client.post(
        f"/tables/{table_id}/seats",
        json={"name": name},
        headers=auth(invitation) if invitation else {},
    )
    assert joined.status_code == 201, joined.text
    return str(joined.json()["token"])


def start(
    client: httpx.Client, table_id: str, invitation: str | None = None
) -> tuple[str, list[str]]:
    tokens = [seat(client, table_id, name, invitation) for name in ("ada", "bob")]
    started = client.post(f"/tables/{table_id}/start", headers=auth(tokens[0]))
    assert started.status_code == 201, started.text
    return started.json()["match_id"], tokens


def move(client: httpx.Client, match_id: str, tokens: list[str]) -> int:
    """A random move (one does not end a Hanabi match); the version it made."""
    match = client.get(f"/matches/{match_id}", headers=auth(tokens[0]))
    assert match.status_code == 200, match.text
    stack = Stack(lobby=client, match=client, env={}, processes={}, app_key="")
    return int(random_move(stack, match.json(), tokens, random.Random(match_id))["version"])


def test_no_seat_token_or_invitation_reaches_a_log_when_everything_restarts_under_open_feeds(
    logged_stack: LoggedStack,
) -> None:
    client = httpx.Client(
        base_url=logged_stack.url, timeout=10, headers={API_KEY_HEADER: logged_stack.app_key}
    )
    created = client.post("/tables", json={"game": "hanabi", "seats": 2, "seed": 3})
    assert created.status_code == 201, created.text
    public_match, public_tokens = start(client, created.json()["table_id"])
    started_table, started_invitation = private_table(client)
    private_match, private_tokens = start(client, started_table, started_invitation)
    open_table, open_invitation = private_table(client)
    secrets = {
        "seat 0's token": public_tokens[0],
        "seat 1's token": public_tokens[1],
        "private seat 0's token": private_tokens[0],
        "private seat 1's token": private_tokens[1],
        "started table's invitation": started_invitation,
        "open table's invitation": open_invitation,
    }

    match_feeds = [
        BrowserFeed(logged_stack.url, f"/matches/{public_match}/feed", public_tokens[0]),
        BrowserFeed(logged_stack.url, f"/matches/{public_match}/feed", public_tokens[1]),
        BrowserFeed(logged_stack.url, f"/matches/{private_match}/feed", private_tokens[1]),
        BrowserFeed(logged_stack.url, f"/matches/{private_match}/feed", started_invitation),
    ]
    table_feed = BrowserFeed(logged_stack.url, f"/tables/{open_table}/feed", open_invitation)
    feeds = [*match_feeds, table_feed]
    for feed in feeds:
        feed.wait(lambda feed: feed.opened > 0)

    logged_stack.restart(*CARRYING_NONE)
    for service in CARRYING_FEEDS:  # the feeds it carries reconnect while it is down, and after
        dropped = {"match": match_feeds, "lobby": [table_feed]}[service]
        reopened(dropped, partial(logged_stack.restart, service))
    # a reload's old workers close the feeds they carry
    reopened(feeds, partial(logged_stack.gateway.send_signal, signal.SIGHUP))

    # the resumed feeds carry on
    public_version = move(client, public_match, public_tokens)
    private_version = move(client, private_match, private_tokens)
    table_version = table_feed.last
    seat(client, open_table, "cy", open_invitation)
    for feed in match_feeds[:2]:
        feed.wait(lambda feed: feed.last >= public_version)
    for feed in match_feeds[2:]:
        feed.wait(lambda feed: feed.last >= private_version)
    table_feed.wait(lambda feed: feed.last > table_version)

    texts = {log.name: log.read_text(errors="replace") for log in logged_stack.logs}
    assert set(texts) >= {"gateway-error.log", "gateway-access.log", "match.log", "lobby.log"}
    # feeds were reopened while their service was down: nginx logged those requests' lines
    assert "/feed?ticket=" in texts["gateway-error.log"]
    found = {
        f"{name} in {log}": count
        for log, text in texts.items()
        for name, secret in secrets.items()
        if (count := sum(text.count(form) for form in {secret, quote(secret)}))
    }
    assert found == {}
