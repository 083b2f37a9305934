"""Run the whole stack on one machine: each service its own process, stopped together."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from services.operator.gateway import local_peer, runtime_dir, start_gateway, write_web_config
from services.operator.keys import development_keys
from shared.infra.secretbox import new_entry
from shared.infra.settings import Settings

LOCAL_WEBHOOK_NETWORKS = "127.0.0.0/8,::1/128"
"""Where the local stack's webhooks may go unless the environment says otherwise: a stack on
a developer's machine delivers to receivers on it (the API tour's); a hosted deployment sets
``PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS`` itself, and without it refuses every private address."""

SECRET_KEY_LINE = "development secret key (the README tour, your server): X-API-Key: "
PUBLISHABLE_KEY_LINE = "development publishable key (the web client's): X-API-Key: "
"""How ``playtable stack`` prints the development app's keys, a new pair each start."""


def spawn(service: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "services.operator.cli", service], env=env)


def stack_keyring(env: dict[str, str]) -> str:
    """The keyring every process of the stack shares: the environment's, else the one this
    user's stacks keep in a file of their own (made on first use, readable only by them), so
    that a stack started again opens what it sealed before."""
    if env.get("PLAYTABLE_SECRET_KEYS"):
        return env["PLAYTABLE_SECRET_KEYS"]
    state = Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    kept = state / "playtable" / "secret_keys"
    if not kept.exists():
        kept.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(new_entry("stack"))
        print(f"made a keyring for the stack's secrets at rest: {kept}", flush=True)
    return kept.read_text().strip()


def copy_ports(host: str, first: int, copies: int) -> list[int]:
    """The configured port for the first copy; free ones for the others, which only the
    gateway reaches."""
    ports = [first]
    for _ in range(copies - 1):
        with socket.socket() as sock:
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
    return ports


HEALTHY_WITHIN_S = 180.0
"""How long a service may take to answer on its start: a first start on a fresh machine
creates the database and compiles every module, which took the lobby over 30 s."""


def wait_healthy(
    url: str, process: subprocess.Popen[bytes] | None = None, timeout_s: float = HEALTHY_WITHIN_S
) -> bool:
    """Until ``url`` answers 200: False once ``process`` (the one serving it) has exited, or
    after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            if process is not None and process.poll() is not None:
                return False
            time.sleep(0.2)
    return False


def run_stack(
    settings: Settings,
    *,
    rules_workers: int = 1,
    match_copies: int = 1,
    lobby_copies: int = 1,
    bots: int = 1,
) -> int:
    env = dict(os.environ)
    env.pop("PLAYTABLE_INSTANCE_ID", None)  # every process names itself
    env["PLAYTABLE_SECRET_KEYS"] = stack_keyring(env)
    # the services trust their own gateway's X-Forwarded-For (besides any proxy named)
    trusted = [settings.trusted_proxies, local_peer(settings.host) or ""]
    env["PLAYTABLE_TRUSTED_PROXIES"] = ",".join(item for item in trusted if item)
    if not env.get("PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS"):
        env["PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS"] = LOCAL_WEBHOOK_NETWORKS
        print(f"webhooks may reach this machine ({LOCAL_WEBHOOK_NETWORKS})", flush=True)
    upstreams = {
        "lobby": copy_ports(settings.host, settings.lobby_port, lobby_copies),
        "match": copy_ports(settings.host, settings.match_port, match_copies),
    }
    # With PLAYTABLE_METRICS_PORT, the processes without HTTP serve /metrics on it and the
    # ports after it: the rules workers, the webhooks process, the clocks process, then the
    # bots processes.
    metrics_ports = [
        settings.metrics_port + n if settings.metrics_port else 0
        for n in range(rules_workers + 2 + bots)
    ]
    processes = [
        spawn("rules", {**env, "PLAYTABLE_METRICS_PORT": str(port)})
        for port in metrics_ports[:rules_workers]
    ]
    serving: dict[int, subprocess.Popen[bytes]] = {}
    """Each HTTP port's process."""
    for service, ports in upstreams.items():
        port_variable = f"PLAYTABLE_{service.upper()}_PORT"
        for port in ports:
            serving[port] = spawn(service, {**env, port_variable: str(port)})
    serving[settings.webhooks_port] = spawn("webhooks-api", env)
    webhooks_env = {**env, "PLAYTABLE_METRICS_PORT": str(metrics_ports[rules_workers])}
    processes += [*serving.values(), spawn("webhooks", webhooks_env)]
    clocks_env = {**env, "PLAYTABLE_METRICS_PORT": str(metrics_ports[rules_workers + 1])}
    processes.append(spawn("clocks", clocks_env))
    processes += [
        spawn("bots", {**env, "PLAYTABLE_METRICS_PORT": str(port)})
        for port in metrics_ports[rules_workers + 2 :]
    ]
    base = f"http://{settings.host}"
    for port, process in serving.items():
        if not wait_healthy(f"{base}:{port}/health", process):
            ended = process.poll()
            why = f"exited ({ended})" if ended is not None else "did not answer"
            print(f"the service on port {port} {why}; stopping the stack", file=sys.stderr)
            stop_all(processes)
            return 1
    routed = {**upstreams, "webhooks": [settings.webhooks_port]}
    gateway = start_gateway(
        settings.host, settings.gateway_port, routed, runtime_dir(settings.gateway_port)
    )
    if gateway is None:
        public = (
            f"lobby {base}:{settings.lobby_port}, match {base}:{settings.match_port},"
            f" webhooks {base}:{settings.webhooks_port}"
        )
    else:
        processes.append(gateway)
        gateway_url = f"{base}:{settings.gateway_port}"
        if not wait_healthy(f"{gateway_url}/openapi.json", gateway):
            print(f"the gateway on {gateway_url} did not answer", file=sys.stderr)
        public = f"{gateway_url} (the web client at /; /games, /tables, /matches, /webhooks, /docs)"
    secret_key, publishable_key = asyncio.run(development_keys(settings))
    if gateway is not None:  # a browser's key: anyone who reaches the gateway gets it
        write_web_config(runtime_dir(settings.gateway_port), publishable_key)
    print(
        f"playtable is up: {public}; Ctrl-C stops it\n"
        f"{SECRET_KEY_LINE}{secret_key}\n{PUBLISHABLE_KEY_LINE}{publishable_key}",
        flush=True,
    )
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while not stopping and all(process.poll() is None for process in processes):
            time.sleep(0.5)
    finally:
        stop_all(processes)
    return 0 if stopping else 1


def stop_all(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
