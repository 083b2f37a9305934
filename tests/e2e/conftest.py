"""Start the three services as separate processes against the test database and Redis."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from services.operator.gateway import find_nginx, runtime_dir


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Stack:
    lobby: httpx.Client
    match: httpx.Client
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]]

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
        process.wait(timeout=10)


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


@pytest.fixture(scope="module")
def stack(database_url: str, redis_url: str) -> Iterator[Stack]:
    lobby_port, match_port = free_port(), free_port()
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        PLAYTABLE_LOBBY_PORT=str(lobby_port),
        PLAYTABLE_MATCH_PORT=str(match_port),
        PLAYTABLE_STREAM_PREFIX=f"e2e-{uuid.uuid4().hex[:8]}",
        PLAYTABLE_LOG_LEVEL="warning",
    )
    env.pop("PLAYTABLE_INSTANCE_ID", None)
    lobby = httpx.Client(base_url=f"http://127.0.0.1:{lobby_port}", timeout=10)
    match = httpx.Client(base_url=f"http://127.0.0.1:{match_port}", timeout=10)
    running = Stack(lobby=lobby, match=match, env=env, processes={})
    try:
        running.start("rules")
        wait_healthy(match, running.start("match"))
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


@dataclass
class Gateway:
    client: httpx.Client
    webhooks_url: str
    stack: Stack
    """The play helpers' view: lobby and match both through the gateway."""


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


@pytest.fixture(scope="module")
def gateway(database_url: str, redis_url: str, tmp_path_factory) -> Iterator[Gateway]:
    """``playtable stack`` with two match copies, reached through its one public URL."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (./infra/test.sh installs it with apt-get as root)")
    ports = {name: free_port() for name in ("lobby", "match", "webhooks", "gateway")}
    env = dict(os.environ)
    env.update(
        {f"PLAYTABLE_{name.upper()}_PORT": str(port) for name, port in ports.items()},
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        PLAYTABLE_HOST="127.0.0.1",
        PLAYTABLE_STREAM_PREFIX=f"e2e-{uuid.uuid4().hex[:8]}",
        PLAYTABLE_LOG_LEVEL="warning",
    )
    env.pop("PLAYTABLE_INSTANCE_ID", None)
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
        yield Gateway(
            client=client,
            webhooks_url=f"http://127.0.0.1:{ports['webhooks']}",
            stack=Stack(lobby=client, match=client, env=env, processes={}),
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
