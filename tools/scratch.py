"""Service processes of a run's own: a fresh database, stream prefix and log directory
(``scratch``, dropped with ``drop_database`` and ``forget_streams``), and copies of each service
started on them, each its own process group, with nginx in front (``Copies``). ``playtable
copies`` and ``playtable bench bot-service`` run on them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from services.operator.gateway import start_gateway
from shared.infra.secretbox import new_entry
from shared.infra.settings import Settings

LOOPBACK = "127.0.0.1"
HTTP_SERVICES = {"lobby": "LOBBY", "match": "MATCH", "webhooks-api": "WEBHOOKS"}
"""The HTTP services and the name of their port setting (``PLAYTABLE_<NAME>_PORT``)."""
SERVICES = ("rules", "lobby", "match", "webhooks-api", "webhooks")
"""Started in this order; ``webhooks`` is the webhook dispatcher and its Celery worker."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


class Copies:
    """The processes: ``copies`` of each service, each its own process group, logging to a
    file of its own, and nginx in front."""

    def __init__(self, env: dict[str, str], copies: int, directory: Path) -> None:
        self.env = env
        self.copies = copies
        self.directory = directory
        self.ports = {service: [free_port() for _ in range(copies)] for service in HTTP_SERVICES}
        self.gateway_port = free_port()
        self.processes: dict[tuple[str, int], subprocess.Popen[bytes]] = {}
        self.gateway: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.gateway_port}"

    def start(self, service: str, copy: int) -> None:
        env = dict(self.env)
        if service in HTTP_SERVICES:
            env[f"PLAYTABLE_{HTTP_SERVICES[service]}_PORT"] = str(self.ports[service][copy])
        log = open(self.directory / f"{service}-{copy}.log", "ab")  # noqa: SIM115 - child keeps it
        try:
            self.processes[service, copy] = subprocess.Popen(
                [sys.executable, "-m", "services.operator.cli", service],
                env=env,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        finally:
            log.close()

    def start_all(self) -> None:
        for service in SERVICES:
            for copy in range(self.copies):
                self.start(service, copy)
        for service in HTTP_SERVICES:
            for copy in range(self.copies):
                self.wait_healthy(service, copy)
        upstreams = {
            "lobby": self.ports["lobby"],
            "match": self.ports["match"],
            "webhooks": self.ports["webhooks-api"],
        }
        with open(self.directory / "nginx.log", "ab") as log:
            self.gateway = start_gateway(
                LOOPBACK, self.gateway_port, upstreams, self.directory, log
            )
        if self.gateway is None:
            raise RuntimeError("nginx is not installed: the copies need a load balancer")
        self._wait_answering(f"{self.url}/openapi.json", self.gateway, "nginx")

    def wait_healthy(self, service: str, copy: int, timeout_s: float = 60.0) -> None:
        if service not in HTTP_SERVICES:
            return
        url = f"http://{LOOPBACK}:{self.ports[service][copy]}/health"
        self._wait_answering(url, self.processes[service, copy], f"{service}-{copy}", timeout_s)

    def _wait_answering(
        self, url: str, process: subprocess.Popen[bytes], name: str, timeout_s: float = 60.0
    ) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited: {self.log_tail(name)}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not answer {url}: {self.log_tail(name)}")

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time so far of each service's process groups (children included), nginx, and
        of the Postgres and Redis servers and nginx (all their processes, by name)."""
        groups: dict[int, str] = {
            process.pid: service for (service, _), process in self.processes.items()
        }
        ticks = os.sysconf("SC_CLK_TCK")
        used: dict[str, float] = defaultdict(float)
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            name = text[text.index("(") + 1 : text.rindex(")")]
            fields = text[text.rindex(")") + 2 :].split()
            seconds = (int(fields[11]) + int(fields[12])) / ticks
            group = int(fields[2])
            if group in groups:
                used[groups[group]] += seconds
            elif name.startswith(("postgres", "redis-server", "nginx")):
                used[name.split(":")[0].split()[0]] += seconds
        return dict(used)

    def kill(self, service: str, copy: int) -> None:
        process = self.processes[service, copy]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def log_tail(self, name: str, size: int = 2000) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace")[-size:] if path.exists() else ""

    def stop_all(self) -> None:
        running = [*self.processes.values(), *([self.gateway] if self.gateway else [])]
        for process in running:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def fresh_database(database_url: str, name: str) -> str:
    maintenance = make_conninfo(database_url, dbname="postgres")
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    return make_conninfo(database_url, dbname=name)


def drop_database(database_url: str) -> None:
    name = conninfo_to_dict(database_url)["dbname"]
    maintenance = make_conninfo(database_url, dbname="postgres")
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


class Scratch(NamedTuple):
    """A run's own database, stream prefix and log directory, and the environment of the
    processes it starts on them (this process's, without its ``PLAYTABLE_`` settings)."""

    database_url: str
    prefix: str
    env: dict[str, str]
    directory: Path


async def scratch(settings: Settings, kind: str, directory: Path | None = None) -> Scratch:
    """A fresh database and stream prefix named ``<kind>-<run id>``, on the configured
    servers; drop them with ``drop_database`` and ``forget_streams``."""
    run_id = uuid.uuid4().hex[:8]
    directory = (directory or Path(".stack") / f"{kind}-{run_id}").resolve()
    directory.mkdir(parents=True, exist_ok=True)
    database_url = await asyncio.to_thread(
        fresh_database, settings.database_url, f"playtable_{kind.replace('-', '_')}_{run_id}"
    )
    prefix = f"{kind}-{run_id}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYTABLE_")}
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=settings.redis_url,
        PLAYTABLE_HOST=LOOPBACK,
        PLAYTABLE_STREAM_PREFIX=prefix,
        PLAYTABLE_LOG_LEVEL=os.environ.get("PLAYTABLE_LOG_LEVEL", "warning"),
        PLAYTABLE_SECRET_KEYS=new_entry(kind.replace("-", "_")),  # the fresh database's own
        NO_PROXY="*",
    )
    return Scratch(database_url, prefix, env, directory)


async def forget_streams(redis_url: str, prefix: str) -> None:
    import redis.asyncio as redis_async

    client = redis_async.Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
