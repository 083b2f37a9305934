"""Start the three services as separate processes against the test database and Redis."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from services.operator.gateway import find_nginx, runtime_dir
from services.operator.stack import PUBLISHABLE_KEY_LINE, SECRET_KEY_LINE
from shared.edge.apps import API_KEY_HEADER
from tests.conftest import fresh_database, new_app_key
from tests.e2e import web

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, ViewportSize


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Stack:
    lobby: httpx.Client
    """Both clients send the app key (``app_key``) with every request."""
    match: httpx.Client
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]]
    app_key: str

    def start(self, service: str, name: str | None = None, **env: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.operator.cli", service],
            env={**self.env, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.processes[name or service] = process
        return process

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        process.terminate()
        process.wait(timeout=30)  # a generous deadline: two busy cores are slow to stop too


def wait_healthy(client: httpx.Client, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"service exited: {process.stderr.read().decode()[-2000:]}")
        try:
            if client.get("/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("service did not become healthy")


SHARED_SERVER_POOLS = {"PLAYTABLE_DB_POOL_MIN": "1", "PLAYTABLE_DB_POOL_MAX": "4"}
"""Each service process's connections to the Postgres server that every stack of every test
worker shares (100 by default): one kept idle, at most four, which the suite's light traffic
never waits for (the fault suite, on a server of its own, keeps the services' defaults)."""


def service_env(**values: str) -> dict[str, str]:
    """The environment of services a test starts: this one's, their pools sized for the shared
    server, then ``values``."""
    env = {**os.environ, **SHARED_SERVER_POOLS, **values}
    env.pop("PLAYTABLE_INSTANCE_ID", None)
    return env


@contextlib.contextmanager
def running_stack(
    database_url: str, redis_url: str, *, with_lobby: bool = True, **extra_env: str
) -> Iterator[Stack]:
    """A rules worker, the match service and (unless ``with_lobby`` is false) the lobby, each
    its own process, with ``extra_env`` added to their environment."""
    lobby_port, match_port = free_port(), free_port()
    env = service_env(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        PLAYTABLE_LOBBY_PORT=str(lobby_port),
        PLAYTABLE_MATCH_PORT=str(match_port),
        PLAYTABLE_STREAM_PREFIX=f"e2e-{uuid.uuid4().hex[:8]}",
        PLAYTABLE_LOG_LEVEL="warning",
        **extra_env,
    )
    app_key = new_app_key(database_url, env["PLAYTABLE_STREAM_PREFIX"])
    lobby = httpx.Client(
        base_url=f"http://127.0.0.1:{lobby_port}", timeout=10, headers={API_KEY_HEADER: app_key}
    )
    match = httpx.Client(
        base_url=f"http://127.0.0.1:{match_port}", timeout=10, headers={API_KEY_HEADER: app_key}
    )
    running = Stack(lobby=lobby, match=match, env=env, processes={}, app_key=app_key)
    try:
        running.start("rules")
        wait_healthy(match, running.start("match"))
        if with_lobby:
            wait_healthy(lobby, running.start("lobby"))
        yield running
    finally:
        for process in running.processes.values():
            process.terminate()
        for process in running.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        lobby.close()
        match.close()


@pytest.fixture(scope="session")
def shared_database_url(postgres_server_url: str) -> Iterator[str]:
    """The database of the stack the modules marked ``shares_stack`` use together. Two stacks
    on one database take each other's work while both run (the outbox relays publish any
    stack's rows on their own streams), and this one runs beside the modules' own."""
    with fresh_database(postgres_server_url) as url:
        yield url


@pytest.fixture(scope="session")
def gateway_database_url(postgres_server_url: str) -> Iterator[str]:
    """The database of the gateway stack the modules marked ``shares_gateway`` use together."""
    with fresh_database(postgres_server_url) as url:
        yield url


@pytest.fixture(scope="module")
def database_url(request: pytest.FixtureRequest, database_url: str) -> str:
    """A module's database: that of the shared stack or gateway if it is marked
    ``shares_stack`` or ``shares_gateway``, else the session's."""
    if request.node.get_closest_marker("shares_stack"):
        return request.getfixturevalue("shared_database_url")
    if request.node.get_closest_marker("shares_gateway"):
        return request.getfixturevalue("gateway_database_url")
    return database_url


@pytest.fixture(scope="session")
def session_stack(shared_database_url: str, redis_url: str) -> Iterator[Stack]:
    """The stack the modules marked ``shares_stack`` use together."""
    with running_stack(shared_database_url, redis_url) as running:
        yield running


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest, database_url: str, redis_url: str) -> Iterator[Stack]:
    """The services as processes. A module marked ``shares_stack`` (it only talks to them: it
    stops, starts and configures none, and leaves nothing running) gets the session's, which
    spares it three processes' start, seconds of CPU; any other module starts its own."""
    if request.node.get_closest_marker("shares_stack"):
        yield request.getfixturevalue("session_stack")
        return
    with running_stack(database_url, redis_url) as running:
        yield running


def printed_app_key(log: Path, line: str = SECRET_KEY_LINE) -> str:
    """A development key ``playtable stack`` printed when it came up: the secret one, unless
    ``line`` names the other."""
    found = re.search(re.escape(line) + r"(\S+)", log.read_text())
    assert found is not None, f"no app key printed: {log.read_text()[-2000:]}"
    return found.group(1)


@dataclass
class Gateway:
    client: httpx.Client
    """Sends the development secret key (``stack.app_key``)."""
    stack: Stack
    """The play helpers' view: lobby and match both through the gateway."""
    publishable_key: str
    """The development publishable key, the web client's."""


def wait_answering(client: httpx.Client, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"playtable stack exited: {log.read_text()[-3000:]}")
        try:
            if client.get("/openapi.json").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the gateway did not answer: {log.read_text()[-3000:]}")


def wait_printed(log: Path, process: subprocess.Popen[bytes]) -> None:
    """Until the stack says it is up (after the gateway answers, it makes the app key)."""
    deadline = time.monotonic() + 30
    while "playtable is up" not in log.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"playtable stack did not come up: {log.read_text()[-3000:]}")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def session_gateway(
    gateway_database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """The gateway stack the modules marked ``shares_gateway`` use together."""
    with running_gateway(gateway_database_url, redis_url, tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def gateway(
    request: pytest.FixtureRequest,
    database_url: str,
    redis_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    """``playtable stack`` with two match copies, reached through its one public URL: the
    session's for a module marked ``shares_gateway`` (it only talks to it), which spares it a
    dozen processes' start; else the module's own, started with the environment its autouse
    fixtures set."""
    if request.node.get_closest_marker("shares_gateway"):
        yield request.getfixturevalue("session_gateway")
        return
    with running_gateway(database_url, redis_url, tmp_path_factory) as running:
        yield running


@contextlib.contextmanager
def running_gateway(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (./infra/test.sh installs it with apt-get as root)")
    ports = {name: free_port() for name in ("lobby", "match", "webhooks", "gateway")}
    env = service_env(
        **{f"PLAYTABLE_{name.upper()}_PORT": str(port) for name, port in ports.items()},
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        PLAYTABLE_HOST="127.0.0.1",
        PLAYTABLE_STREAM_PREFIX=f"e2e-{uuid.uuid4().hex[:8]}",
        PLAYTABLE_LOG_LEVEL="warning",
    )
    log = tmp_path_factory.mktemp("gateway") / "stack.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.operator.cli", "stack", "--match-copies", "2"],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    client = httpx.Client(base_url=f"http://127.0.0.1:{ports['gateway']}", timeout=10)
    try:
        wait_answering(client, process, log)
        wait_printed(log, process)
        app_key = printed_app_key(log)
        client.headers[API_KEY_HEADER] = app_key
        yield Gateway(
            client=client,
            stack=Stack(lobby=client, match=client, env=env, processes={}, app_key=app_key),
            publishable_key=printed_app_key(log, PUBLISHABLE_KEY_LINE),
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        client.close()
        shutil.rmtree(runtime_dir(ports["gateway"]), ignore_errors=True)
    with pytest.raises(httpx.TransportError):  # nginx stopped with the stack
        httpx.get(f"http://127.0.0.1:{ports['gateway']}/openapi.json", timeout=2)


@pytest.fixture(scope="session")
def web_client() -> None:
    """The web client, built once per session into services/web/dist (which the gateway
    serves); skips where it cannot be built or driven."""
    missing = web.browser_missing()
    if missing is not None:
        pytest.skip(missing)
    web.build_web_client_once()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """The OS's Chromium through Playwright; one per module, so Playwright's event loop is
    gone before other modules' tests run theirs."""
    missing = web.browser_missing()
    if missing is not None:
        pytest.skip(missing)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=web.expect_timeout_ms())  # the module's expectations
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(web.CHROMIUM), args=web.CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def browser(web_client: None, chromium: Browser) -> Browser:
    """Chromium, with the web client built for the gateway to serve."""
    return chromium


@pytest.fixture
def people(browser: Browser, gateway: Gateway) -> Iterator[Callable[..., web.Player]]:
    """Each call seats a new person at the gateway's web client: a browser context of their
    own (``viewport``: desktop- or phone-sized), closed after the test."""
    contexts: list[BrowserContext] = []
    base_url = str(gateway.client.base_url).rstrip("/")

    def person(viewport: ViewportSize = web.DESKTOP) -> web.Player:
        context = browser.new_context(viewport=viewport)
        context.set_default_timeout(web.expect_timeout_ms())  # its clicks, fills and waits
        contexts.append(context)
        return web.Player(context.new_page(), base_url)

    yield person
    for context in contexts:
        context.close()
