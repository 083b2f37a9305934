"""The fault-injection suite's own infrastructure: a PostgreSQL cluster and a redis-server that
only this suite uses (so killing, restarting or wiping them touches nothing else), and the
services started against them as processes, all on free loopback ports.

Every process started here is stopped at the end, on failure too: services per test, the
servers per session.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest
import redis as redis_sync
from psycopg import sql

from tests.conftest import new_app_key
from tools.scratch import LOOPBACK, free_port

SCALE = float(os.environ.get("PLAYTABLE_FAULT_SCALE", "1"))


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


THINK_S = env_float("PLAYTABLE_FAULT_THINK_S", 0.25)
"""How long each match of the suite's load waits after its move (``Load``): as many matches in
flight and moves in every fault, at a pace that leaves the test run's other workers their share
of the cores; 0 plays as fast as the stack answers (``playtable copies``' default)."""


def _wait_port_closed(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex((LOOPBACK, port)) != 0:
                return
        time.sleep(0.05)


# --- PostgreSQL ---------------------------------------------------------------------------


def postgres_bin_dir() -> Path | None:
    """The machine's newest PostgreSQL binaries, else those bundled with ``pgserver``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: (
            int(Path(path).parent.parent.name) if Path(path).parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return Path(found[-1]).parent
    try:
        import pgserver  # type: ignore[import-not-found]
    except ImportError:
        return None
    for candidate in Path(pgserver.__file__).parent.rglob("initdb"):
        if (candidate.parent / "pg_ctl").exists():
            return candidate.parent
    return None


class PostgresCluster:
    """A throwaway cluster: trust auth, loopback only, stopped and restarted at will."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.port = free_port()
        self.base = Path(tempfile.mkdtemp(prefix="playtable-faults-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "postgres.log"
        self.user: str | None = None
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            for name in ("postgres", "nobody"):
                with contextlib.suppress(KeyError):
                    entry = pwd.getpwnam(name)
                    self.user = name
                    os.chown(self.base, entry.pw_uid, entry.pw_gid)
                    break
            if self.user is None:
                raise RuntimeError("running as root and no 'postgres' or 'nobody' user")
        os.chmod(self.base, 0o700)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin_dir / args[0]), *args[1:]],
            user=self.user,
            check=check,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.base,
        )

    def init(self) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses={LOOPBACK} -k {self.data} -c fsync=off"
            " -c max_connections=200 -c shared_buffers=64MB"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop_immediate(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status", check=False).returncode == 0

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@{LOOPBACK}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def destroy(self) -> None:
        if self.data.exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
            pid_file = self.data / "postmaster.pid"
            if pid_file.exists():  # belt and braces: never leave a postmaster behind
                with contextlib.suppress(ValueError, ProcessLookupError, OSError):
                    os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "no PostgreSQL binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin nor from"
            " the pgserver package: the fault suite needs a cluster of its own"
        )
    cluster = PostgresCluster(bin_dir)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


# --- Redis --------------------------------------------------------------------------------


class RedisServer:
    """A redis-server of the suite's own, without persistence: a restart comes back empty."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found")
        self.binary = binary
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="playtable-faults-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                LOOPBACK,
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
                "--protected-mode",
                "yes",
                "--logfile",
                str(self.dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        client = redis_sync.Redis(host=LOOPBACK, port=self.port)
        deadline = time.monotonic() + 15
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis_sync.ConnectionError:
                    pass
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.02)
        finally:
            client.close()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        _wait_port_closed(self.port)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def client(self) -> redis_sync.Redis:
        return redis_sync.Redis(host=LOOPBACK, port=self.port, socket_timeout=10)

    def destroy(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server on PATH: the fault suite needs a Redis of its own")
    server = RedisServer()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


# --- the services -------------------------------------------------------------------------


@dataclass
class FaultStack:
    """The services as processes, each in its own process group, logging to files."""

    cluster: PostgresCluster
    redis: RedisServer
    database_url: str
    env: dict[str, str]
    log_dir: Path
    lobby_port: int
    match_ports: dict[str, int] = field(default_factory=dict)
    app_key: str = ""
    """The client app's key the load sends (made once the lobby has migrated the database)."""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return self.env["PLAYTABLE_STREAM_PREFIX"]

    @property
    def lobby_url(self) -> str:
        return f"http://{LOOPBACK}:{self.lobby_port}"

    def match_url(self, name: str = "match") -> str:
        return f"http://{LOOPBACK}:{self.match_ports[name]}"

    @property
    def match_urls(self) -> list[str]:
        return [self.match_url(name) for name in self.match_ports]

    def start(
        self, name: str, code: Path | None = None, settings: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start (or restart) ``name``: rules*, match*, clocks*, bots*, webhooks* or lobby*;
        with ``code``, another checkout's (an earlier release's: its root is the process's
        working directory and ``PYTHONPATH``), and ``settings`` beside the stack's."""
        service = "match" if name.startswith("match") else name.rstrip("0123456789-")
        env = dict(self.env)
        if service == "match":
            env["PLAYTABLE_MATCH_PORT"] = str(self.match_ports[name])
        if code is not None:
            env["PYTHONPATH"] = str(code)
        env.update(settings or {})
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "services.operator.cli", service],
                env=env,
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=code,
            )
        finally:
            log.close()
        self.processes[name] = process
        return process

    def wait_healthy(self, name: str, timeout: float = 60.0) -> None:
        if name != "lobby" and not name.startswith("match"):
            return  # no HTTP to ask (rules, clocks, bots)
        url = self.lobby_url if name == "lobby" else self.match_url(name)
        process = self.processes[name]
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2, trust_env=False) as client:
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited: {self.log_tail(name)}")
                with contextlib.suppress(httpx.TransportError):
                    if client.get(f"{url}/health").status_code == 200:
                        return
                time.sleep(0.05)
        raise RuntimeError(f"{name} did not become healthy: {self.log_tail(name)}")

    def signal(self, name: str, sig: int) -> None:
        os.killpg(self.processes[name].pid, sig)

    def kill(self, name: str) -> None:
        """SIGKILL to the service's process group, then reap it."""
        process = self.processes[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def log_tail(self, name: str, size: int = 3000) -> str:
        path = self.log_dir / f"{name}.log"
        return path.read_text(errors="replace")[-size:] if path.exists() else ""

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGCONT)
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            # children left in the group (none expected): gone too
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    def verify(self) -> subprocess.CompletedProcess[str]:
        """``playtable verify`` against the suite's database."""
        return subprocess.run(
            [sys.executable, "-m", "services.operator.cli", "verify"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )


@pytest.fixture
def make_stack(
    pg_cluster: PostgresCluster, redis_server: RedisServer, tmp_path: Path
) -> Iterator[object]:
    """``make_stack(match_processes=1, code=None)``: a fresh database and stream prefix, one
    rules worker, the match process(es) and the lobby (of the checkout ``code``, as
    ``FaultStack.start`` says, which migrates the database with its own migrations);
    everything stopped after the test, and the suite's Postgres and Redis running again for
    the next one."""
    stacks: list[FaultStack] = []

    def make(match_processes: int = 1, code: Path | None = None) -> FaultStack:
        name = f"faults_{uuid.uuid4().hex[:10]}"
        database_url = pg_cluster.create_database(name)
        lobby_port = free_port()
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("PLAYTABLE_") and key not in (
                "PLAYTABLE_RULES_TIMEOUT_S",
                "PLAYTABLE_SECRET_KEYS",  # the session's keyring (tests/conftest.py)
            ):
                env.pop(key)
        env.update(
            DATABASE_URL=database_url,
            REDIS_URL=redis_server.url,
            PLAYTABLE_HOST=LOOPBACK,
            PLAYTABLE_LOBBY_PORT=str(lobby_port),
            PLAYTABLE_MATCH_PORT=str(free_port()),
            PLAYTABLE_HTTP_WORKERS="1",
            PLAYTABLE_STREAM_PREFIX=f"faults-{uuid.uuid4().hex[:8]}",
            PLAYTABLE_LOG_LEVEL=os.environ.get("PLAYTABLE_FAULT_LOG_LEVEL", "warning"),
            NO_PROXY="*",
        )
        log_dir = tmp_path / f"logs-{len(stacks)}"
        log_dir.mkdir()
        stack = FaultStack(pg_cluster, redis_server, database_url, env, log_dir, lobby_port)
        stacks.append(stack)
        for index in range(match_processes):
            stack.match_ports["match" if index == 0 else f"match-{index + 1}"] = free_port()
        names = ["rules", *stack.match_ports, "lobby"]
        for service in names:
            stack.start(service, code)
        for service in names:
            stack.wait_healthy(service)
        stack.app_key = new_app_key(database_url, "faults")
        return stack

    try:
        yield make
    finally:
        for stack in stacks:
            stack.stop_all()
        if not redis_server.running():
            redis_server.kill()
            redis_server.start()
        if not pg_cluster.running():
            pg_cluster.start()
